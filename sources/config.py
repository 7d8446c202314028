"""Build a source from configuration (``policy_indexer.settings`` hands the values in).

``SourceConfig`` is the edge: it checks that the kind has what it needs (a URL
for ``cms``, a path for ``folder`` and ``changelog``, both for ``git``: the
remote and the mirror) and names the missing key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from sources.base import Source
from sources.changelog import ChangeLogSource
from sources.cms import CmsApiSource, parse_header
from sources.folder import DEFAULT_MAX_FILE_BYTES, MarkdownFolderSource
from sources.git import GitSource
from sources.hidden import parse_hidden_allow
from sources.label_defaults import parse_label_defaults
from sources.limits import MAX_PAGE_SIZE, PAGE_SIZE, TIMEOUT_SECONDS

SourceKind = Literal["cms", "folder", "changelog", "git"]


class SourceConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SourceKind
    url: str | None = Field(None, description="cms: base URL of the CMS API.")
    auth_header: SecretStr | None = Field(
        None, description="cms: one header sent with every request, 'Name: value'."
    )
    path: Path | None = Field(
        None, description="folder: root folder; changelog: the log file; git: the local mirror."
    )
    git_branch: str = Field("main", min_length=1, description="git: the library's branch.")
    git_path_prefix: str = Field("", description="git: the library's folder in the repository.")
    page_size: int = Field(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)
    timeout_seconds: float = Field(TIMEOUT_SECONDS, gt=0)
    max_file_bytes: int = Field(
        DEFAULT_MAX_FILE_BYTES, ge=1, description="folder: larger files are listed unreadable."
    )
    hidden_allow: str = Field(
        "", description="folder: hidden names (comma-separated, e.g. '.well-known') read anyway."
    )
    allow_hard_links: bool = Field(
        False, description="folder: read files with more than one hard link."
    )
    default_access_labels: str = Field(
        "", description="folder, git: labels for files that set none, "
        "'<glob>=<label>,...; ...' (sources.label_defaults)."
    )

    @model_validator(mode="after")
    def _has_what_the_kind_needs(self) -> Self:
        if self.kind == "cms" and not self.url:
            raise ValueError("source kind 'cms' needs source_url")
        if self.kind in ("folder", "changelog", "git") and self.path is None:
            raise ValueError(f"source kind {self.kind!r} needs source_path")
        if self.kind == "git" and not self.url:
            raise ValueError("source kind 'git' needs source_url (the remote to fetch)")
        if self.auth_header is not None:
            parse_header(self.auth_header.get_secret_value())
        parse_hidden_allow(self.hidden_allow)
        parse_label_defaults(self.default_access_labels)
        return self


def open_source(config: SourceConfig) -> Source:
    if config.kind == "cms":
        headers = (
            parse_header(config.auth_header.get_secret_value()) if config.auth_header else {}
        )
        return CmsApiSource(
            str(config.url),
            headers=headers,
            page_size=config.page_size,
            timeout_seconds=config.timeout_seconds,
        )
    if config.path is None:  # for mypy; the validator already refused this
        raise ValueError(f"source kind {config.kind!r} needs source_path")
    if config.kind == "folder":
        return MarkdownFolderSource(config.path, max_file_bytes=config.max_file_bytes,
                                    hidden_allow=config.hidden_allow,
                                    allow_hard_links=config.allow_hard_links,
                                    default_access_labels=config.default_access_labels)
    if config.kind == "git":
        return GitSource(str(config.url), config.path, branch=config.git_branch,
                         path_prefix=config.git_path_prefix, timeout_seconds=config.timeout_seconds,
                         hidden_allow=config.hidden_allow,
                         default_access_labels=config.default_access_labels)
    return ChangeLogSource(config.path)
