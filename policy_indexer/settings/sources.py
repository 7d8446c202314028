"""The source: where the library lives, and the folder source's hardening.

A bad file is that file's problem only: the folder listing (watcher, monitor,
status, reconcile) names it unreadable and goes on; hidden names and hard
links: see docs/folder-watch.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr, field_validator

from sources.hidden import parse_hidden_allow
from sources.label_defaults import parse_label_defaults
from sources.limits import MAX_FILE_BYTES, MAX_PAGE_SIZE, PAGE_SIZE, TIMEOUT_SECONDS


class SourceSettings(BaseModel):
    """The sources section of ``Settings``."""

    source_kind: Literal["cms", "folder", "changelog", "git"] | None = Field(
        None, description="Where the library lives: 'cms' (HTTP JSON API), 'folder', 'changelog', "
        "'git' (source_url: the remote; source_path: the local mirror)."
    )
    source_url: str | None = Field(None, description="cms: base URL of the CMS API.")
    source_auth_header: SecretStr | None = Field(
        None, description="cms: one header for every request, 'Authorization: Bearer ...'."
    )
    source_path: str | None = Field(None, description="folder: root; changelog: the log file.")
    source_page_size: int = Field(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)
    source_timeout_seconds: float = Field(TIMEOUT_SECONDS, gt=0)
    source_default_access_labels: str = Field(
        "", description="folder and git sources: access_labels for a file whose front matter "
        "(or <meta>) sets none, by glob of its path in the library, first match wins: "
        "'hr/**=staff,hr; internal/**=staff; **=public'. Empty: no default. A front matter "
        "with an empty or misspelt access_labels key is still refused.",
    )
    folder_max_file_bytes: int = Field(
        MAX_FILE_BYTES, ge=1024, le=1024 * 1024 * 1024,
        description="A folder file above this size is listed as unreadable (too_large) and "
        "never read: a policy document is some kB, a bigger file is a mistake (an export).",
    )
    folder_hidden_allow: str = Field(
        "", description="Hidden names (starting with '.') that are part of the library anyway, "
        "comma-separated (e.g. '.well-known'). Any other hidden folder or file, listed or "
        "reached through a symbolic link (.git/config, .env), is never read.",
    )
    folder_allow_hard_links: bool = Field(
        False, description="Read folder files that have more than one hard link. Off: such a "
        "file is listed unreadable (hard_link), since its other name may be outside the library.",
    )

    @field_validator("folder_hidden_allow")
    @classmethod
    def _hidden_names(cls, value: str) -> str:
        parse_hidden_allow(value)  # each one name starting with '.'
        return value

    @field_validator("source_default_access_labels")
    @classmethod
    def _label_defaults(cls, value: str) -> str:
        parse_label_defaults(value)  # each rule '<glob>=<labels>', the labels checked
        return value
