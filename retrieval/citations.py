"""check_citations: is each clause a reply cites real, current, returned, and fit for the order?

A reply that cites a clause is a claim a machine can check, because the index
knows every document's current version and the run log (``retrieval.runs``)
knows which passages a search returned. For each citation (``document_id``,
``clause``, optional ``version``, ``quote`` and ``claim``) the answer is ``ok``
and a list of problems, each a code with the facts behind it:

=====================  ==================================================================
code                   when (facts)
=====================  ==================================================================
unknown_document       the index has no such document (``existed``: true for a document
                       deleted at the source: its tombstone is kept, with the version)
unknown_version        the cited version is newer than any the index holds
unknown_clause         the current version has no such clause (``existed_earlier``:
                       ``yes`` when the run returned it at another version, else
                       ``unknown``: the index keeps only current versions' text)
superseded             the cited version is older than the current one
                       (``current_version``; ``text_changed`` true/false when the run
                       holds the cited version's text hash, else ``unknown``)
not_returned           a run was given and the clause was not among its passages
not_permitted          the caller's labels do not cover the clause: nothing of its text,
                       scope or dates is checked or returned
out_of_scope           the clause's scope does not apply to the order's (the search's rule)
not_valid_on_date      the clause is not valid on the order's date (the search's rule)
quote_not_found        the quote, case and whitespace folded, is not in the clause
number_not_in_clause   a number of the claim (amount, percentage, duration, count) is
                       not in the clause, compared as values (``retrieval.numbers``)
support_unchecked      always: whether the clause supports the claim's *meaning* is not
                       judged here (a model judge's job, docs/citations.md)
=====================  ==================================================================

``ok`` is true when no code but ``support_unchecked`` is reported. The order's
scope and date are the request's; when absent, the run's (the search the reply
came from); the date defaults to today (UTC). The caller's labels come from its
credentials, never from the request (rule 8); a run of another caller is an
unknown run.

Errors (a request refused as a whole)::

    CitationCheckError (ValueError)
     └── UnknownRun       the run id names no run of this caller (or none at all)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chunker.model import Chunk
from retrieval.credentials import Caller
from retrieval.models import MAX_QUESTION_CHARS, MAX_SCOPE_VALUES
from retrieval.numbers import missing_numbers
from retrieval.provenance import clause_of
from retrieval.runs import RUN_ID, RunLog, RunPassage, SearchRun, text_hash
from store.model import DocumentState
from store.search_index import ChunkReader, SearchFilters

TOOL_NAME = "check_citations"
TOOL_DESCRIPTION = (
    "Check the citations of a reply before it is sent. Give the run_id of the search the "
    "reply used, the order's scope and date, and each citation (document_id, clause, the "
    "version cited, the words quoted, the sentence claimed). For each citation it checks: "
    "the document and clause exist in the current index, the cited version is the current "
    "one (superseded otherwise), the clause was among the run's passages, the caller may "
    "see it, it applies to the order's scope and date, the quote is in the clause, and "
    "every number of the claim is in the clause. It does NOT judge whether the clause "
    "supports the meaning of the claim: every citation says support_unchecked."
)
MAX_CITATIONS = 50
MAX_ID_CHARS = 512
MAX_CLAUSE_CHARS = 256
MAX_TEXT_CHARS = MAX_QUESTION_CHARS

ProblemCode = Literal[
    "unknown_document", "unknown_version", "unknown_clause", "superseded", "not_returned",
    "not_permitted", "out_of_scope", "not_valid_on_date", "quote_not_found",
    "number_not_in_clause", "support_unchecked",
]
PROBLEM_CODES: tuple[str, ...] = ProblemCode.__args__  # type: ignore[attr-defined]


class CitationCheckError(ValueError):
    """The request cannot be checked as a whole (the message says why)."""


class UnknownRun(CitationCheckError):
    """No run of this id for this caller: never recorded, pruned, or another caller's."""


def _clean_text(value: str, name: str) -> str:
    if "\x00" in value or any(ord(ch) < 32 and ch not in "\t\n\r" for ch in value):
        raise ValueError(f"{name} contains control characters")
    return value


class Citation(BaseModel):
    """One citation of a reply: the clause, and what the reply says of it."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    document_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    clause: str = Field(min_length=1, max_length=MAX_CLAUSE_CHARS,
                        description="The clause as passages give it ('4.2', or its slug).")
    version: int | None = Field(None, ge=1, strict=True,
                                description="The version the reply cites (a passage's).")
    quote: str | None = Field(None, min_length=1, max_length=MAX_TEXT_CHARS,
                              description="Words the reply quotes from the clause.")
    claim: str | None = Field(None, min_length=1, max_length=MAX_TEXT_CHARS,
                              description="The reply's sentence that rests on the clause.")

    @field_validator("document_id", "clause", "quote", "claim")
    @classmethod
    def _no_control(cls, value: str | None, info: Any) -> str | None:
        return None if value is None else _clean_text(value, info.field_name)


class CheckRequest(BaseModel):
    """The citations of one reply, with the order they answer and the run they came from."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    run_id: str | None = Field(None, description="The search's run_id (from its response).")
    scope: list[str] | None = Field(
        None, max_length=MAX_SCOPE_VALUES,
        description="The order's scope values; absent: the run's scope.")
    as_of: date | None = Field(None, description="The order's date; absent: the run's, or "
                               "today (UTC).")
    citations: list[Citation] = Field(min_length=1, max_length=MAX_CITATIONS)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, value: str | None) -> str | None:
        if value is not None and not RUN_ID.match(value):
            raise ValueError(f"run_id {value[:40]!r} is not a run id (32 lower-case hex)")
        return value

    @field_validator("scope")
    @classmethod
    def _scope(cls, values: list[str] | None) -> list[str] | None:
        if values is None:
            return None
        for value in values:
            if not value or len(value) > 200 or "\x00" in value:
                raise ValueError(f"scope value {value[:40]!r} is empty, too long or has a NUL")
        return values


class Problem(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: ProblemCode
    detail: str = Field(description="One sentence for a person or a model.")
    facts: dict[str, Any] = Field(default_factory=dict)


class CitationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    document_id: str
    clause: str
    version: int | None
    ok: bool = Field(description="No problem but support_unchecked.")
    problems: list[Problem]
    current_version: int | None = Field(
        None, description="The version the index holds (null: no such document, or deleted).")
    chunk_id: str | None = Field(None, description="The current clause's chunk, when found "
                                 "and the caller may see it.")

    @property
    def codes(self) -> list[str]:
        return [p.code for p in self.problems]


class CheckResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: bool = Field(description="Every citation ok.")
    run_id: str | None
    scope: list[str]
    as_of: date
    results: list[CitationResult]


class StateReader(Protocol):
    def get_state(self, document_id: str) -> DocumentState | None: ...


_CLAUSE_PREFIX = re.compile(r"^(?:§+|section|clause|art(?:icle)?\.?)\s*", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def clause_key(clause: str) -> str:
    """A clause as compared: case folded, '§'/'section' and a trailing dot dropped."""
    return _CLAUSE_PREFIX.sub("", clause.strip()).strip().rstrip(".").casefold()


def fold(text: str) -> str:
    """Case folded, every whitespace run one space, no edge spaces: how quotes compare."""
    return _SPACE.sub(" ", text.casefold()).strip()


def clause_text(chunk: Chunk) -> str:
    """What a clause says, as checked: its heading and its text."""
    heading = chunk.heading_path[-1] if chunk.heading_path else ""
    return f"{heading}\n{chunk.text}"


def _section_of(chunk_id: str) -> str:
    return chunk_id.rpartition("#")[2]


def _today() -> date:
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class _Order:
    scope: tuple[str, ...]
    as_of: date


class CitationChecker:
    """Checks citations against the index (states and chunks) and the run log."""

    def __init__(
        self,
        states: StateReader,
        chunks: ChunkReader,
        run_log: RunLog | None,
        *,
        clock: Callable[[], date] = _today,
    ) -> None:
        self.states = states
        self.chunks = chunks
        self.run_log = run_log
        self.clock = clock

    def check(self, request: CheckRequest, caller: Caller) -> CheckResponse:
        """Every citation of ``request`` for ``caller``; ``UnknownRun`` for a run it lacks."""
        run = self._run(request.run_id, caller)
        scope = request.scope if request.scope is not None else (
            list(run.scope) if run is not None else [])
        as_of = request.as_of or (run.as_of if run is not None else self.clock())
        order = _Order(tuple(scope), as_of)
        results = [self._check_one(c, caller, run, order) for c in request.citations]
        return CheckResponse(ok=all(r.ok for r in results), run_id=request.run_id,
                             scope=scope, as_of=as_of, results=results)

    def _run(self, run_id: str | None, caller: Caller) -> SearchRun | None:
        if run_id is None:
            return None
        run = self.run_log.get(run_id, caller.key_id) if self.run_log is not None else None
        if run is None:
            raise UnknownRun(f"run_id {run_id!r}: no search run of this caller has that id "
                             "(never recorded, older than the retention, or another caller's)")
        return run

    def _check_one(self, citation: Citation, caller: Caller, run: SearchRun | None,
                   order: _Order) -> CitationResult:
        problems: list[Problem] = []
        key = clause_key(citation.clause)
        returned = [p for p in (run.passages if run is not None else ())
                    if p.document_id == citation.document_id
                    and key in (clause_key(p.clause), clause_key(_section_of(p.chunk_id)))]
        if run is not None and not returned:
            problems.append(Problem(
                code="not_returned",
                detail=f"the run {run.run_id} did not return {citation.document_id} "
                       f"§{citation.clause} (ranked or neighbour)",
                facts={"run_id": run.run_id}))
        state = self.states.get_state(citation.document_id)
        chunk_id = None
        if state is None or state.deleted:
            problems.insert(0, _unknown_document(citation, state))
        else:
            current, more = self._current_clause(citation, state, key, returned)
            problems += more
            filters = SearchFilters(order.as_of, order.scope, caller.labels)
            if current is not None and not filters.admits_labels(current):
                problems.append(Problem(
                    code="not_permitted",
                    detail="the caller's labels do not cover this clause; nothing of it is "
                           "checked or shown"))
            elif current is not None:
                chunk_id = current.chunk_id
                problems += _superseded(citation, current, returned, state)
                problems += _fit(citation, current, filters, order)
        problems.append(Problem(
            code="support_unchecked",
            detail="whether the clause supports the claim's meaning is not checked here"))
        return CitationResult(
            document_id=citation.document_id, clause=citation.clause, version=citation.version,
            ok=all(p.code == "support_unchecked" for p in problems), problems=problems,
            current_version=state.version if state is not None and not state.deleted else None,
            chunk_id=chunk_id)

    def _current_clause(self, citation: Citation, state: DocumentState, key: str,
                        returned: list[RunPassage]) -> tuple[Chunk | None, list[Problem]]:
        if citation.version is not None and citation.version > state.version:
            return None, [Problem(
                code="unknown_version",
                detail=f"{citation.document_id} v{citation.version} is newer than the index's "
                       f"v{state.version}",
                facts={"cited_version": citation.version, "current_version": state.version})]
        chunks = [c for c in self.chunks.read_chunks(state.chunk_ids)
                  if c.version == state.version]
        found = next((c for c in chunks if key in (clause_key(clause_of(c)),
                                                   clause_key(c.section))), None)
        if found is not None:
            return found, []
        earlier = sorted({p.version for p in returned if p.version != state.version})
        return None, [Problem(
            code="unknown_clause",
            detail=f"{citation.document_id} v{state.version} has no clause "
                   f"{citation.clause!r}" + (
                       f"; the run returned it at v{', v'.join(map(str, earlier))}"
                       if earlier else "; whether an earlier version had it is unknown "
                       "(the index keeps only the current version's text)"),
            facts={"current_version": state.version,
                   "existed_earlier": "yes" if earlier else "unknown",
                   "earlier_versions": earlier})]


def _unknown_document(citation: Citation, state: DocumentState | None) -> Problem:
    if state is None:
        return Problem(code="unknown_document",
                       detail=f"the index has never held {citation.document_id!r}",
                       facts={"existed": False})
    return Problem(
        code="unknown_document",
        detail=f"{citation.document_id!r} existed and was deleted at the source "
               f"(tombstone at v{state.version})",
        facts={"existed": True, "deleted": True, "deleted_version": state.version,
               "deleted_changed_at": state.changed_at.isoformat()})


def _superseded(citation: Citation, chunk: Chunk, returned: list[RunPassage],
                state: DocumentState) -> list[Problem]:
    """A cited version older than the current one; did the clause's text change since?"""
    if citation.version is None or citation.version >= chunk.version:
        return []
    cited = [p for p in returned if p.version == citation.version]
    changed: bool | str = "unknown"
    if cited:
        changed = cited[0].text_sha256 != text_hash(chunk.text)
    return [Problem(
        code="superseded",
        detail=f"v{citation.version} is superseded: the index holds v{chunk.version}; "
               + ("the clause's text changed" if changed is True else
                  "the clause's text is the same" if changed is False else
                  "whether the clause's text changed is unknown (no text of "
                  f"v{citation.version} in the run)"),
        facts={"cited_version": citation.version, "current_version": chunk.version,
               "text_changed": changed, "changed_at": state.changed_at.isoformat()})]


def _fit(citation: Citation, chunk: Chunk, filters: SearchFilters,
         order: _Order) -> list[Problem]:
    """The problems of a clause the caller may see: the order's scope and date, the quote
    and the claim's numbers."""
    problems: list[Problem] = []
    meta = chunk.metadata
    if not filters.admits_scope(chunk):
        problems.append(Problem(
            code="out_of_scope",
            detail=f"the clause applies to {', '.join(meta.scope)}, not to the order's "
                   f"{', '.join(order.scope)}",
            facts={"clause_scope": list(meta.scope), "order_scope": list(order.scope)}))
    if not filters.admits_date(chunk):
        problems.append(Problem(
            code="not_valid_on_date",
            detail=f"the clause is valid {_validity(meta.valid_from, meta.valid_to)}, not on "
                   f"{order.as_of}",
            facts={"valid_from": _iso(meta.valid_from), "valid_to": _iso(meta.valid_to),
                   "as_of": order.as_of.isoformat()}))
    said = clause_text(chunk)
    if citation.quote is not None and fold(citation.quote) not in fold(said):
        problems.append(Problem(
            code="quote_not_found",
            detail="the quote is not in the clause (case and whitespace ignored)"))
    if citation.claim is not None:
        missing = missing_numbers(citation.claim, said)
        if missing:
            problems.append(Problem(
                code="number_not_in_clause",
                detail=f"the claim's {', '.join(repr(n.text) for n in missing)} "
                       f"{'is' if len(missing) == 1 else 'are'} not in the clause",
                facts={"numbers": [n.text for n in missing]}))
    return problems


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day is not None else None


def _validity(start: date | None, end: date | None) -> str:
    if start and end:
        return f"from {start} to {end}"
    if start:
        return f"from {start}"
    return f"until {end}" if end else "on any date"
