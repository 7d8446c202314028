"""Retrieval on its own, measured: recall@k, MRR, refusals, permission leaks, latency.

Rows are in the format of ``../shared/eval/basecamp-qa.jsonl`` (its README
defines a hit): an answerable row is a hit at k when one of the first k
*ranked* passages (``via == "ranked"``; appended neighbours never count) comes
from the row's ``document_id`` and contains its ``evidence``, both compared
after collapsing every run of whitespace to one space.

Each row is asked once with ``k = max(ks)`` under its profile's labels; recall
at smaller k reads the prefix of that ranking (the ranking does not depend on
k). What is reported, overall, per ``kind`` and per ``profile``:

- recall@k and MRR (reciprocal rank of the first hit within ``max(ks)``);
- the no-document rate: unanswerable rows the tool refused (any status but
  ``ok``) over all unanswerable rows;
- refusals of answerable rows, and of those the *unnecessary* ones: given a
  second searcher over the same index with the threshold off
  (``unthresholded``), a refused row is an unnecessary refusal when that
  searcher ranks a hit within ``refusal_k`` (default 5). The re-run is the only
  honest way to know the right chunk "would have been there"; without it the
  count is ``None`` (not measured) and only the refusals are reported;
- permission leaks: any returned passage, ranked or neighbour, whose
  ``access_labels`` are not all among the profile's labels (must be 0);
- latency p50/p95 of the searches as the caller sees them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from retrieval.credentials import Credentials
from retrieval.models import MAX_K, Passage, SearchRequest, SearchResponse
from retrieval.searcher import Searcher

DEFAULT_KS = (1, 3, 5, 10)
NO_DOCUMENT_KIND = "no-document"
_SPACES = re.compile(r"\s+")


class EvalInputError(ValueError):
    """A question set or a profile that cannot be evaluated; names line and field."""


class QaRow(BaseModel):
    """One question of the set, as its README defines it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    document_id: str | None
    evidence: str | None
    heading: str | None
    kind: str = Field(min_length=1)
    profile: str = Field(min_length=1)

    @model_validator(mode="after")
    def _answerable_or_not(self) -> QaRow:
        fields = {"document_id": self.document_id, "evidence": self.evidence}
        if self.kind == NO_DOCUMENT_KIND:
            given = [name for name, value in fields.items() if value is not None]
            if given:
                raise ValueError(f"a {NO_DOCUMENT_KIND!r} row must have null {', '.join(given)}")
        else:
            missing = [name for name, value in fields.items() if not value]
            if missing:
                raise ValueError(
                    f"kind {self.kind!r} is answerable: {', '.join(missing)} must be set "
                    f"(or kind {NO_DOCUMENT_KIND!r})"
                )
        return self

    @property
    def answerable(self) -> bool:
        return self.document_id is not None


def parse_rows(lines: Iterable[str], source: str = "<rows>") -> list[QaRow]:
    """Validate JSON lines; the first bad line stops it, named ``source:line``."""
    rows: list[QaRow] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvalInputError(f"{where}: not valid JSON: {exc.msg} (column {exc.colno})"
                                 ) from exc
        if not isinstance(data, dict):
            raise EvalInputError(f"{where}: expected a JSON object, got {type(data).__name__}")
        try:
            row = QaRow.model_validate(data)
        except ValidationError as exc:
            raise EvalInputError(f"{where}: {_describe(exc)}") from exc
        if row.id in seen:
            raise EvalInputError(f"{where}: id={row.id!r} already used on line {seen[row.id]}")
        seen[row.id] = number
        rows.append(row)
    if not rows:
        raise EvalInputError(f"{source}: no rows")
    return rows


def profiles_named_after_labels(rows: Iterable[QaRow]) -> dict[str, frozenset[str]]:
    """Each profile of the rows sees exactly the label of its own name (``public``)."""
    return {row.profile: frozenset({row.profile}) for row in rows}


def profiles_from_credentials(credentials: Credentials) -> dict[str, frozenset[str]]:
    """One profile per configured API key id, with that key's labels: measure as callers see."""
    return {key_id: credentials.resolve_id(key_id).labels for key_id in credentials.key_ids}


def load_rows(path: Path) -> list[QaRow]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvalInputError(f"{path}: {exc.strerror}") from exc
    return parse_rows(text.splitlines(), source=str(path))


@dataclass(frozen=True)
class Recall:
    """Recall@k and MRR over the answerable rows of one group."""

    answerable: int
    hits: dict[int, int]
    recall: dict[int, float]
    mrr: float


@dataclass(frozen=True)
class Leak:
    row_id: str
    profile: str
    chunk_id: str
    document_id: str
    access_labels: list[str]


@dataclass(frozen=True)
class RowResult:
    id: str
    kind: str
    profile: str
    status: str
    rank: int | None  # 1-based rank of the first hit among ranked passages
    refused: bool
    unnecessary_refusal: bool | None
    leaks: int
    seconds: float


@dataclass(frozen=True)
class EvalReport:
    ks: tuple[int, ...]
    refusal_k: int
    overall: Recall
    by_kind: dict[str, Recall]
    by_profile: dict[str, Recall]
    unanswerable: int
    unanswerable_refused: int
    no_document_rate: float | None
    answerable_refused: int
    unnecessary_refusals: int | None  # None: no unthresholded searcher, not measured
    leaks: list[Leak]
    latency_p50_ms: float
    latency_p95_ms: float
    rows: list[RowResult]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def render(self) -> str:
        """The readable view: one table of recall, then refusals, leaks and latency."""
        header = f"{'':18}{'rows':>6}" + "".join(f"{'R@' + str(k):>8}" for k in self.ks)
        lines = [header + f"{'MRR':>8}"]

        def line(name: str, recall: Recall) -> str:
            cells = "".join(f"{recall.hits[k]:>3}{recall.recall[k]:>5.0%}" for k in self.ks)
            return f"{name:18}{recall.answerable:>6}{cells}{recall.mrr:>8.3f}"

        lines.append(line("all answerable", self.overall))
        lines += [line(f"kind {kind}", r) for kind, r in sorted(self.by_kind.items())]
        lines += [line(f"profile {name}", r) for name, r in sorted(self.by_profile.items())]
        rate = "n/a" if self.no_document_rate is None else f"{self.no_document_rate:.0%}"
        lines.append(f"no document: {self.unanswerable_refused}/{self.unanswerable} "
                     f"unanswerable rows refused ({rate})")
        unnecessary = ("not measured (no unthresholded searcher)"
                       if self.unnecessary_refusals is None else
                       f"{self.unnecessary_refusals} unnecessary (a hit in the top "
                       f"{self.refusal_k} with the threshold off)")
        lines.append(f"refused answerable: {self.answerable_refused}/{self.overall.answerable}; "
                     f"{unnecessary}")
        lines.append(f"permission leaks: {len(self.leaks)}")
        lines += [f"  LEAK {leak.row_id} ({leak.profile}): {leak.chunk_id} needs "
                  f"{leak.access_labels}" for leak in self.leaks]
        lines.append(f"latency: p50 {self.latency_p50_ms:.1f} ms, p95 {self.latency_p95_ms:.1f} "
                     f"ms over {len(self.rows)} searches")
        return "\n".join(lines)


def evaluate(
    searcher: Searcher,
    rows: Sequence[QaRow],
    profiles: Mapping[str, frozenset[str]],
    ks: Sequence[int] = DEFAULT_KS,
    *,
    unthresholded: Searcher | None = None,
    refusal_k: int = 5,
    as_of: date | None = None,
) -> EvalReport:
    """Ask every row under its profile's labels and score the answers (module docstring)."""
    ks = tuple(sorted(set(ks)))
    if not ks or ks[0] < 1 or ks[-1] > MAX_K:
        raise EvalInputError(f"ks={list(ks)}: each k must be between 1 and {MAX_K}")
    if not 1 <= refusal_k <= MAX_K:
        raise EvalInputError(f"refusal_k={refusal_k} must be between 1 and {MAX_K}")
    unknown = sorted({row.profile for row in rows} - set(profiles))
    if unknown:
        raise EvalInputError(
            f"profile(s) {unknown} used by the rows are not configured; known: {sorted(profiles)}"
        )
    depth = max(ks[-1], refusal_k)
    results: list[RowResult] = []
    leaks: list[Leak] = []
    for row in rows:
        labels = profiles[row.profile]
        request = SearchRequest(question=row.question, k=depth, as_of=as_of)
        started = time.perf_counter()
        response = searcher.search(request, labels)
        seconds = time.perf_counter() - started
        row_leaks = _leaks(row, response, labels)
        leaks += row_leaks
        refused = response.status != "ok"
        rank = first_hit_rank(row, response.passages) if row.answerable else None
        unnecessary: bool | None = None
        if row.answerable and refused and unthresholded is not None:
            again = unthresholded.search(request, labels)
            leaks += _leaks(row, again, labels)
            second = first_hit_rank(row, again.passages)
            unnecessary = second is not None and second <= refusal_k
        elif row.answerable and unthresholded is not None:
            unnecessary = False
        results.append(RowResult(row.id, row.kind, row.profile, response.status, rank, refused,
                                 unnecessary, len(row_leaks), seconds))
    return _report(ks, refusal_k, results, leaks, measured=unthresholded is not None)


def first_hit_rank(row: QaRow, passages: Sequence[Passage]) -> int | None:
    """1-based rank of the first ranked passage that is a hit for ``row``, else None."""
    if row.document_id is None or row.evidence is None:
        return None
    evidence = collapse(row.evidence)
    ranked = [p for p in passages if p.via == "ranked"]
    for rank, passage in enumerate(ranked, start=1):
        if passage.document_id == row.document_id and evidence in collapse(passage.text):
            return rank
    return None


def collapse(text: str) -> str:
    return _SPACES.sub(" ", text)


def _leaks(row: QaRow, response: SearchResponse, labels: frozenset[str]) -> list[Leak]:
    return [Leak(row.id, row.profile, p.chunk_id, p.document_id, sorted(p.access_labels))
            for p in response.passages if not set(p.access_labels) <= labels]


def _recall(results: Sequence[RowResult], ks: tuple[int, ...]) -> Recall:
    answerable = [r for r in results if r.kind != NO_DOCUMENT_KIND]
    n = len(answerable)
    hits = {k: sum(1 for r in answerable if r.rank is not None and r.rank <= k) for k in ks}
    mrr = sum(1.0 / r.rank for r in answerable if r.rank is not None and r.rank <= ks[-1])
    return Recall(n, hits, {k: hits[k] / n if n else 0.0 for k in ks}, mrr / n if n else 0.0)


def _report(
    ks: tuple[int, ...], refusal_k: int, results: list[RowResult], leaks: list[Leak],
    *, measured: bool,
) -> EvalReport:
    answerable = [r for r in results if r.kind != NO_DOCUMENT_KIND]
    unanswerable = [r for r in results if r.kind == NO_DOCUMENT_KIND]
    kinds = sorted({r.kind for r in answerable})
    profiles = sorted({r.profile for r in results})
    seconds = np.array([r.seconds for r in results]) * 1000.0
    refused_unanswerable = sum(1 for r in unanswerable if r.refused)
    return EvalReport(
        ks=ks,
        refusal_k=refusal_k,
        overall=_recall(results, ks),
        by_kind={kind: _recall([r for r in answerable if r.kind == kind], ks) for kind in kinds},
        by_profile={p: _recall([r for r in results if r.profile == p], ks) for p in profiles},
        unanswerable=len(unanswerable),
        unanswerable_refused=refused_unanswerable,
        no_document_rate=refused_unanswerable / len(unanswerable) if unanswerable else None,
        answerable_refused=sum(1 for r in answerable if r.refused),
        unnecessary_refusals=(sum(1 for r in answerable if r.unnecessary_refusal)
                              if measured else None),
        leaks=leaks,
        latency_p50_ms=float(np.percentile(seconds, 50)),
        latency_p95_ms=float(np.percentile(seconds, 95)),
        rows=results,
    )


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"])
        value = json.dumps(err.get("input"), default=str)
        if len(value) > 80:
            value = value[:80] + "..."
        where = f"field {loc}" if loc else "row"
        parts.append(f"{where}: {err['msg']} (value {value})")
    return "; ".join(parts)
