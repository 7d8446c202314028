"""The configured source, built from settings (the monitor, status and the reindex share it)."""

from __future__ import annotations

from pathlib import Path

from policy_indexer.settings import Settings
from sources.base import Source
from sources.config import SourceConfig, open_source


class SourceNotConfiguredError(ValueError):
    """No source is configured (POLICY_INDEXER_SOURCE_KIND is unset)."""


def source_config(settings: Settings) -> SourceConfig:
    if settings.source_kind is None:
        raise SourceNotConfiguredError(
            "no source configured: set POLICY_INDEXER_SOURCE_KIND to cms, folder or changelog"
        )
    return SourceConfig(
        kind=settings.source_kind,
        url=settings.source_url,
        auth_header=settings.source_auth_header,
        path=Path(settings.source_path) if settings.source_path else None,
        page_size=settings.source_page_size,
        timeout_seconds=settings.source_timeout_seconds,
    )


def open_configured_source(settings: Settings) -> Source:
    return open_source(source_config(settings))
