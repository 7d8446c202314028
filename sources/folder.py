"""A folder of Markdown files (the Git checkout most policy teams keep) as a source.

Each ``*.md`` file (and each ``*.html``/``*.htm`` file, as ``text/html``) below
the root is one document; names starting with ``.`` are skipped (editor swap
files, ``.git``). Its id follows the corpus rule: the path relative to the
root, with ``/`` separators, without the extension and without a trailing
``/index`` (``refund/index.md`` is ``refund``).

Version and change time come from the YAML front matter when it has them
(``version: 7``, ``changed_at: 2024-05-01T10:00:00Z``; keys configurable;
Markdown only; an HTML file's ``<meta>`` tags give its labels, scope,
keywords and dates, see ``sources.html_meta``), otherwise from the file's
modification time: the version is then the modification time in whole
seconds since the epoch, which grows whenever the file is rewritten. Pick one
rule per library and keep it: the index compares these versions with those of
the change events.

A deleted file is simply not listed (a folder keeps no tombstones).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import yaml

from events.model import ContentType, EventMetadata
from sources.base import SourceDocument, SourceEntry, parse_changed_at, parse_version
from sources.errors import DocumentNotFoundError, SourceDataError, SourceUnavailableError
from sources.html_meta import html_metadata

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# File name endings of documents, and the content type each one is sent as.
CONTENT_TYPES: dict[str, ContentType] = {
    ".md": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
}


def is_document_name(file_name: str) -> bool:
    """True for ``refund.md``; False for ``.refund.md.swp``, ``refund.md~``, ``notes.txt``."""
    return not file_name.startswith(".") and _suffix(file_name) is not None


def _suffix(name: str) -> str | None:
    return next((s for s in CONTENT_TYPES if name.endswith(s)), None)


def content_type_for(relative: str) -> ContentType:
    suffix = _suffix(relative)
    return CONTENT_TYPES[suffix] if suffix is not None else "text/markdown"


def document_id_for(relative: str) -> str:
    """``refund/index.md`` -> ``refund``; ``terms/privacy.md`` -> ``terms/privacy``."""
    suffix = _suffix(relative)
    stem = relative[: -len(suffix)] if suffix is not None else relative
    if stem == "index":
        return stem
    return stem.removesuffix("/index")


class MarkdownFolderSource:
    def __init__(
        self,
        root: str | Path,
        *,
        version_key: str = "version",
        changed_at_key: str = "changed_at",
    ) -> None:
        self.root = Path(root)
        self.version_key = version_key
        self.changed_at_key = changed_at_key

    @property
    def name(self) -> str:
        return "folder"

    def files(self) -> Iterator[tuple[str, Path]]:
        """(relative path with ``/``, path) of every document file, sorted per folder."""
        if not self.root.is_dir():
            raise SourceUnavailableError(f"source folder {self.root} is not a readable folder")
        def fail(exc: OSError) -> None:
            raise SourceUnavailableError(f"cannot list {self.root}: {exc}") from exc

        for folder, dirs, files in os.walk(self.root, onerror=fail):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for file_name in sorted(files):
                if is_document_name(file_name):
                    path = Path(folder) / file_name
                    yield path.relative_to(self.root).as_posix(), path

    def _front_matter(self, text: str, where: str) -> dict[str, object]:
        match = _FRONT_MATTER.match(text)
        if match is None:
            return {}
        try:
            data = yaml.load(match.group(1), Loader=_LOADER)  # noqa: S506 (safe loader)
        except yaml.YAMLError as exc:
            raise SourceDataError(f"{where}: front matter is not valid YAML: {exc}") from exc
        return data if isinstance(data, dict) else {}

    def _entry(self, relative: str, path: Path, text: str | None = None) -> SourceEntry:
        where = str(path)
        try:
            if text is None:
                text = path.read_text(encoding="utf-8")
            mtime = path.stat().st_mtime
        except UnicodeDecodeError as exc:
            raise SourceDataError(f"{where}: not UTF-8 text: {exc}") from exc
        except OSError as exc:
            raise SourceUnavailableError(f"cannot read {where}: {exc}") from exc
        meta = self._front_matter(text, where) if relative.endswith(".md") else {}
        raw_version = meta.get(self.version_key)
        version = int(mtime) if raw_version is None else parse_version(raw_version, where)
        raw_changed = meta.get(self.changed_at_key)
        changed_at = (
            datetime.fromtimestamp(mtime, UTC)
            if raw_changed is None
            else parse_changed_at(raw_changed, where)
        )
        return SourceEntry(document_id_for(relative), version, changed_at)

    def list_documents(self) -> Iterator[SourceEntry]:
        seen: dict[str, str] = {}
        for relative, path in self.files():
            entry = self._entry(relative, path)
            if entry.document_id in seen:
                raise SourceDataError(
                    f"{path}: document id {entry.document_id!r} is also "
                    f"{self.root / seen[entry.document_id]}"
                )
            seen[entry.document_id] = relative
            yield entry

    def _path_of(self, document_id: str) -> tuple[str, Path] | None:
        candidates = [f"{document_id}{suffix}" for suffix in CONTENT_TYPES]
        candidates += [f"{document_id}/index{suffix}" for suffix in CONTENT_TYPES]
        for relative in candidates:
            path = self.root / relative
            resolved = path.resolve()
            if not resolved.is_relative_to(self.root.resolve()):
                return None  # "../" in an id never leaves the root
            if path.is_file():
                return relative, path
        return None

    def get_document(self, document_id: str) -> SourceDocument:
        found = self._path_of(document_id)
        if found is None:
            raise DocumentNotFoundError(document_id)
        relative, path = found
        return self.document_at(relative, path, document_id)

    def document_at(
        self, relative: str, path: Path, document_id: str | None = None
    ) -> SourceDocument:
        """The document in the file ``path`` (``relative`` to the root), as ``get_document``.

        Raises ``DocumentNotFoundError`` if the file is gone, ``SourceDataError``
        if it is not UTF-8 or its front matter is bad, ``SourceUnavailableError``
        if it cannot be read.
        """
        document_id = document_id or document_id_for(relative)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise DocumentNotFoundError(document_id) from exc
        except UnicodeDecodeError as exc:
            raise SourceDataError(f"{path}: not UTF-8 text: {exc}") from exc
        except OSError as exc:
            raise SourceUnavailableError(f"cannot read {path}: {exc}") from exc
        try:
            entry = self._entry(relative, path, text)
        except SourceUnavailableError as exc:  # removed between the read and the stat
            if not path.exists():
                raise DocumentNotFoundError(document_id) from exc
            raise
        return SourceDocument(
            document_id=document_id,
            version=entry.version,
            changed_at=entry.changed_at,
            content=text,
            content_type=content_type_for(relative),
            metadata=(
                html_metadata(text, str(path), relative)
                if content_type_for(relative) == "text/html"
                else EventMetadata(source_path=relative)
            ),
        )

    def close(self) -> None:
        return None
