"""check_citations on every store: memory, SQLite and Elasticsearch (``services``).

Each case searches through ``RecordingSearcher`` (the run is recorded in the store's
own kind of run log), then checks a citation the way a dispatcher would: ok for a
returned clause, and each problem code with its facts, including a document updated
after the search (``superseded``, text changed or not) and one deleted after it
(``unknown_document``, said to have existed). A property test: a citation built from
any passage a run returned, with its version and a quote cut from its text, is ok.
"""

from __future__ import annotations

import contextlib
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from support.chunks import make_chunk
from support.stores import ready_sqlite_store

from chunker.model import Chunk
from retrieval.citations import (
    CheckRequest,
    CheckResponse,
    Citation,
    CitationChecker,
    UnknownRun,
)
from retrieval.credentials import Caller
from retrieval.metrics import RunLogMetrics
from retrieval.models import SearchRequest, SearchResponse
from retrieval.recording import RecordingSearcher
from retrieval.runs import MemoryRunLog, RunLog, RunLogError, SearchRun
from retrieval.runs_es import ElasticsearchRunLog
from retrieval.runs_sqlite import SQLiteRunLog
from retrieval.searcher import search_as
from retrieval.service import SearchService
from store.elasticsearch import ElasticsearchStore
from store.es_search import ElasticsearchSearchIndex
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.model import DocumentState
from store.sqlite_search import SQLiteSearchIndex

T0 = datetime(2027, 1, 1, tzinfo=UTC)
DAY = date(2027, 4, 1)
BOT = Caller("support-bot", frozenset({"public"}))
OTHER = Caller("finance-desk", frozenset({"public", "finance"}))


@dataclass
class Library:
    """A store, its search view and a run log of the same kind; written as the worker does."""

    store: Any
    search: Any
    runs: RunLog

    def add(self, chunks: Sequence[Chunk]) -> None:
        self.store.write_chunks(chunks)
        for doc in dict.fromkeys(c.document_id for c in chunks):
            mine = [c for c in chunks if c.document_id == doc]
            version = max(c.version for c in mine)
            old = self.store.get_state(doc)
            self.store.put_state(DocumentState(doc, version, T0, T0,
                                               tuple(c.chunk_id for c in mine)))
            if old is not None:  # the delete step: older versions go
                self.store.delete_chunks(old.chunk_ids)
        self.store.refresh()

    def delete(self, doc: str, version: int) -> None:
        old = self.store.get_state(doc)
        self.store.put_state(DocumentState(doc, version, T0, T0, (), deleted=True))
        if old is not None:
            self.store.delete_chunks(old.chunk_ids)
        self.store.refresh()

    def searcher(self, run_log: RunLog | None = None) -> RecordingSearcher:
        service = SearchService(self.search, None, clock=lambda: DAY, threshold=-1.0,
                                keyword_threshold=-1.0)
        return RecordingSearcher(service, run_log or self.runs)

    def checker(self) -> CitationChecker:
        return CitationChecker(self.store, self.search, self.runs, clock=lambda: DAY)


@contextlib.contextmanager
def _memory(_request: pytest.FixtureRequest) -> Iterator[Library]:
    store = InMemoryStore()
    yield Library(store, InMemorySearchIndex(store), MemoryRunLog())


@contextlib.contextmanager
def _sqlite_at(folder: Path) -> Iterator[Library]:
    runs = SQLiteRunLog(folder / "search_runs.sqlite3")
    runs.ensure_ready()
    try:
        with ready_sqlite_store(folder) as store:
            yield Library(store, SQLiteSearchIndex(store), runs)
    finally:
        runs.close()


@contextlib.contextmanager
def _sqlite(request: pytest.FixtureRequest) -> Iterator[Library]:
    with _sqlite_at(request.getfixturevalue("tmp_path")) as library:
        yield library


@contextlib.contextmanager
def _elasticsearch(request: pytest.FixtureRequest) -> Iterator[Library]:
    url = request.getfixturevalue("elasticsearch_url")
    made = ElasticsearchStore.connect(url, f"t{uuid.uuid4().hex[:12]}")
    store = ElasticsearchStore(made.client, made.names.prefix, vector_dims=8)
    store.ensure_ready()
    runs = ElasticsearchRunLog(store.client, made.names.prefix)
    runs.ensure_ready()
    try:
        yield Library(store, ElasticsearchSearchIndex(store), runs)
    finally:
        store.client.indices.delete(index=runs.index, ignore_unavailable=True)
        store.delete_everything()
        store.close()


@pytest.fixture(params=[
    pytest.param(_memory, id="memory"),
    pytest.param(_sqlite, id="sqlite"),
    pytest.param(_elasticsearch, id="elasticsearch", marks=pytest.mark.services),
])
def library(request: pytest.FixtureRequest) -> Iterator[Library]:
    with request.param(request) as made:
        made.add(LIBRARY)
        yield made


def clause(doc: str, heading: str, text: str, version: int = 1, **meta: Any) -> Chunk:
    section = heading.split(maxsplit=1)[0].replace(".", "-")
    return make_chunk(doc, version, section, text=text,
                      heading_path=[f"{doc} policy", heading],
                      metadata={"title": f"{doc} policy", "language": "en", **meta})


REFUND_TEXT = "Refunds for a late delivery are paid within 14 days of the complaint."
LIBRARY = [
    clause("refunds", "4.2 Late delivery", REFUND_TEXT),
    clause("refunds", "4.3 Damaged goods", "Damaged goods are replaced free of charge."),
    clause("couriers", "1 Berlin couriers", "Couriers in Berlin collect returns for 5 euros.",
           scope=["city:berlin"]),
    clause("promo", "1 Spring promotion", "A spring discount of 20% on every order.",
           valid_to=date(2027, 3, 31)),
    clause("staff", "1 Staff discount", "Staff get a secret discount of 30 percent.",
           access_labels=["finance"]),
]


def search(library: Library, question: str, caller: Caller = BOT, **kw: Any) -> SearchResponse:
    request = SearchRequest(question=question, as_of=kw.pop("as_of", DAY), **kw)
    return search_as(library.searcher(), request, caller, None)


def check(library: Library, *citations: Citation, caller: Caller = BOT,
          **kw: Any) -> CheckResponse:
    return library.checker().check(CheckRequest(citations=list(citations), **kw), caller)


def cite(doc: str, clause_id: str, **kw: Any) -> Citation:
    return Citation(document_id=doc, clause=clause_id, **kw)


def codes(response: CheckResponse) -> list[list[str]]:
    return [r.codes for r in response.results]


def facts(response: CheckResponse, code: str) -> dict[str, Any]:
    (problem,) = [p for p in response.results[0].problems if p.code == code]
    return problem.facts


def returned(response: SearchResponse, doc: str) -> Any:
    return next(p for p in response.passages if p.document_id == doc)


def test_a_returned_clause_cited_at_its_version_with_a_quote_and_its_numbers_is_ok(
    library: Library,
) -> None:
    answer = search(library, "refund for a late delivery", k=1)
    assert answer.run_id is not None
    passage = returned(answer, "refunds")
    assert passage.clause == "4.2"
    checked = check(library, cite("refunds", "4.2", version=passage.version,
                                  quote="paid  WITHIN 14\ndays",
                                  claim="A late delivery is refunded within fourteen days."),
                    run_id=answer.run_id)
    assert checked.ok
    assert codes(checked) == [["support_unchecked"]]
    assert checked.results[0].chunk_id == passage.chunk_id
    assert checked.results[0].current_version == 1


def test_a_clause_the_run_did_not_return(library: Library) -> None:
    answer = search(library, "refund for a late delivery", k=1, neighbours=False)
    checked = check(library, cite("refunds", "4.3", version=1), run_id=answer.run_id)
    assert not checked.ok
    assert codes(checked) == [["not_returned", "support_unchecked"]]
    # the same clause without a run: nothing to compare with, so no not_returned
    assert check(library, cite("refunds", "4.3", version=1)).ok


def test_update_then_superseded_says_the_current_version_and_that_the_text_changed(
    library: Library,
) -> None:
    answer = search(library, "refund for a late delivery", k=1)
    library.add([clause("refunds", "4.2 Late delivery", REFUND_TEXT.replace("14", "30"), 2),
                 clause("refunds", "4.3 Damaged goods", "Damaged goods are replaced.", 2)])
    checked = check(library, cite("refunds", "4.2", version=1), run_id=answer.run_id)
    assert codes(checked) == [["superseded", "support_unchecked"]]
    assert facts(checked, "superseded") | {"changed_at": None} == {
        "cited_version": 1, "current_version": 2, "text_changed": True, "changed_at": None}
    assert checked.results[0].current_version == 2
    # without the run, the old text is not known: said so, not guessed
    unknown = check(library, cite("refunds", "4.2", version=1))
    assert facts(unknown, "superseded")["text_changed"] == "unknown"


def test_superseded_with_the_same_text(library: Library) -> None:
    answer = search(library, "refund for a late delivery", k=1)
    library.add([clause("refunds", "4.2 Late delivery", REFUND_TEXT, 3)])
    checked = check(library, cite("refunds", "4.2", version=1), run_id=answer.run_id)
    assert facts(checked, "superseded")["text_changed"] is False


def test_a_clause_gone_from_the_current_version_existed_earlier_if_the_run_saw_it(
    library: Library,
) -> None:
    answer = search(library, "refund for a late delivery", k=1)
    library.add([clause("refunds", "5.1 Vouchers", "Vouchers instead of refunds.", 2)])
    checked = check(library, cite("refunds", "4.2", version=1), run_id=answer.run_id)
    assert codes(checked) == [["unknown_clause", "support_unchecked"]]
    assert facts(checked, "unknown_clause") == {
        "current_version": 2, "existed_earlier": "yes", "earlier_versions": [1]}
    never = check(library, cite("refunds", "9.9"))
    assert facts(never, "unknown_clause")["existed_earlier"] == "unknown"


def test_delete_then_unknown_document_said_to_have_existed(library: Library) -> None:
    answer = search(library, "refund for a late delivery", k=1)
    library.delete("refunds", 2)
    checked = check(library, cite("refunds", "4.2", version=1), run_id=answer.run_id)
    assert codes(checked) == [["unknown_document", "support_unchecked"]]
    assert facts(checked, "unknown_document") | {"deleted_changed_at": None} == {
        "existed": True, "deleted": True, "deleted_version": 2, "deleted_changed_at": None}
    never = check(library, cite("no-such-policy", "1"))
    assert facts(never, "unknown_document") == {"existed": False}


def test_a_version_newer_than_the_index(library: Library) -> None:
    checked = check(library, cite("refunds", "4.2", version=7))
    assert codes(checked) == [["unknown_version", "support_unchecked"]]
    assert facts(checked, "unknown_version") == {"cited_version": 7, "current_version": 1}


def test_a_clause_scoped_to_another_city(library: Library) -> None:
    checked = check(library, cite("couriers", "1"), scope=["city:paris"])
    assert codes(checked) == [["out_of_scope", "support_unchecked"]]
    assert facts(checked, "out_of_scope") == {"clause_scope": ["city:berlin"],
                                              "order_scope": ["city:paris"]}
    assert check(library, cite("couriers", "1"), scope=["city:berlin"]).ok


def test_the_order_scope_defaults_to_the_runs(library: Library) -> None:
    answer = search(library, "couriers collect returns", scope=["city:paris"])
    checked = check(library, cite("couriers", "1"), run_id=answer.run_id)
    assert "out_of_scope" in codes(checked)[0]
    assert checked.scope == ["city:paris"]


def test_an_expired_clause(library: Library) -> None:
    checked = check(library, cite("promo", "1"), as_of=date(2027, 4, 1))
    assert codes(checked) == [["not_valid_on_date", "support_unchecked"]]
    assert facts(checked, "not_valid_on_date") == {
        "valid_from": None, "valid_to": "2027-03-31", "as_of": "2027-04-01"}
    assert check(library, cite("promo", "1"), as_of=date(2027, 3, 31)).ok


def test_a_labelled_clause_for_a_caller_without_the_label_returns_none_of_it(
    library: Library,
) -> None:
    checked = check(library, cite("staff", "1", quote="secret discount",
                                  claim="Staff get 30 percent."))
    assert codes(checked) == [["not_permitted", "support_unchecked"]]
    text = checked.model_dump_json()
    assert "secret" not in text.replace("secret discount", "")  # only the caller's own quote
    assert "30 percent" not in text.replace("Staff get 30 percent.", "")
    assert checked.results[0].chunk_id is None
    allowed = check(library, cite("staff", "1", quote="secret discount",
                                  claim="Staff get thirty percent."), caller=OTHER)
    assert allowed.ok


def test_a_quote_with_one_word_changed(library: Library) -> None:
    checked = check(library, cite("refunds", "4.2",
                                  quote="Refunds for a late delivery are sent within 14 days"))
    assert codes(checked) == [["quote_not_found", "support_unchecked"]]


def test_a_claim_with_a_number_the_clause_does_not_have(library: Library) -> None:
    checked = check(library, cite("refunds", "4.2",
                                  claim="Late deliveries are refunded within 30 days."))
    assert codes(checked) == [["number_not_in_clause", "support_unchecked"]]
    assert facts(checked, "number_not_in_clause") == {"numbers": ["30"]}
    assert check(library, cite("refunds", "4.2", claim="within two weeks")).ok


def test_several_problems_and_several_citations(library: Library) -> None:
    answer = search(library, "refund for a late delivery", k=1, neighbours=False)
    checked = check(library, cite("refunds", "4.2", version=1, claim="in 14 days"),
                    cite("couriers", "1", quote="for 6 euros", claim="6 euros"),
                    run_id=answer.run_id, scope=["city:paris"])
    assert codes(checked) == [
        ["support_unchecked"],
        ["not_returned", "out_of_scope", "quote_not_found", "number_not_in_clause",
         "support_unchecked"]]
    assert not checked.ok


def test_a_run_of_another_caller_is_an_unknown_run(library: Library) -> None:
    answer = search(library, "refund for a late delivery", caller=OTHER)
    assert answer.run_id is not None
    with pytest.raises(UnknownRun, match="no search run of this caller"):
        check(library, cite("refunds", "4.2"), run_id=answer.run_id)
    assert check(library, cite("refunds", "4.2"), run_id=answer.run_id, caller=OTHER).ok
    with pytest.raises(UnknownRun):
        check(library, cite("refunds", "4.2"), run_id=uuid.uuid4().hex)


class _BrokenRunLog(MemoryRunLog):
    def record(self, run: SearchRun) -> None:
        raise RunLogError("disk full")


def test_a_run_log_write_failure_still_answers_the_search(library: Library) -> None:
    registry = CollectorRegistry()
    metrics = RunLogMetrics.create(registry)
    service = SearchService(library.search, None, clock=lambda: DAY)
    searcher = RecordingSearcher(service, _BrokenRunLog(), metrics=metrics)
    answer = search_as(searcher, SearchRequest(question="refund for a late delivery"), BOT,
                       None)
    assert answer.status == "ok"
    assert answer.passages
    assert answer.run_id is None
    assert registry.get_sample_value("policy_indexer_search_runs_total",
                                     {"outcome": "failed"}) == 1
    assert registry.get_sample_value("policy_indexer_search_runs_total",
                                     {"outcome": "recorded"}) == 0


def test_the_run_records_the_request_and_every_passage(library: Library) -> None:
    answer = search(library, "refund for a late delivery", k=1, scope=["city:berlin"])
    assert answer.run_id is not None
    run = library.runs.get(answer.run_id, BOT.key_id)
    assert run is not None
    assert (run.key_id, run.question, run.scope, run.as_of, run.labels) == (
        "support-bot", "refund for a late delivery", ("city:berlin",), DAY, ("public",))
    assert [(p.chunk_id, p.document_id, p.clause, p.version, p.via) for p in run.passages] == [
        (p.chunk_id, p.document_id, p.clause, p.version, p.via) for p in answer.passages]


# -- property: any returned passage, cited with its version and a quote from its text ---------

_TEXT = st.text(st.characters(categories=("L", "N", "P", "Zs"), include_characters="\n\tßİ"),
                min_size=1, max_size=120).filter(lambda t: t.strip())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(_TEXT, min_size=1, max_size=4), data=st.data(),
       sqlite=st.booleans())
def test_a_citation_built_from_a_returned_passage_is_always_ok(
    texts: list[str], data: st.DataObject, sqlite: bool,
) -> None:
    chunks = [clause("doc", f"{n + 1}.1 Part {n}", text) for n, text in enumerate(texts)]
    with contextlib.ExitStack() as stack:
        if sqlite:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            library = stack.enter_context(_sqlite_at(folder))
        else:
            store = InMemoryStore()
            library = Library(store, InMemorySearchIndex(store), MemoryRunLog())
        library.add(chunks)
        answer = search(library, "part " + texts[0][:50].replace("\n", " "), k=len(chunks))
        assert answer.status == "ok"
        for passage in answer.passages:
            text = passage.text
            start = data.draw(st.integers(0, len(text) - 1))
            end = data.draw(st.integers(start + 1, len(text)))
            quote = text[start:end]
            if not quote.strip():
                continue
            checked = check(library, cite(passage.document_id, passage.clause,
                                          version=passage.version, quote=quote, claim=text),
                            run_id=answer.run_id)
            assert checked.ok, (quote, checked.results[0].problems)
