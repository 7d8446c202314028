"""The question sets in eval/ (Mozilla en/de/fr, legalmattic) pass the shared validator's checks.

The validator (``../shared/eval/check_qa.py``) was written for the Basecamp set:
its ids look like ``bc01`` and its set-level minimums (40 answerable rows over 18
documents, 10 unanswerable) are that set's size. Every per-row check (keys, kind,
profile, one-line question, document in the final library, evidence found exactly
once in its body and in no other document, not cutting a word nor crossing a
heading, nearest heading, the paraphrase rules) is run here unchanged; only the
id pattern and the minimums are set to this set's own (see eval/README.md).

The validator's paraphrase measure is English-only (ASCII ``[a-z0-9]+`` tokens,
English stop words), so German and French paraphrase rows are also measured in
their own language: Unicode words, that language's stop words, Snowball stems.

The legalmattic set (eval/legalmattic-qa.jsonl over eval/legalmattic.jsonl.gz, which
eval/make_changelog.py made from Automattic/legalmattic) is checked the same way: ids
``lmNN``, and the validator's minimum of 18 documents set to the 6 documents of that
library that have Markdown (ATX) headings; its other minimums (40 answerable, 10
unanswerable) are the validator's own.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = pytest.mark.corpus

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared"
CHANGE_LOG = SHARED / "corpora" / "mozilla-legal-docs.jsonl.gz"
VALIDATOR = SHARED / "eval" / "check_qa.py"
EVAL = REPO / "eval"
LANGUAGES = {"en": "english", "de": "german", "fr": "french"}
MIN_ANSWERABLE = 15
UNANSWERABLE = range(3, 6)  # 3 to 5 rows
MIN_DOCUMENTS = 11


def qa_file(lang: str) -> Path:
    return EVAL / f"mozilla-{lang}-qa.jsonl"


def read_rows(lang: str) -> list[dict[str, Any]]:
    with qa_file(lang).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def check_qa() -> Iterator[ModuleType]:
    """The shared validator, imported from its file (it is a script, not a package)."""
    if not VALIDATOR.is_file():
        pytest.skip(f"the shared validator is not at {VALIDATOR} (it comes with ../shared)")
    if not CHANGE_LOG.is_file():
        pytest.skip(f"the Mozilla change log is not at {CHANGE_LOG} (it comes with ../shared)")
    spec = importlib.util.spec_from_file_location("check_qa", VALIDATOR)
    if spec is None or spec.loader is None:
        pytest.fail(f"cannot import {VALIDATOR}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_qa"] = module  # its dataclass looks its module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("check_qa", None)


@pytest.fixture(scope="module")
def final(check_qa: ModuleType) -> dict[str, str]:
    """Final content by document id, from the validator's own replay."""
    content, _, _ = check_qa.replay(CHANGE_LOG)
    return dict(content)


@pytest.fixture(scope="module")
def library(check_qa: ModuleType, final: dict[str, str]) -> Any:
    # Without the earlier versions: they only feed the validator's count of spans new
    # in the final version (a report, not a rule), and collapsing all ~6,500 of them
    # is most of its 10-20 s.
    return check_qa.Library(final, {})


def row_checks(check_qa: ModuleType, library: Any, rows: list[dict[str, Any]],
               file_name: str) -> tuple[list[str], list[str], Any]:
    """The validator's check of every row, and no id used twice: (errors, warnings, tally)."""
    errors: list[str] = []
    warnings: list[str] = []
    tally = check_qa.Tally()
    for n, row in enumerate(rows, 1):
        where = f"{file_name} line {n} ({row.get('id')})"
        check_qa.check_row(
            library,
            row,
            tally,
            err=lambda msg, where=where: errors.append(f"{where}: {msg}"),
            warn=lambda msg, where=where: warnings.append(f"{where}: {msg}"),
        )
    ids = collections.Counter(row["id"] for row in rows)
    errors += [f"id {i!r} is used {c} times" for i, c in ids.items() if c > 1]
    return errors, warnings, tally


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_every_row_passes_the_validators_row_checks(
    check_qa: ModuleType, library: Any, lang: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The one Basecamp-specific row rule: ids here are moz-<lang>-NN.
    monkeypatch.setattr(check_qa, "ID_RE", re.compile(rf"moz-{lang}-\d{{2,}}"))
    rows = read_rows(lang)
    errors, warnings, tally = row_checks(check_qa, library, rows, qa_file(lang).name)
    # The set-level rules at this set's size; the low-overlap share is the validator's.
    monkeypatch.setattr(check_qa, "MIN_ANSWERABLE", MIN_ANSWERABLE)
    monkeypatch.setattr(check_qa, "MIN_DOCS", MIN_DOCUMENTS)
    monkeypatch.setattr(check_qa, "MIN_UNANSWERABLE", UNANSWERABLE.start)
    check_qa.check_set(tally, errors)
    if tally.unanswerable not in UNANSWERABLE:
        errors.append(f"{tally.unanswerable} no-document rows, want 3-5")
    assert errors == [], "\n".join(errors)
    assert warnings == [], "\n".join(warnings)


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_questions_ask_about_documents_in_their_own_language(lang: str) -> None:
    wrong = [
        (row["id"], row["document_id"])
        for row in read_rows(lang)
        if row["document_id"] is not None and not row["document_id"].startswith(f"{lang}/")
    ]
    assert wrong == []


def test_the_three_sets_ask_about_the_same_clauses() -> None:
    """Row N asks about the same policy and kind in every language, so recall compares."""

    def grid(lang: str) -> list[tuple[str | None, str]]:
        return [
            (row["document_id"] and row["document_id"].split("/", 1)[1], row["kind"])
            for row in read_rows(lang)
        ]

    assert grid("de") == grid("en")
    assert grid("fr") == grid("en")


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_every_evidence_span_lies_inside_one_chunk(lang: str, final: dict[str, str]) -> None:
    """A hit needs the span inside one ranked chunk: a span the chunker cuts is unreachable."""
    from chunker import chunk_document

    def collapse(text: str) -> str:
        return " ".join(text.split())

    cut = []
    for row in read_rows(lang):
        if row["evidence"] is None:
            continue
        chunks = chunk_document(row["document_id"], 1, final[row["document_id"]])
        if not any(collapse(row["evidence"]) in collapse(chunk.text) for chunk in chunks):
            cut.append(row["id"])
    assert cut == []


@dataclass(frozen=True)
class Analyser:
    """Content words of one language: Unicode words, its stop words, Snowball stems."""

    stop: frozenset[str]
    stem: Callable[[str], str]

    @classmethod
    def of(cls, lang: str) -> Analyser:
        stemmer_module = pytest.importorskip("Stemmer")
        stopwords = pytest.importorskip("stopwords")
        stemmer = stemmer_module.Stemmer(LANGUAGES[lang])
        return cls(frozenset(stopwords.get_stopwords(lang)), stemmer.stemWord)

    @staticmethod
    def words(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    def content(self, text: str) -> set[str]:
        # Words of one or two letters are elisions and articles (l', d', j', de, un, à)
        # that the stopwords package's French list lacks.
        return {self.stem(w) for w in self.words(text) if w not in self.stop and len(w) > 2}


def copied_run(question: list[str], source: list[str], n: int = 4) -> str | None:
    grams = {tuple(source[i : i + n]) for i in range(len(source) - n + 1)}
    for i in range(len(question) - n + 1):
        if tuple(question[i : i + n]) in grams:
            return " ".join(question[i : i + n])
    return None


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_paraphrase_rows_are_paraphrases_in_their_own_language(lang: str) -> None:
    analyser = Analyser.of(lang)
    problems = []
    for row in read_rows(lang):
        if row["kind"] != "paraphrase":
            continue
        question = analyser.content(row["question"])
        shared = question & analyser.content(row["evidence"])
        if not question or Fraction(len(shared), len(question)) > Fraction(1, 3):
            problems.append(f"{row['id']} shares {sorted(shared)} of {len(question)} words")
        for source in (row["evidence"], row["heading"]):
            run = copied_run(analyser.words(row["question"]), analyser.words(source))
            if run:
                problems.append(f"{row['id']} copies {run!r}")
    assert problems == []


# --- legalmattic: a third library (Automattic/legalmattic), English only -------------------

LEGALMATTIC_LOG = EVAL / "legalmattic.jsonl.gz"
LEGALMATTIC_QA = EVAL / "legalmattic-qa.jsonl"
# The library's 10 documents at the end, of which 6 have ATX headings (the validator's
# heading rule needs one above every span); the other 4 cannot hold evidence.
LEGALMATTIC_DOCUMENTS = 6
LEGALMATTIC_KINDS = {
    "paraphrase": 13,
    "exception": 10,
    "numeric": 6,
    "keyword": 5,
    "multi-hop": 6,
    "no-document": 10,
}


def legalmattic_rows() -> list[dict[str, Any]]:
    with LEGALMATTIC_QA.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def legalmattic_final(check_qa: ModuleType) -> dict[str, str]:
    content, _, _ = check_qa.replay(LEGALMATTIC_LOG)
    return dict(content)


def test_legalmattic_rows_pass_the_validators_checks(
    check_qa: ModuleType, legalmattic_final: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check_qa, "ID_RE", re.compile(r"lm\d{2,}"))
    library = check_qa.Library(legalmattic_final, {})
    rows = legalmattic_rows()
    errors, warnings, tally = row_checks(check_qa, library, rows, LEGALMATTIC_QA.name)
    questions = collections.Counter(row["question"].strip().lower() for row in rows)
    errors += [f"question repeated: {q!r}" for q, c in questions.items() if c > 1]
    monkeypatch.setattr(check_qa, "MIN_DOCS", LEGALMATTIC_DOCUMENTS)
    check_qa.check_set(tally, errors)
    assert errors == [], "\n".join(errors)
    assert warnings == [], "\n".join(warnings)
    assert dict(tally.kinds) == LEGALMATTIC_KINDS
    assert len(tally.docs) == LEGALMATTIC_DOCUMENTS


def test_legalmattic_evidence_lies_inside_one_chunk(legalmattic_final: dict[str, str]) -> None:
    from chunker import chunk_document

    def collapse(text: str) -> str:
        return " ".join(text.split())

    cut = []
    for row in legalmattic_rows():
        if row["evidence"] is None:
            continue
        chunks = chunk_document(row["document_id"], 1, legalmattic_final[row["document_id"]])
        if not any(collapse(row["evidence"]) in collapse(chunk.text) for chunk in chunks):
            cut.append(row["id"])
    assert cut == []


def test_legalmattic_change_log_is_in_the_corpora_format() -> None:
    """seq from 1, versions counted per id across deletes, deletes without content."""
    import gzip

    versions: collections.Counter[str] = collections.Counter()
    with gzip.open(LEGALMATTIC_LOG, "rt", encoding="utf-8") as f:
        events = [json.loads(line) for line in f]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    for e in events:
        versions[e["document_id"]] += 1
        assert e["version"] == versions[e["document_id"]], e["seq"]
        assert e["action"] in ("upsert", "delete")
        assert ("content" in e) == (e["action"] == "upsert"), e["seq"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", e["changed_at"])
        assert re.fullmatch(r"[0-9a-f]{12}", e["commit"])
        assert e["document_id"] == e["path"].removesuffix(".md").removesuffix("/index")
    assert [e["changed_at"] for e in events] == sorted(e["changed_at"] for e in events)
