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

A bad file is that file's problem only. ``list_documents`` lists every
document file; one that cannot be read is listed with ``unreadable`` set
(``sources.base.Unreadable``: permission, encoding, binary, front matter,
symlink loop, symlink outside the root, not a regular file, too large), so
the listing stays complete for the rest and nobody takes the bad file for a
deleted one. Only a root or a sub-folder that cannot be listed fails the
whole listing: what it holds is unknown, and calling it gone would delete it.

Reading never blocks and never leaves the library:

- every name is ``lstat``-ed first; a FIFO, socket or device is reported and
  never opened, and a file is opened with ``O_NONBLOCK | O_NOFOLLOW`` and
  ``fstat``-ed, so one swapped for a FIFO or a link meanwhile is refused too;
- a symbolic link is followed only to a regular file inside the root. One
  that points outside it is reported (``outside_root``), not read: the
  library is what the folder holds (a link to ``/etc`` in a checkout must not
  be published to agents), and the watcher only sees changes inside the
  root, so an outside target would go stale silently. Links to folders are
  not walked (``os.walk`` default), so a folder link loop cannot recurse;
- at most ``max_file_bytes`` are read: a bigger file is reported as too large.

Hidden names, hard links, names and folders:

- nothing is read through a hidden name (``.git``, ``.env``, any name starting
  with ``.``): hidden folders are not walked, hidden files are no documents,
  and a symbolic link whose resolved target passes through a hidden name
  relative to the root (``gitconfig.md -> .git/config``, ``dotenv.md -> .env``)
  is reported (``hidden``), not read. ``hidden_allow`` names the hidden
  names that are part of the library anyway (``.well-known``);
- a file with more than one hard link is reported (``hard_link``), not read,
  unless ``allow_hard_links``: its other name may be anywhere on the file
  system (``ln /etc/passwd lib/x.md``), and nothing tells where;
- a name that is not UTF-8 (``caf\\xe9.md`` in Latin-1) is reported (``name``)
  under its escaped, bounded form (which is also its document id), never
  read: an id with a lone surrogate cannot be logged, stored or served;
- a sub-folder that cannot be listed is one entry (``unlistable``, its id the
  folder's path with a trailing ``/``): what it holds is unknown, so the
  documents under it must be kept as they are (``sources.unlisted``); only an
  unlistable root fails the listing.

Front matter is read with the chunker's bounded loader (``chunker.metadata.load_yaml``):
a YAML alias bomb is refused (``front_matter``) before it is built. A file whose front
matter (or ``<meta>``) has no ``access_labels`` key gets the labels of
``default_access_labels`` for its path, if a rule matches (``sources.label_defaults``).
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import structlog

from chunker.errors import InvalidFrontMatter
from chunker.metadata import load_yaml
from events.model import ContentType, EventMetadata
from sources.base import (
    SourceDocument,
    SourceEntry,
    Unreadable,
    UnreadableKind,
    document_id_problem,
    parse_changed_at,
    parse_version,
)
from sources.errors import DocumentNotFoundError, SourceDataError, SourceUnavailableError
from sources.hidden import hidden_component, parse_hidden_allow
from sources.html_meta import html_metadata
from sources.label_defaults import (
    NO_DEFAULTS,
    RawDefaults,
    declares_access_labels,
    parse_label_defaults,
    with_default_labels,
)
from sources.limits import MAX_FILE_BYTES

log = structlog.get_logger(__name__)

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_CHUNK = 1 << 16

# A policy document is some kB; a file above this is a mistake (an export, a log).
DEFAULT_MAX_FILE_BYTES = MAX_FILE_BYTES


# File name endings of documents, and the content type each one is sent as.
CONTENT_TYPES: dict[str, ContentType] = {
    ".md": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
}


def is_document_name(file_name: str, hidden_allow: Collection[str] = ()) -> bool:
    """True for ``refund.md``; False for ``.refund.md.swp``, ``refund.md~``, ``notes.txt``.

    A hidden name in ``hidden_allow`` (``.about.md``) is a document name too.
    """
    hidden = file_name.startswith(".") and file_name not in hidden_allow
    return not hidden and _suffix(file_name) is not None


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


# A shown (escaped) name longer than this is cut: a name is at most 255 bytes per
# component, but a path of them is not, and a reason is a log line and a label.
MAX_SHOWN_NAME = 200


def shown_name(relative: str) -> str:
    """``relative`` as it can be printed: bytes that are not UTF-8 as ``\\xe9``, bounded."""
    shown = os.fsencode(relative).decode("utf-8", "backslashreplace")
    return shown if len(shown) <= MAX_SHOWN_NAME else shown[:MAX_SHOWN_NAME] + "..."


def is_utf8_name(name: str) -> bool:
    """False for a name read from the file system that holds bytes that are not UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class UnreadableFileError(SourceDataError):
    """A document file that cannot be read; ``reason`` says why (kind and detail)."""

    def __init__(self, reason: Unreadable) -> None:
        super().__init__(str(reason))
        self.reason = reason


@dataclass(frozen=True, slots=True)
class FolderFile:
    """One document file as ``lstat``/``stat`` see it, before it is read.

    ``target`` is the file to open (the file itself, or the regular file inside
    the root a symbolic link points to); ``unreadable`` is set when the stat
    alone shows it cannot be read (never opened then).
    """

    relative: str
    path: Path
    target: Path
    size: int
    mtime: float
    mtime_ns: int
    unreadable: Unreadable | None = None


def _os_reason(path: Path, exc: OSError, doing: str) -> Unreadable:
    if isinstance(exc, PermissionError):
        return Unreadable(UnreadableKind.PERMISSION, f"{path}: cannot {doing}: {exc.strerror}")
    if exc.errno == errno.ELOOP:
        return Unreadable(UnreadableKind.SYMLINK_LOOP,
                          f"{path}: a symbolic link loop ({exc.strerror})")
    return Unreadable(UnreadableKind.IO_ERROR, f"{path}: cannot {doing}: {exc}")


class MarkdownFolderSource:
    def __init__(
        self,
        root: str | Path,
        *,
        version_key: str = "version",
        changed_at_key: str = "changed_at",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        hidden_allow: str | Collection[str] = (),
        allow_hard_links: bool = False,
        default_access_labels: RawDefaults = NO_DEFAULTS,
    ) -> None:
        if max_file_bytes < 1:
            raise ValueError(f"max_file_bytes {max_file_bytes!r} must be at least 1")
        self.root = Path(root)
        self.version_key = version_key
        self.changed_at_key = changed_at_key
        self.max_file_bytes = max_file_bytes
        self.hidden_allow = parse_hidden_allow(hidden_allow)
        self.allow_hard_links = allow_hard_links
        self.default_access_labels = parse_label_defaults(default_access_labels)

    @property
    def name(self) -> str:
        return "folder"

    def files(self) -> Iterator[tuple[str, Path]]:
        """(relative path with ``/``, path) of every document file, sorted per folder.

        A sub-folder that cannot be listed is yielded as (its relative path with a
        trailing ``/``, its path, the error) by ``_walk``; here it is left out.
        Raises ``SourceUnavailableError`` when the root cannot be listed.
        """
        for relative, path, error in self._walk():
            if error is None:
                yield relative, path

    def _walk(self) -> Iterator[tuple[str, Path, OSError | None]]:
        """Document files (error None) and the sub-folders that cannot be listed (error set).

        Hidden folders (not allowed) are not walked; hidden files are no documents.
        Raises ``SourceUnavailableError`` when the root cannot be listed: what it
        holds is unknown, so nothing may look deleted.
        """
        if not self.root.is_dir():
            raise SourceUnavailableError(f"source folder {self.root} is not a readable folder")
        unlisted: list[OSError] = []

        def fail(exc: OSError) -> None:
            if exc.filename is None or Path(os.fsdecode(exc.filename)) == self.root:
                raise SourceUnavailableError(f"cannot list {self.root}: {exc}") from exc
            unlisted.append(exc)  # a sub-folder: reported, what it holds kept

        def drain() -> Iterator[tuple[str, Path, OSError | None]]:
            while unlisted:
                exc = unlisted.pop(0)
                path = Path(os.fsdecode(exc.filename))
                yield path.relative_to(self.root).as_posix() + "/", path, exc

        for folder, dirs, files in os.walk(self.root, onerror=fail):
            yield from drain()
            dirs[:] = sorted(d for d in dirs if hidden_component([d], self.hidden_allow) is None)
            for file_name in sorted(files):
                if is_document_name(file_name, self.hidden_allow):
                    path = Path(folder) / file_name
                    yield path.relative_to(self.root).as_posix(), path, None
        yield from drain()

    def scan(self) -> Iterator[FolderFile]:
        """Every document file with its stat, unreadable ones included (see ``inspect``),
        and one ``unlistable`` entry per sub-folder that cannot be listed."""
        for relative, path, error in self._walk():
            if error is not None:
                yield self._unlistable(relative, path, error)
                continue
            found = self.inspect(relative, path)
            if found is not None:
                yield found

    def _unlistable(self, relative: str, path: Path, exc: OSError) -> FolderFile:
        shown = shown_name(relative)
        why = exc.strerror or str(exc)
        reason = Unreadable(UnreadableKind.UNLISTABLE,
                            f"{shown_name(str(path))}: cannot list the folder: {why}; the "
                            "documents under it are kept as they were until it can be listed")
        return self._bad(shown, path, reason, _lstat_or_none(path))

    def inspect(self, relative: str, path: Path) -> FolderFile | None:
        """The file's stat and, if the stat shows it, why it cannot be read; None if gone.

        Never opens the file and never blocks: ``lstat``, then for a symbolic link
        ``realpath`` and ``stat`` of its target. A name that is not UTF-8 is
        reported under its escaped form (``shown_name``: ``relative`` of the result).
        """
        if not is_utf8_name(relative):
            return self._bad_name(relative, path)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._bad(relative, path, _os_reason(path, exc, "stat it"))
        target = path
        if stat.S_ISLNK(st.st_mode):
            try:
                target = Path(os.path.realpath(path, strict=True))
                st = os.stat(target)
            except FileNotFoundError:
                return None  # a dangling link: no document there (as if the file were gone)
            except OSError as exc:
                return self._bad(relative, path, _os_reason(path, exc, "follow the link"), st)
            root = Path(os.path.realpath(self.root))
            if not target.is_relative_to(root):
                return self._bad(relative, path, Unreadable(
                    UnreadableKind.OUTSIDE_ROOT,
                    f"{path}: a symbolic link to {shown_name(str(target))}, outside the library "
                    f"{root}: not read",
                ), st)
            hidden = hidden_component(target.relative_to(root).parts, self.hidden_allow)
            if hidden is not None:
                return self._bad(relative, path, Unreadable(
                    UnreadableKind.HIDDEN,
                    f"{path}: a symbolic link to {shown_name(str(target))}: hidden path "
                    f"component {shown_name(hidden)!r}: not read",
                ), st)
        reason: Unreadable | None = None
        if not stat.S_ISREG(st.st_mode):
            kind = _file_kind(st.st_mode)
            reason = Unreadable(UnreadableKind.NOT_REGULAR,
                                f"{path}: not a regular file ({kind}): not opened")
        elif st.st_nlink > 1 and not self.allow_hard_links:
            reason = _hard_link(path, st.st_nlink)
        elif st.st_size > self.max_file_bytes:
            reason = self._too_large(path, st.st_size)
        return FolderFile(relative, path, target, st.st_size, st.st_mtime, st.st_mtime_ns, reason)

    def _bad_name(self, relative: str, path: Path) -> FolderFile:
        """A name with bytes that are not UTF-8: reported escaped, never opened."""
        shown = shown_name(relative)
        reason = Unreadable(UnreadableKind.NAME,
                            f"{shown_name(str(path))}: name not UTF-8 (shown escaped): not read; "
                            "rename the file")
        return self._bad(shown, path, reason, _lstat_or_none(path))

    def _too_large(self, path: Path, size: int) -> Unreadable:
        return Unreadable(UnreadableKind.TOO_LARGE,
                          f"{path}: {size} bytes, above the bound of {self.max_file_bytes} bytes")

    @staticmethod
    def _bad(
        relative: str, path: Path, reason: Unreadable, st: os.stat_result | None = None
    ) -> FolderFile:
        size, mtime, mtime_ns = (st.st_size, st.st_mtime, st.st_mtime_ns) if st else (0, 0.0, 0)
        return FolderFile(relative, path, path, size, mtime, mtime_ns, reason)

    def read_text(self, file: FolderFile) -> str:
        """The file's text (newlines as ``open()`` reads them); ``UnreadableFileError`` if not.

        Opened with ``O_NONBLOCK | O_NOFOLLOW`` and checked with ``fstat``: a file
        swapped for a FIFO or a link since ``inspect`` is refused, never waited on.
        Raises ``FileNotFoundError`` when the file is gone.
        """
        if file.unreadable is not None:
            raise UnreadableFileError(file.unreadable)
        path = file.path
        try:
            fd = os.open(file.target, _OPEN_FLAGS)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise UnreadableFileError(_os_reason(path, exc, "open it")) from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise UnreadableFileError(Unreadable(
                    UnreadableKind.NOT_REGULAR,
                    f"{path}: not a regular file ({_file_kind(st.st_mode)})",
                ))
            if st.st_nlink > 1 and not self.allow_hard_links:  # linked since inspect
                raise UnreadableFileError(_hard_link(path, st.st_nlink))
            data = bytearray()
            while len(data) <= self.max_file_bytes:
                block = os.read(fd, _READ_CHUNK)
                if not block:
                    break
                data += block
        except OSError as exc:
            raise UnreadableFileError(_os_reason(path, exc, "read it")) from exc
        finally:
            os.close(fd)
        if len(data) > self.max_file_bytes:
            raise UnreadableFileError(self._too_large(path, len(data)))
        if b"\0" in data:
            raise UnreadableFileError(Unreadable(
                UnreadableKind.BINARY, f"{path}: a binary file (NUL bytes), not a text document"))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnreadableFileError(Unreadable(
                UnreadableKind.ENCODING, f"{path}: not UTF-8 text: {exc}")) from exc
        return text.replace("\r\n", "\n").replace("\r", "\n")  # as open() in text mode

    def _front_matter(self, text: str, where: str) -> dict[str, object]:
        return front_matter_of(text, where)

    def _entry(self, file: FolderFile, text: str) -> SourceEntry:
        """The entry of a file read as ``text``; ``UnreadableFileError`` for bad metadata."""
        return self._entry_and_front_matter(file, text)[0]

    def _entry_and_front_matter(
        self, file: FolderFile, text: str
    ) -> tuple[SourceEntry, dict[str, object]]:
        where = str(file.path)
        bad_id = document_id_problem(document_id_for(file.relative))
        if bad_id is not None:
            raise UnreadableFileError(bad_id)
        try:
            meta = self._front_matter(text, where) if file.relative.endswith(".md") else {}
            if content_type_for(file.relative) == "text/html":
                html_metadata(text, where, file.relative)  # bad <meta> values: refused here too
            raw_version = meta.get(self.version_key)
            version = int(file.mtime) if raw_version is None else parse_version(raw_version, where)
            raw_changed = meta.get(self.changed_at_key)
            changed_at = (
                datetime.fromtimestamp(file.mtime, UTC)
                if raw_changed is None
                else parse_changed_at(raw_changed, where)
            )
        except SourceDataError as exc:
            raise UnreadableFileError(Unreadable(UnreadableKind.FRONT_MATTER, str(exc))) from exc
        return SourceEntry(document_id_for(file.relative), version, changed_at), meta

    def entry_of(self, file: FolderFile) -> SourceEntry | None:
        """The listing's entry for one file: read, or unreadable with the reason; None if gone."""
        try:
            return self._entry(file, self.read_text(file))
        except FileNotFoundError:
            return None
        except UnreadableFileError as exc:
            return SourceEntry(document_id_for(file.relative), 0,
                               datetime.fromtimestamp(file.mtime, UTC), unreadable=exc.reason)

    def list_documents(self) -> Iterator[SourceEntry]:
        """Every document, unreadable ones with their reason; one entry per id.

        Two files with one id (``refund.md``, ``refund/index.md``): the first in
        sorted order is listed, the other logged and left out, as the watcher does.
        """
        seen: dict[str, str] = {}
        for file in self.scan():
            document_id = document_id_for(file.relative)
            if document_id in seen:
                log.error("two files have one document id; the second is ignored",
                          document_id=document_id, kept=str(self.root / seen[document_id]),
                          ignored=str(file.path))
                continue
            entry = self.entry_of(file)
            if entry is None:
                continue
            seen[document_id] = file.relative
            if entry.unreadable is not None:
                log.warning("document file unreadable", document_id=document_id,
                            reason=entry.unreadable.kind.value,
                            detail=entry.unreadable.detail)
            yield entry

    def _path_of(self, document_id: str) -> FolderFile | None:
        candidates = [f"{document_id}{suffix}" for suffix in CONTENT_TYPES]
        candidates += [f"{document_id}/index{suffix}" for suffix in CONTENT_TYPES]
        for relative in candidates:
            normal = posixpath.normpath(relative)
            if normal.startswith(("../", "/")) or normal != relative:
                return None  # "../" in an id never leaves the root
            if hidden_component(relative.split("/"), self.hidden_allow) is not None:
                return None  # ".git/config" is no document id: hidden names are not listed
            found = self.inspect(relative, self.root / relative)
            if found is not None and not (self.root / relative).is_dir():  # a folder is walked
                return found
        return None

    def holds(self, document_id: str) -> bool:
        """Is there a file for ``document_id`` (readable or not)? A few ``lstat``, no read:
        the webhook's owner check (``webhooks.owners``) asks it per request."""
        return self._path_of(document_id) is not None

    def get_document(self, document_id: str) -> SourceDocument:
        """Raises ``DocumentNotFoundError``, or ``UnreadableFileError`` with the reason."""
        found = self._path_of(document_id)
        if found is None:
            raise DocumentNotFoundError(document_id)
        return self.document_at(found.relative, found.path, document_id)

    def document_at(
        self, relative: str, path: Path, document_id: str | None = None
    ) -> SourceDocument:
        """The document in the file ``path`` (``relative`` to the root), as ``get_document``.

        Raises ``DocumentNotFoundError`` if the file is gone, ``UnreadableFileError``
        (a ``SourceDataError``) with the reason if it cannot be read as a document.
        """
        document_id = document_id or document_id_for(relative)
        file = self.inspect(relative, path)
        if file is None:
            raise DocumentNotFoundError(document_id)
        try:
            text = self.read_text(file)
        except FileNotFoundError as exc:
            raise DocumentNotFoundError(document_id) from exc
        entry, front_matter = self._entry_and_front_matter(file, text)
        html = content_type_for(relative) == "text/html"
        metadata = (html_metadata(text, str(path), relative) if html
                    else EventMetadata(source_path=relative))
        return SourceDocument(
            document_id=document_id,
            version=entry.version,
            changed_at=entry.changed_at,
            content=text,
            content_type=content_type_for(relative),
            metadata=with_default_labels(metadata, self.default_access_labels, relative,
                                         declares_access_labels(front_matter)),
        )

    def close(self) -> None:
        return None


def front_matter_of(text: str, where: str) -> dict[str, object]:
    """The YAML front matter of a Markdown text as a mapping ({} without one, or if it is
    no mapping); raises ``SourceDataError`` naming ``where`` when it is not valid YAML or
    too large (the chunker's bounded loader: an alias bomb is refused before it is built)."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}
    try:
        data = load_yaml(match.group(1))
    except InvalidFrontMatter as exc:
        raise SourceDataError(f"{where}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _hard_link(path: Path, links: int) -> Unreadable:
    return Unreadable(UnreadableKind.HARD_LINK,
                      f"{path}: hard link ({links} links): not read (its other names may be "
                      "outside the library; POLICY_INDEXER_FOLDER_ALLOW_HARD_LINKS=true reads it)")


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return f"mode {stat.filemode(mode)}"


def _lstat_or_none(path: Path) -> os.stat_result | None:
    """The link's own status, or None when it cannot be had (gone, or not allowed)."""
    try:
        return os.lstat(path)
    except OSError:
        return None
