"""Errors the chunker raises, all typed, all naming the bad value.

::

    ChunkerError (ValueError)
     ├── InvalidContent      content that is not text we can read (bad UTF-8, NUL, unknown type)
     ├── InvalidFrontMatter  YAML front matter that does not parse or has a field of the wrong type
     └── InvalidMetadata     a bad document id, version or metadata mapping from the caller

A caller (the worker) sends the event to the dead-letter topic with ``str(error)``
as the reason; nothing else needs to be caught.
"""

from __future__ import annotations

import reprlib


class ChunkerError(ValueError):
    """Base of every error ``chunk_document`` raises on bad input."""


class InvalidContent(ChunkerError):
    """The content cannot be read as a document of its content type."""


class InvalidFrontMatter(ChunkerError):
    """The YAML front matter does not parse, or a field has the wrong type."""


class InvalidMetadata(ChunkerError):
    """The caller passed a bad document id, version or metadata mapping."""


# Every error message that quotes input quotes at most this many characters of it.
MAX_QUOTED_CHARS = 200


def quote(value: object, limit: int = MAX_QUOTED_CHARS) -> str:
    """A repr of ``value`` of at most ``limit`` characters, cheap whatever its size.

    A value built from YAML aliases can be huge while its YAML is small, and an int
    of 10,000 digits has no repr: only a bounded part of a value is ever looked at.
    """
    bounded = reprlib.Repr()
    bounded.maxlevel, bounded.maxlist, bounded.maxtuple = 2, 4, 4
    bounded.maxdict, bounded.maxset = 4, 4
    bounded.maxstring = bounded.maxother = 60
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 600:
        text = f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    else:
        try:
            text = bounded.repr(value)
        except Exception:  # a repr that fails must not hide the error
            text = f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
