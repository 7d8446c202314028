"""The chunker's output: typed, JSON-serialisable, shared by the store and the search.

Field names here are a contract with ``store/`` (index mappings, SQLite
columns); extend them, do not rename them.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field


class DocumentMetadata(BaseModel):
    """What a document says about itself, carried on every chunk.

    Front matter fills it; metadata from the change event wins over front matter.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str | None = None
    scope: list[str] = Field(default_factory=list)
    valid_from: date | None = None
    valid_to: date | None = None
    effective_date: date | None = None
    access_labels: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    source_path: str | None = None


class Neighbours(BaseModel):
    """Links that let an exception travel with its rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    previous: str | None = None
    next: str | None = None
    related: list[str] = Field(default_factory=list)


class Chunk(BaseModel):
    """One section (or one part of a long section) of one document version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk_id: str  # "<document_id>@v<version>#<section-slug>"
    document_id: str
    version: int = Field(ge=1)
    section: str  # the slug after '#'
    ordinal: int = Field(ge=0)
    heading_path: list[str]
    text: str
    embed_text: str
    char_start: int = Field(ge=0)  # span of the (decoded) source text, end exclusive
    char_end: int = Field(ge=0)
    token_count: int = Field(ge=0)
    part: int | None = None  # 1-based, when a long section was split
    parts: int | None = None
    # For a part that starts inside a table: the table's header rows, repeated
    # at the start of ``text`` (they are not inside [char_start, char_end)).
    repeated_header: str | None = None
    # True when the chunk is above the size policy's maximum because it holds one
    # run of text with no whitespace to cut at (reported, never cut mid-word).
    unsplittable: bool = False
    neighbours: Neighbours = Field(default_factory=Neighbours)
    metadata: DocumentMetadata = Field(default_factory=DocumentMetadata)
    content_type: str = "text/markdown"
    changed_at: datetime | None = None


Model = TypeVar("Model", bound=BaseModel)


def build(model: type[Model], values: dict[str, Any]) -> Model:
    """An instance of ``model`` from a value for every field, without validation.

    For values the chunker built itself from checked input: what
    ``model_construct`` does when every field is given, without its per-field
    work for defaults and aliases, which cost a fifth of a chunker run. Tested
    to give what ``model_construct`` gives.
    """
    instance = model.__new__(model)
    object.__setattr__(instance, "__dict__", values)
    object.__setattr__(instance, "__pydantic_fields_set__", set(values))
    object.__setattr__(instance, "__pydantic_extra__", None)
    object.__setattr__(instance, "__pydantic_private__", None)
    return instance


def chunk_id(document_id: str, version: int, section: str) -> str:
    """The deterministic id of a chunk: ``<document_id>@v<version>#<section>``."""
    return f"{document_id}@v{version}#{section}"
