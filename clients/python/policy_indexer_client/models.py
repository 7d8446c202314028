"""The HTTP API's request and response bodies, as this client sees them.

They mirror the server's models (``retrieval.models`` and ``retrieval.citations``
in policy-indexer, and its ``GET /openapi.json``) field for field, without importing
the server: this distribution must install where the indexer is not. The tests of
the main repository compare both sides' fields, so a field added to the server and
forgotten here fails there.

Requests refuse unknown fields (the server does too: a ``labels`` field is a 422,
labels come from the API key). Responses ignore fields this version does not know,
so a newer server does not break an older agent; problem codes are plain strings
for the same reason.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_K = 10

Status = Literal["ok", "no_document", "no_access"]


class SearchRequest(BaseModel):
    """One question, with the order's scope and date (the caller's labels are its key's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = Field(min_length=1, max_length=2000,
                          description="A specific question in plain English (or the "
                          "document's language).")
    scope: list[str] = Field(default_factory=list, max_length=32,
                             description="Scope values of the order (city, seller...). "
                             "Empty: every scope.")
    as_of: date | None = Field(None, description="Only passages valid on this date. "
                               "Default: today (UTC).")
    k: int = Field(5, ge=1, le=MAX_K, strict=True, description="Ranked passages to return.")
    neighbours: bool = Field(True, strict=True,
                             description="Append the neighbours of ranked passages.")
    language: str | None = Field(None, min_length=2, max_length=8,
                                 description="The question's language ('en', 'de'); "
                                 "detected if absent.")


class Freshness(BaseModel):
    """What the server's freshness monitor last measured for the passage's document."""

    model_config = ConfigDict(frozen=True)

    behind_source: bool
    source_version: int | None = None
    lag_seconds: float | None = None
    measured_at: datetime | None = None


class Passage(BaseModel):
    """One chunk with its provenance: everything a reply needs to cite it."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    title: str | None
    version: int
    clause: str
    chunk_id: str
    heading_path: list[str]
    scope: list[str]
    access_labels: list[str]
    valid_from: date | None
    valid_to: date | None
    effective_date: date | None
    changed_at: datetime | None
    link: str | None
    language: str | None = None
    score: float
    text: str
    via: Literal["ranked", "neighbour_of"]
    neighbour_of: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    freshness: Freshness | None = None


class SearchResponse(BaseModel):
    """The answer: ``ok`` with passages, or ``no_document`` / ``no_access`` with none."""

    model_config = ConfigDict(frozen=True)

    status: Status
    message: str
    passages: list[Passage] = Field(default_factory=list)
    as_of: date
    threshold: float
    best_score: float | None = None
    legs: list[str] = Field(default_factory=list)
    took_ms: float = 0.0
    run_id: str | None = None

    @property
    def ranked(self) -> list[Passage]:
        """The ranked passages, without the neighbours appended to them."""
        return [p for p in self.passages if p.via == "ranked"]


class Citation(BaseModel):
    """One citation of a reply: the clause, and what the reply says of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    document_id: str = Field(min_length=1)
    clause: str = Field(min_length=1)
    version: int | None = Field(None, ge=1, strict=True)
    quote: str | None = Field(None, min_length=1, max_length=2000)
    claim: str | None = Field(None, min_length=1, max_length=2000)

    @classmethod
    def of(cls, passage: Passage, *, quote: str | None = None,
           claim: str | None = None) -> Citation:
        """The citation of a returned passage, at the version it was returned."""
        return cls(document_id=passage.document_id, clause=passage.clause,
                   version=passage.version, quote=quote, claim=claim)


class CheckRequest(BaseModel):
    """The citations of one reply, with the order they answer and the run they came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str | None = None
    scope: list[str] | None = None
    as_of: date | None = None
    citations: list[Citation] = Field(min_length=1, max_length=50)


class Problem(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: str
    detail: str
    facts: dict[str, Any] = Field(default_factory=dict)


class CitationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    document_id: str
    clause: str
    version: int | None
    ok: bool
    problems: list[Problem]
    current_version: int | None = None
    chunk_id: str | None = None

    @property
    def codes(self) -> list[str]:
        return [p.code for p in self.problems]


class CheckResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: bool
    run_id: str | None
    scope: list[str]
    as_of: date
    results: list[CitationResult]
