"""The configured source, built from settings (the monitor, status and the reindex share it)."""

from __future__ import annotations

from pathlib import Path

from policy_indexer.runtime.parts import ThreadPart
from policy_indexer.settings import Settings
from sources.base import Source
from sources.config import SourceConfig, open_source
from sources.git import GitPoller, GitSource
from transport.publisher import EventPublisher


class SourceNotConfiguredError(ValueError):
    """No source is configured (POLICY_INDEXER_SOURCE_KIND is unset)."""


def source_config(settings: Settings) -> SourceConfig:
    if settings.source_kind is None:
        raise SourceNotConfiguredError(
            "no source configured: set POLICY_INDEXER_SOURCE_KIND to cms, folder, changelog or git"
        )
    return SourceConfig(
        kind=settings.source_kind,
        url=settings.source_url,
        auth_header=settings.source_auth_header,
        path=Path(settings.source_path) if settings.source_path else None,
        page_size=settings.source_page_size,
        max_file_bytes=settings.folder_max_file_bytes,
        hidden_allow=settings.folder_hidden_allow,
        allow_hard_links=settings.folder_allow_hard_links,
        default_access_labels=settings.source_default_access_labels,
        timeout_seconds=(settings.git_timeout_seconds if settings.source_kind == "git"
                         else settings.source_timeout_seconds),
        git_branch=settings.git_branch,
        git_path_prefix=settings.git_path_prefix,
    )


def open_configured_source(settings: Settings) -> Source:
    return open_source(source_config(settings))


def open_git_source(settings: Settings) -> GitSource | None:
    """The Git source when ``source_kind`` is ``git`` (push webhooks and the poller), else None."""
    if settings.source_kind != "git":
        return None
    source = open_source(source_config(settings))
    if not isinstance(source, GitSource):  # open_source builds one for kind "git"
        raise TypeError(f"source kind 'git' built a {type(source).__name__}")
    return source


def git_poller_part(settings: Settings, publisher: EventPublisher) -> ThreadPart | None:
    """The Git polling mode as a part, when ``git_poll_interval_seconds`` is set (else None)."""
    if settings.git_poll_interval_seconds is None:
        return None
    source = open_git_source(settings)
    if source is None:
        raise ValueError("POLICY_INDEXER_GIT_POLL_INTERVAL_SECONDS needs "
                         "POLICY_INDEXER_SOURCE_KIND=git")
    poller = GitPoller(source, publisher, settings.git_poll_interval_seconds)
    return ThreadPart("git poller", poller.run, poller.request_stop, after_stop=source.close)
