"""The CMS adapters from settings: on when their secrets are set, routes listed, and a bad
setting named in the error."""

from __future__ import annotations

from typing import Any

import pytest

from policy_indexer.runtime.webhook import (
    WebhookNotConfigured,
    webhook_adapters,
    webhook_enabled,
    webhook_routes,
)
from policy_indexer.settings import Settings

CONTENTFUL = "s" * 64


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


def test_each_cms_adapter_is_on_when_its_secrets_are_set() -> None:
    configured = settings(webhook_contentful_secrets=[CONTENTFUL],
                          webhook_sanity_secrets=["sanity-secret-0000000001"],
                          webhook_strapi_tokens=["strapi-token-00000000001"],
                          webhook_strapi_api_url="http://127.0.0.1:1337",
                          webhook_strapi_api_paths={"policy": "/api/policies"},
                          webhook_sanity_fields={"body": "content"})
    assert webhook_enabled(configured)
    assert [a.name for a in webhook_adapters(configured)] == ["contentful", "sanity", "strapi"]
    assert webhook_routes(configured) == ["/webhooks/contentful", "/webhooks/sanity",
                                          "/webhooks/strapi"]
    assert not webhook_enabled(settings())


@pytest.mark.parametrize(("values", "named"), [
    ({"webhook_contentful_secrets": ["short"]}, "contentful signing secret #1 is 5"),
    ({"webhook_sanity_secrets": ["short"]}, "sanity webhook secret #1"),
    ({"webhook_strapi_tokens": ["strapi-token-00000000001"],
      "webhook_strapi_fields": {"summary": "x"}},
     "POLICY_INDEXER_WEBHOOK_STRAPI_FIELDS: unknown field(s) ['summary']"),
    ({"webhook_sanity_secrets": ["sanity-secret-0000000001"],
      "webhook_sanity_api_url": "ftp://example.com"}, "'ftp://example.com' is not http"),
    ({"webhook_strapi_tokens": ["strapi-token-00000000001"],
      "webhook_strapi_api_paths": {"policy": "api/policies"}}, "must start with '/'"),
])
def test_a_bad_cms_setting_is_named(values: dict[str, Any], named: str) -> None:
    with pytest.raises(WebhookNotConfigured) as caught:
        webhook_adapters(settings(**values))
    assert named in str(caught.value)
