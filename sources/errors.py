"""Errors of the sources.

::

    SourceError
    ├── SourceUnavailableError  the source cannot be reached or read now (network,
    │                           5xx, timeout, missing folder or file): try again later
    ├── SourceDataError         the source answered with something we cannot read
    │                           (bad JSON, missing field, bad version); names the item
    └── DocumentNotFoundError   get_document(): the source has no such document

A listing that fails raises; it never yields a partial listing silently, so
the monitor can report "source not listable" instead of "no lag".
"""

from __future__ import annotations


class SourceError(Exception):
    """Base of every error raised by a source."""


class SourceUnavailableError(SourceError):
    """The source could not be reached or read; the data may be fine."""


class SourceDataError(SourceError):
    """The source answered with data that is not a valid listing or document."""


class DocumentNotFoundError(SourceError):
    """The source does not hold the document asked for (or it is deleted there)."""

    def __init__(self, document_id: str) -> None:
        super().__init__(f"the source has no document {document_id!r}")
        self.document_id = document_id
