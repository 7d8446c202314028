"""Checks of what the caller hands ``chunk_document``, each a typed error naming the value."""

from __future__ import annotations

from datetime import datetime

from chunker.errors import InvalidContent, InvalidMetadata

CONTENT_TYPES = ("text/markdown", "text/html")
_ALIASES = {"text/x-markdown": "text/markdown", "application/xhtml+xml": "text/html"}


def check_identity(document_id: str, version: int) -> None:
    if not isinstance(document_id, str) or not document_id.strip():
        raise InvalidMetadata(f"document_id must be a non-empty string, got {document_id!r}")
    if "@" in document_id or "#" in document_id:
        raise InvalidMetadata(f"document_id must not contain '@' or '#', got {document_id!r}")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidMetadata(f"version must be an integer >= 1, got {version!r}")


def check_changed_at(changed_at: object) -> None:
    if changed_at is not None and not isinstance(changed_at, datetime):
        raise InvalidMetadata(f"changed_at must be a datetime or None, got {changed_at!r}")


def content_kind(content_type: str) -> str:
    kind = content_type.split(";", 1)[0].strip().lower()
    kind = _ALIASES.get(kind, kind)
    if kind not in CONTENT_TYPES:
        raise InvalidContent(
            f"content_type {content_type!r} is not supported (one of {', '.join(CONTENT_TYPES)})"
        )
    return kind


def decode(content: str | bytes) -> tuple[str, bytes | None]:
    """The content as text, and its UTF-8 encoding when checking it made one (the
    token counter reuses it rather than encoding again)."""
    utf8: bytes | None = None
    if isinstance(content, bytes | bytearray | memoryview):
        raw = bytes(content)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidContent(
                f"content is not valid UTF-8: byte {raw[exc.start : exc.start + 1]!r} "
                f"at offset {exc.start} ({exc.reason})"
            ) from exc
        utf8 = None if raw.startswith(b"\xef\xbb\xbf") else raw
    elif isinstance(content, str):
        text = content
        if not text.isascii():
            try:  # the C encoder finds a lone surrogate faster than any search
                utf8 = text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidContent(
                    f"content has a lone surrogate {text[exc.start]!r} at offset "
                    f"{exc.start}: not valid Unicode text"
                ) from exc
    else:
        raise InvalidContent(f"content must be str or bytes, got {type(content).__name__}")
    # a NUL byte is only ever a NUL character in UTF-8: found in the bytes at memchr speed
    if (utf8.find(0) if utf8 is not None else text.find("\x00")) >= 0:
        nul = text.find("\x00")
        raise InvalidContent(f"content has a NUL character at offset {nul}")
    return text, utf8
