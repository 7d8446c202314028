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


class ChunkerError(ValueError):
    """Base of every error ``chunk_document`` raises on bad input."""


class InvalidContent(ChunkerError):
    """The content cannot be read as a document of its content type."""


class InvalidFrontMatter(ChunkerError):
    """The YAML front matter does not parse, or a field has the wrong type."""


class InvalidMetadata(ChunkerError):
    """The caller passed a bad document id, version or metadata mapping."""
