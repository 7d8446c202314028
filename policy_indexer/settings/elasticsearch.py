"""Elasticsearch: the nodes, the credentials, the indices and the bulk writes.

One node (``elasticsearch_url``) or several (``elasticsearch_urls``), basic auth
or an API key as secrets (never inside a URL), a CA file or the CA's
fingerprint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Self
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, SecretStr, model_validator

from policy_indexer.settings.secret_files import mask_url
from store.limits import BULK_MAX_ACTIONS, BULK_MAX_BYTES


class ElasticsearchSettings(BaseModel):
    """The elasticsearch section of ``Settings``."""

    elasticsearch_url: str = Field(
        "http://127.0.0.1:9200", description="One node; elasticsearch_urls, when set, wins."
    )
    elasticsearch_urls: str | None = Field(
        None, description="Comma-separated node URLs (https://es-1:9200,https://es-2:9200); "
        "wins over elasticsearch_url."
    )
    elasticsearch_username: str | None = None
    elasticsearch_password: SecretStr | None = None
    elasticsearch_password_file: Path | None = Field(
        None, description="The password in a file (a mounted secret)."
    )
    elasticsearch_api_key: SecretStr | None = None
    elasticsearch_api_key_file: Path | None = Field(
        None, description="The API key (the encoded form) in a file (a mounted secret)."
    )
    elasticsearch_ca_file: Path | None = Field(
        None, description="PEM CA bundle the nodes' certificates are checked against."
    )
    elasticsearch_ca_fingerprint: str | None = Field(
        None, pattern=r"^([0-9A-Fa-f]{2}:?){31}[0-9A-Fa-f]{2}$",
        description="SHA-256 fingerprint of the cluster's CA (what Elasticsearch prints at "
        "first start), instead of a CA file.",
    )
    elasticsearch_verify_certs: bool = Field(
        True, description="Check the nodes' certificates; off only for a throwaway cluster."
    )
    elasticsearch_timeout_seconds: float = Field(10.0, gt=0)
    index_prefix: str = Field(
        "policy", pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Prefix of every index and alias."
    )
    index_shards: int = Field(1, ge=1, le=1024, description="Primary shards of a new index.")
    index_replicas: int = Field(
        0, ge=0, le=32, description="Replicas of a new index: 0 suits one node; 1 or more on a "
        "cluster."
    )
    bulk_max_actions: int = Field(BULK_MAX_ACTIONS, ge=1)
    bulk_max_bytes: int = Field(BULK_MAX_BYTES, ge=1024)

    @model_validator(mode="after")
    def _elasticsearch_rules(self) -> Self:
        if self.elasticsearch_api_key and (self.elasticsearch_username
                                           or self.elasticsearch_password):
            raise ValueError("set elasticsearch_api_key or elasticsearch_username/password, "
                             "not both")
        if (self.elasticsearch_username is None) != (self.elasticsearch_password is None):
            raise ValueError("elasticsearch_username and elasticsearch_password go together")
        if self.elasticsearch_ca_file and self.elasticsearch_ca_fingerprint:
            raise ValueError("set elasticsearch_ca_file or elasticsearch_ca_fingerprint, "
                             "not both")
        for url in self.elasticsearch_nodes():
            parsed = urlsplit(url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise ValueError(f"elasticsearch node {mask_url(url)!r} is not an "
                                 "http(s)://host[:port] URL")
        return self

    def elasticsearch_nodes(self) -> list[str]:
        """The node URLs: ``elasticsearch_urls`` split, else ``elasticsearch_url``."""
        if self.elasticsearch_urls:
            return [u.strip() for u in self.elasticsearch_urls.split(",") if u.strip()]
        return [self.elasticsearch_url]
