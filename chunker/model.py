"""The chunker's output: typed, JSON-serialisable, shared by the store and the search.

Field names here are a contract with ``store/`` (index mappings, SQLite
columns); extend them, do not rename them.
"""

from __future__ import annotations

from datetime import date, datetime
from functools import cache
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ModelWrapValidatorHandler,
    computed_field,
    model_validator,
)


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
    # ISO 639-1 code ('en', 'de'): declared (front matter ``lang``/``language``), else
    # the path's locale segment, else detected from the text; None when unknown.
    # The search analyses the chunk's terms in it.
    language: str | None = None
    # Front matter fields the chunker does not interpret (a CMS code, pricing), as
    # JSON values, bounded in size (``chunker.metadata.MAX_ATTRIBUTES_BYTES``).
    attributes: dict[str, JsonValue] = Field(default_factory=dict)


class Neighbours(BaseModel):
    """Links that let an exception travel with its rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    previous: str | None = None
    next: str | None = None
    related: list[str] = Field(default_factory=list)


class Chunk(BaseModel):
    """One section (or one part of a long section) of one document version.

    ``embed_text`` is derived from ``heading_path`` and ``text``, not stored: it
    would be a second copy of the document in memory. It is still in
    ``model_dump()`` and the JSON (last, as pydantic puts computed fields), and
    JSON that carries it (SQLite bodies, Elasticsearch documents) reads back.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk_id: str  # "<document_id>@v<version>#<section-slug>"
    document_id: str
    version: int = Field(ge=1)
    section: str  # the slug after '#'
    ordinal: int = Field(ge=0)
    heading_path: list[str]
    text: str
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

    @computed_field  # type: ignore[prop-decorator]
    @property
    def embed_text(self) -> str:
        """What an embedding model or a keyword index sees: heading path, newline, text."""
        return " > ".join(self.heading_path) + "\n" + self.text

    @model_validator(mode="wrap")
    @classmethod
    def _derived_embed_text(cls, data: Any, handler: ModelWrapValidatorHandler[Chunk]) -> Chunk:
        """Accept a stored ``embed_text`` (it is in every dump) if it is what it derives to.

        One that disagrees was not written under this contract (or was altered):
        an error, rather than serving text the index does not hold.
        """
        if not (isinstance(data, dict) and "embed_text" in data):
            return handler(data)
        stored = data["embed_text"]
        chunk = handler({key: value for key, value in data.items() if key != "embed_text"})
        if stored != chunk.embed_text:
            raise ValueError(
                f"embed_text of {chunk.chunk_id!r} is not its heading path + text: "
                f"{str(stored)[:80]!r} != {chunk.embed_text[:80]!r}"
            )
        return chunk


Model = TypeVar("Model", bound=BaseModel)


def build(model: type[Model], values: dict[str, Any]) -> Model:
    """An instance of ``model`` from a value for every field, without validation.

    For values the chunker built itself from checked input: what
    ``model_construct`` does when every field is given, without its per-field
    work for defaults and aliases, which cost a fifth of a chunker run. Tested
    to give what ``model_construct`` gives.

    Every instance of ``model`` built here shares one fields-set (a 20-name set
    is 1.2 kB, more than a small chunk's text). Pydantic never changes it in
    place on a frozen model: assignment is refused, and ``model_copy`` and
    ``copy``/``deepcopy`` copy it before adding to it. Do not change
    ``model_fields_set`` in place yourself.
    """
    instance = model.__new__(model)
    object.__setattr__(instance, "__dict__", values)
    object.__setattr__(instance, "__pydantic_fields_set__", _all_fields(model))
    object.__setattr__(instance, "__pydantic_extra__", None)
    object.__setattr__(instance, "__pydantic_private__", None)
    return instance


@cache
def _all_fields(model: type[BaseModel]) -> set[str]:
    if not model.model_config.get("frozen"):
        # assignment would add to the set that every instance shares
        raise TypeError(f"build() is for frozen models, not {model.__name__}")
    return set(model.model_fields)


def chunk_id(document_id: str, version: int, section: str) -> str:
    """The deterministic id of a chunk: ``<document_id>@v<version>#<section>``."""
    return f"{document_id}@v{version}#{section}"
