"""The CMS adapters of the webhook receiver: ``POST /webhooks/<adapter>``.

Each adapter is on when its secrets are set: one secret, or two while
rotating, as a JSON list (16+ bytes each). GitHub and GitLab pushes of a git
library (``git_*``); Contentful, Sanity and Strapi: ``*_fields`` maps our
fields (title, body, scope, valid_from, valid_to, access_labels) to the CMS's
(dotted paths), ``*_api_url``/``*_api_token`` is the read API used when a
payload lacks them. ``runtime.webhook.adapter_section`` hands an adapter its
``webhook_<name>_*`` settings.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr


class AdapterSettings(BaseModel):
    """The adapters section of ``Settings``."""

    webhook_github_secrets: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="GitHub push: the webhook's secret(s) (X-Hub-Signature-256).",
    )
    webhook_gitlab_tokens: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="GitLab push: the webhook's secret token(s) (X-Gitlab-Token).",
    )
    webhook_standard_secrets: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="Standard Webhooks: whsec_<base64> secret(s) of the relay that sends our "
        "payload (webhook-signature); the tolerance is webhook_timestamp_tolerance_seconds.",
    )
    git_repository: str | None = Field(
        None, description="The repository pushes are accepted for: GitHub 'owner/name', GitLab "
        "'group/project' (with source_kind 'git').",
    )
    git_branch: str = Field("main", min_length=1, description="The branch that is the library.")
    git_path_prefix: str = Field(
        "", description="The library's folder inside the repository ('' for the root)."
    )
    git_poll_interval_seconds: float | None = Field(
        None, gt=0, description="Polling mode: the embedded run fetches the branch this often "
        "and publishes its changes, no webhook needed (None: off).",
    )
    git_timeout_seconds: float = Field(120.0, gt=0, description="A git fetch gives up after this.")
    webhook_contentful_secrets: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="Contentful: the space's request-verification signing secret(s), 64 chars.",
    )
    webhook_contentful_signed_path: str = Field(
        "/webhooks/contentful", pattern=r"^/", description="Contentful: the path of the webhook "
        "URL configured in Contentful (what it signs; differs from ours behind a proxy).",
    )
    webhook_contentful_locale: str = Field("en-US", min_length=1)
    webhook_contentful_content_types: list[str] = Field(
        default_factory=list, description="Contentful: the content types that are the library "
        "(empty: every entry).",
    )
    webhook_contentful_fields: dict[str, str] = Field(default_factory=dict)
    webhook_contentful_api_url: str | None = Field(
        None, description="Contentful Delivery API, e.g. https://cdn.contentful.com.")
    webhook_contentful_api_token: SecretStr | None = None
    webhook_sanity_secrets: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="Sanity: the GROQ webhook's secret(s) (sanity-webhook-signature).",
    )
    webhook_sanity_fields: dict[str, str] = Field(default_factory=dict)
    webhook_sanity_api_url: str | None = Field(
        None, description="Sanity API, e.g. https://<project>.api.sanity.io.")
    webhook_sanity_api_token: SecretStr | None = None
    webhook_sanity_dataset: str | None = Field(
        None, description="Sanity dataset to read from (default: the sanity-dataset header).")
    webhook_strapi_tokens: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="Strapi: the token(s) its webhook sends as 'Authorization: Bearer <token>'.",
    )
    webhook_strapi_fields: dict[str, str] = Field(default_factory=dict)
    webhook_strapi_api_url: str | None = Field(
        None, description="Strapi REST API base, e.g. https://cms.example.com.")
    webhook_strapi_api_token: SecretStr | None = None
    webhook_strapi_api_paths: dict[str, str] = Field(
        default_factory=dict, description="Strapi: model -> REST path ({'policy': "
        "'/api/policies'}); when set, only these models are the library.",
    )
    webhook_cms_api_timeout_seconds: float = Field(
        10.0, gt=0, description="A read of the Contentful, Sanity or Strapi API gives up after "
        "this.")
