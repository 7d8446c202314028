"""The search tool's request and response: the contract with agents, people and scripts.

``SearchRequest`` is what a caller may send (its labels are NOT in it: they come
from the caller's credentials, rule 8). ``SearchResponse`` is what every
interface returns (CLI ``--json``, ``POST /search``, the MCP tool's structured
output), so the three agree field for field.

Statuses:

- ``ok``: ``passages`` holds the ranked passages (at most ``k``), then the
  neighbours appended to them (``via = "neighbour_of"``, never counted in k);
- ``no_document``: nothing the caller can see is about the question (the best
  score is below the threshold, or no chunk matches the filters);
- ``no_access``: chunks would have answered, but the permission filter removed
  every one of them (the caller lacks a label).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_QUESTION_CHARS = 2000
MAX_SCOPE_VALUES = 32
MAX_K = 10
DEFAULT_K = 5

TOOL_NAME = "search_policy"
TOOL_DESCRIPTION = (
    "Search the policy library. Pass a specific question in plain English, including "
    "the seller and the order type if you know them. Returns passages with their scope "
    "and effective date; it does not decide the case."
)

Status = Literal["ok", "no_document", "no_access"]
Leg = Literal["keyword", "dense"]


class SearchRequest(BaseModel):
    """One question, with the order's scope and date. Validated; errors name the field."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="A specific question in plain English (or the document's language).",
    )
    scope: list[str] = Field(
        default_factory=list,
        max_length=MAX_SCOPE_VALUES,
        description="Scope values of the order (city, seller...). Documents with one of "
        "them apply, and so do documents for everyone (no scope). Empty: every scope.",
    )
    as_of: date | None = Field(
        None,
        description="Only passages valid on this date (valid_from <= as_of <= valid_to). "
        "Default: today (UTC).",
    )
    # strict: "5", 5.0 and true are refused (lax mode took "5" and true as 5 and 1)
    k: int = Field(DEFAULT_K, ge=1, le=MAX_K, strict=True,
                   description="Ranked passages to return.")
    # strict: "true", 1 and "yes" are refused (lax mode took them as True)
    neighbours: bool = Field(
        True, strict=True,
        description="Append the neighbours of ranked passages (exceptions, context).",
    )
    language: str | None = Field(
        None,
        min_length=2,
        max_length=8,
        pattern=r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,4})?$",
        description="The question's language (ISO 639-1 such as 'en', 'de'); detected if absent.",
    )

    @field_validator("k", mode="before")
    @classmethod
    def _k_is_a_number(cls, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(
                f"k must be a JSON integer from 1 to {MAX_K} (not a string, a boolean, a "
                f"fraction or null); got {value!r:.40}")
        return value

    @field_validator("question")
    @classmethod
    def _no_control_characters(cls, value: str) -> str:
        if any(ord(ch) < 32 and ch not in "\t\n\r" for ch in value) or "\x00" in value:
            raise ValueError("question contains control characters")
        return value

    @field_validator("scope")
    @classmethod
    def _clean_scope(cls, values: list[str]) -> list[str]:
        cleaned = []
        for raw in values:
            value = raw.strip()
            if not value or len(value) > 200 or "\x00" in value:
                raise ValueError(f"scope value {value[:40]!r} is empty, too long or has a NUL")
            cleaned.append(value)
        return cleaned


class Freshness(BaseModel):
    """What the freshness monitor last measured for the passage's document."""

    model_config = ConfigDict(frozen=True)

    behind_source: bool
    source_version: int | None = None
    lag_seconds: float | None = None
    measured_at: datetime | None = None


class Passage(BaseModel):
    """One chunk, with everything a reply needs to cite it and a machine to check it."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    title: str | None
    version: int
    clause: str = Field(
        description="The section's own numbering where its heading has one ('4.2'), "
        "else its slug."
    )
    chunk_id: str
    heading_path: list[str]
    scope: list[str]
    access_labels: list[str] = Field(
        description="The labels a caller needs to see this passage (all of them)."
    )
    valid_from: date | None
    valid_to: date | None
    effective_date: date | None
    changed_at: datetime | None = Field(description="When the source made this version.")
    link: str | None = Field(
        description="Source path or URL, with '#<section>' anchor: only an http(s) URL or "
        "a relative path; null when the source's was anything else (javascript:, data:, "
        "//host).")
    language: str | None = None
    score: float
    text: str
    via: Literal["ranked", "neighbour_of"]
    neighbour_of: str | None = Field(
        None, description="For an appended neighbour: the chunk id of the ranked passage."
    )
    attributes: dict[str, Any] = Field(
        default_factory=dict,
        description="Front matter fields the chunker does not interpret (a CMS code, pricing).",
    )
    freshness: Freshness | None = None


class SearchResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    status: Status
    message: str = Field(description="One sentence for a person or a model: what happened.")
    passages: list[Passage] = Field(default_factory=list)
    as_of: date
    threshold: float = Field(
        description="What best_score is measured against: the dense cosine threshold, or "
        "the keyword threshold when no encoder is configured or the best passages have no "
        "vector yet; the reranker's own where a cross-encoder is configured."
    )
    best_score: float | None = None
    legs: list[Leg] = Field(
        default_factory=list,
        description="The legs that returned candidates: 'keyword' (BM25 over analysed "
        "terms), 'dense' (vectors). Only 'keyword' while the vectors have not arrived. A "
        "reranker is not a leg: it reorders what the legs found.",
    )
    took_ms: float = 0.0
    run_id: str | None = Field(
        None, description="This answer's run: pass it to check_citations to check a reply's "
        "citations against the passages returned here. null when the run could not be "
        "recorded (the answer stands) or no run log is configured.",
    )
