"""The heading-level chunker: one document version in, ordered chunks out.

Pure (no I/O) and deterministic. See ``docs/chunking.md`` for the rules.

    from chunker import chunk_document, SizePolicy, ChunkerError
"""

from chunker.document import chunk_document
from chunker.errors import ChunkerError, InvalidContent, InvalidFrontMatter, InvalidMetadata
from chunker.inputs import CONTENT_TYPES
from chunker.model import Chunk, DocumentMetadata, Neighbours, chunk_id
from chunker.policy import SizePolicy
from chunker.tokens import count_tokens

__all__ = [
    "CONTENT_TYPES",
    "Chunk",
    "ChunkerError",
    "DocumentMetadata",
    "InvalidContent",
    "InvalidFrontMatter",
    "InvalidMetadata",
    "Neighbours",
    "SizePolicy",
    "chunk_document",
    "chunk_id",
    "count_tokens",
]
