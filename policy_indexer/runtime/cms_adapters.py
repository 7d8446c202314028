"""The Contentful, Sanity and Strapi adapters built from settings.

Each is on when its secrets are set. Their read-API clients live as long as
the receiver (one httpx connection pool each, closed with the process).
"""

from __future__ import annotations

from pydantic import SecretStr

from policy_indexer.settings import Settings
from webhooks.adapters.base import Adapter
from webhooks.adapters.cms_common import DeliveryApi, FieldMapping
from webhooks.adapters.contentful import ContentfulAdapter
from webhooks.adapters.sanity import SanityAdapter
from webhooks.adapters.strapi import StrapiAdapter

CMS_SECRET_SETTINGS = {"webhook_contentful_secrets": "contentful",
                       "webhook_sanity_secrets": "sanity", "webhook_strapi_tokens": "strapi"}


def cms_adapters_enabled(settings: Settings) -> bool:
    return any(getattr(settings, key) for key in CMS_SECRET_SETTINGS)


def cms_routes(settings: Settings) -> list[str]:
    return [f"/webhooks/{name}" for key, name in CMS_SECRET_SETTINGS.items()
            if getattr(settings, key)]


def cms_adapters(settings: Settings) -> list[Adapter]:
    """The configured CMS adapters; a ValueError names the setting that is wrong."""
    adapters: list[Adapter] = []
    tolerance = settings.webhook_timestamp_tolerance_seconds
    if settings.webhook_contentful_secrets:
        adapters.append(ContentfulAdapter(
            _plain(settings.webhook_contentful_secrets),
            signed_path=settings.webhook_contentful_signed_path,
            mapping=FieldMapping.from_settings("POLICY_INDEXER_WEBHOOK_CONTENTFUL_FIELDS",
                                               settings.webhook_contentful_fields),
            locale=settings.webhook_contentful_locale,
            content_types=settings.webhook_contentful_content_types,
            api=_api(settings, "contentful", settings.webhook_contentful_api_url,
                     settings.webhook_contentful_api_token),
            tolerance_seconds=tolerance))
    if settings.webhook_sanity_secrets:
        adapters.append(SanityAdapter(
            _plain(settings.webhook_sanity_secrets),
            mapping=FieldMapping.from_settings("POLICY_INDEXER_WEBHOOK_SANITY_FIELDS",
                                               settings.webhook_sanity_fields),
            api=_api(settings, "sanity", settings.webhook_sanity_api_url,
                     settings.webhook_sanity_api_token),
            dataset=settings.webhook_sanity_dataset, tolerance_seconds=tolerance))
    if settings.webhook_strapi_tokens:
        adapters.append(StrapiAdapter(
            [t.encode("utf-8") for t in _plain(settings.webhook_strapi_tokens)],
            mapping=FieldMapping.from_settings("POLICY_INDEXER_WEBHOOK_STRAPI_FIELDS",
                                               settings.webhook_strapi_fields),
            api=_api(settings, "strapi", settings.webhook_strapi_api_url,
                     settings.webhook_strapi_api_token),
            api_paths=settings.webhook_strapi_api_paths))
    return adapters


def _plain(secrets: list[SecretStr]) -> list[str]:
    return [s.get_secret_value() for s in secrets]


def _api(settings: Settings, cms: str, url: str | None,
         token: SecretStr | None) -> DeliveryApi | None:
    if url is None:
        return None
    return DeliveryApi(cms, url, token=token.get_secret_value() if token else None,
                       timeout_seconds=settings.webhook_cms_api_timeout_seconds)
