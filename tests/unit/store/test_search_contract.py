"""One search contract, every store: memory, SQLite and Elasticsearch (``services``).

Filters are exact and inside the search: scope, dates, permission labels
(property-tested over random label sets), current version only; ``no_access``
(only when asked for) is told apart from ``no_document``; neighbours are appended, never counted;
every passage carries its provenance; bad input is refused naming the value.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from support.chunks import make_chunk
from support.stores import ready_sqlite_store

from chunker.model import Chunk, Neighbours
from embeddings.encoder import TextKind, Vectors
from embeddings.views import DenseView
from retrieval.models import MAX_QUESTION_CHARS, SearchRequest
from retrieval.service import SearchService
from store.elasticsearch import ElasticsearchStore
from store.es_search import ElasticsearchSearchIndex
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.model import DocumentState
from store.search_index import SearchFilters, SearchInputError
from store.sqlite import SQLiteStore
from store.sqlite_search import SQLiteSearchIndex

T0 = datetime(2027, 1, 1, tzinfo=UTC)
DAY = date(2027, 4, 1)
DIMS = 8


@dataclass
class Index:
    """A store and its search view, written through the store as the worker does."""

    store: Any
    search: Any

    def add(self, chunks: Sequence[Chunk], *, version: int | None = None) -> None:
        self.store.write_chunks(chunks)
        for doc in dict.fromkeys(c.document_id for c in chunks):
            mine = [c for c in chunks if c.document_id == doc]
            v = version or max(c.version for c in mine)
            self.store.put_state(DocumentState(doc, v, T0, T0, tuple(c.chunk_id for c in mine)))
        self.store.refresh()


@contextlib.contextmanager
def _memory(_request: pytest.FixtureRequest) -> Iterator[Index]:
    store = InMemoryStore()
    yield Index(store, InMemorySearchIndex(store))


@contextlib.contextmanager
def _sqlite(request: pytest.FixtureRequest) -> Iterator[Index]:
    with ready_sqlite_store(request.getfixturevalue("tmp_path")) as store:
        yield Index(store, SQLiteSearchIndex(store))


@contextlib.contextmanager
def _elasticsearch(request: pytest.FixtureRequest) -> Iterator[Index]:
    url = request.getfixturevalue("elasticsearch_url")
    store = ElasticsearchStore.connect(url, f"t{uuid.uuid4().hex[:12]}", )
    store = ElasticsearchStore(store.client, store.names.prefix, vector_dims=DIMS)
    store.ensure_ready()
    try:
        yield Index(store, ElasticsearchSearchIndex(store))
    finally:
        store.delete_everything()
        store.close()


FACTORIES = [
    pytest.param(_memory, id="memory"),
    pytest.param(_sqlite, id="sqlite"),
    pytest.param(_elasticsearch, id="elasticsearch", marks=pytest.mark.services),
]


@pytest.fixture(params=FACTORIES)
def index(request: pytest.FixtureRequest) -> Iterator[Index]:
    with request.param(request) as made:
        yield made


def chunk(doc: str, section: str, text: str, version: int = 1, **meta: Any) -> Chunk:
    neighbours = meta.pop("neighbours", None)
    extra: dict[str, Any] = {"neighbours": neighbours} if neighbours else {}
    return make_chunk(
        doc, version, section, text=text, heading_path=[f"{doc} policy", section],
        metadata={"title": f"{doc} policy", "language": "en", **meta}, **extra,
    )


def ask(question: str, **kw: Any) -> SearchRequest:
    return SearchRequest(question=question, as_of=kw.pop("as_of", DAY), **kw)


def service(index: Index, **kw: Any) -> SearchService:
    return SearchService(index.search, kw.pop("encoder", None), clock=lambda: DAY, **kw)


def ids(response: Any, via: str = "ranked") -> list[str]:
    return [p.chunk_id for p in response.passages if p.via == via]


# -- dates ---------------------------------------------------------------------
def test_a_promotion_one_day_past_its_end_is_never_returned(index: Index) -> None:
    index.add([chunk("spring", "pass", "spring pass discount on monthly rides",
                     valid_from=date(2027, 3, 1), valid_to=date(2027, 4, 30))])
    svc = service(index)
    assert ids(svc.search(ask("spring pass discount", as_of=date(2027, 4, 30)), frozenset()))
    after = svc.search(ask("spring pass discount", as_of=date(2027, 5, 1)), frozenset())
    assert after.status == "no_document" and after.passages == []
    before = svc.search(ask("spring pass discount", as_of=date(2027, 2, 28)), frozenset())
    assert before.status == "no_document"


# -- scope ---------------------------------------------------------------------
def test_scope_keeps_matching_and_everyone_documents_only(index: Index) -> None:
    index.add([
        chunk("lisbon", "tram", "refund for tram zone rides", scope=["lisbon"]),
        chunk("valencia", "park", "refund for park edge rides", scope=["valencia"]),
        chunk("base", "rule", "refund for rides everywhere", scope=["all-cities"]),
        chunk("misc", "rule", "refund for rides anywhere"),
    ])
    svc = service(index)
    found = set(ids(svc.search(ask("refund rides", scope=["valencia"]), frozenset())))
    assert found == {"valencia@v1#park", "base@v1#rule", "misc@v1#rule"}
    every = set(ids(svc.search(ask("refund rides"), frozenset())))
    assert "lisbon@v1#tram" in every and len(every) == 4


# -- permissions ---------------------------------------------------------------
def test_a_chunk_with_a_label_the_caller_lacks_is_never_returned(index: Index) -> None:
    index.add([
        chunk("handbook", "goodwill", "goodwill credit for agents", access_labels=["agents"]),
        chunk("refunds", "goodwill", "goodwill credit for riders", access_labels=["public"]),
    ])
    svc = service(index)
    rider = svc.search(ask("goodwill credit"), frozenset({"public"}))
    assert ids(rider) == ["refunds@v1#goodwill"]
    agent = svc.search(ask("goodwill credit"), frozenset({"public", "agents"}))
    assert set(ids(agent)) == {"refunds@v1#goodwill", "handbook@v1#goodwill"}


LABELS = ["a", "b", "c", "d", "e"]


def test_permission_filter_is_exact_over_random_label_sets(index: Index) -> None:
    rng = np.random.default_rng(7)
    chunks = []
    for i in range(24):
        labels = [lab for lab in LABELS if rng.random() < 0.3]
        chunks.append(chunk(f"d{i:02d}", "s", "shared refund words", access_labels=labels))
    index.add(chunks)

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.frozensets(st.sampled_from([*LABELS, "z"])))
    def check(caller: frozenset[str]) -> None:
        filters = SearchFilters(DAY, (), caller)
        found = {h.chunk_id for h in index.search.keyword_search(["refund"], filters, 100)}
        expected = {c.chunk_id for c in chunks if set(c.metadata.access_labels) <= caller}
        assert found == expected
        listed = {c.chunk_id for c in index.search.filtered_chunks(filters, 100)}
        assert listed == expected

    check()


# Labels a chunk may carry that look like others (a Cyrillic er, a
# zero-width space, case, a trailing space, the longest allowed), and caller labels
# that are hostile: not strings, NUL inside, control characters, empty, too long.
LOOK_ALIKES = ["public", "agents", "\u0440ublic", "public\u200b", "PUBLIC", "public ", "L" * 256]
HOSTILE: list[object] = [None, "\x00", "public\x00agents", "public\nagents", "", " ",
                         "L" * 257, "public\x7f", "agents\x85", 7, b"public", "\ud800"]


def test_no_caller_label_set_ever_returns_a_chunk_it_may_not_see(index: Index) -> None:
    """Random chunk labels, random caller sets mixing good and hostile labels: the store
    returns exactly the chunks whose labels are all the caller's, or refuses the caller,
    through the service and through every store query directly."""
    rng = np.random.default_rng(15)
    chunks = []
    for i in range(30):
        labels = [lab for lab in LOOK_ALIKES if rng.random() < 0.25]
        chunks.append(chunk(f"h{i:02d}", "s", "shared refund words", access_labels=labels))
    index.add(chunks)
    svc = service(index)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.sampled_from([*LOOK_ALIKES, "z"]), max_size=5),
           st.lists(st.sampled_from(HOSTILE), max_size=2))
    def check(good: list[str], hostile: list[object]) -> None:
        caller = frozenset([*good, *hostile])
        expected = {c.chunk_id for c in chunks if set(c.metadata.access_labels) <= set(good)}
        if hostile:
            with pytest.raises(SearchInputError, match="caller label"):
                svc.search(ask("shared refund words", k=10), caller)  # type: ignore[arg-type]
            with pytest.raises(SearchInputError, match="caller label"):
                SearchFilters(DAY, (), caller)  # type: ignore[arg-type]
            return
        allowed = frozenset(good)
        filters = SearchFilters(DAY, (), allowed)
        found = {h.chunk_id for h in index.search.keyword_search(["refund"], filters, 100)}
        assert found == expected
        assert {c.chunk_id for c in index.search.filtered_chunks(filters, 100)} == expected
        near = index.search.get_chunks([c.chunk_id for c in chunks], filters)
        assert {c.chunk_id for c in near} == expected
        answer = svc.search(ask("shared refund words", k=10), allowed)
        assert {p.chunk_id for p in answer.passages} <= expected
        assert all(set(p.access_labels) <= allowed for p in answer.passages)

    check()


@pytest.mark.parametrize("raw", [[None], ["public\x00agents"], [1], [["public"]], [""]],
                         ids=["null", "nul-inside", "number", "nested", "empty"])
def test_the_sqlite_queries_fail_closed_even_on_labels_no_caller_can_send(
    sqlite_store: SQLiteStore, raw: list[object]
) -> None:
    """Below the validation (the query text itself): a NULL, a non-text value or a NUL
    inside a caller label never lets a labelled chunk through (``NOT IN`` with a NULL
    let everything through before)."""
    import json

    from store.sqlite_schema import FILTERED, SEARCH

    Index(sqlite_store, SQLiteSearchIndex(sqlite_store)).add([
        chunk("secret", "s", "refund words", access_labels=["secret-tier"]),
        chunk("public", "s", "refund words", access_labels=["public"]),
        chunk("open", "s", "refund words"),
    ])
    labels = json.dumps(raw)
    rows = sqlite_store._read("search", SEARCH, {"match": "refund", "limit": 10,
                                                 "caller_labels": labels})
    found = sorted(Chunk.model_validate_json(body).document_id for body, _ in rows)
    assert found == ["open"]
    params = {"as_of": DAY.isoformat(), "any_scope": 1, "scope": "[]", "no_permission": 0,
              "caller_labels": labels, "limit": 10}
    listed = sqlite_store._read("filtered", FILTERED, params)
    assert sorted(Chunk.model_validate_json(body).document_id for (body,) in listed) == [
        "open"]


def test_sqlite_store_search_refuses_a_bad_caller_label(sqlite_store: SQLiteStore) -> None:
    Index(sqlite_store, SQLiteSearchIndex(sqlite_store)).add(
        [chunk("secret", "s", "refund words", access_labels=["secret-tier"])])
    for bad in ([None], ["public\x00agents"], [""]):
        with pytest.raises(SearchInputError, match="caller label"):
            sqlite_store.search("refund", access_labels=bad)  # type: ignore[arg-type]
    assert sqlite_store.search("refund", access_labels=["public"]) == []


def test_no_access_only_when_told_and_a_hidden_title_or_heading_matches(index: Index) -> None:
    index.add([chunk("handbook", "goodwill", "goodwill credit limits", access_labels=["agents"]),
               chunk("refunds", "window", "refund window sixty days")])
    svc = service(index)
    question = ask("goodwill credit limits in the handbook")
    # off by default: a restricted document looks like none at all
    assert svc.search(question, frozenset({"public"})).status == "no_document"
    denied = svc.search_telling_no_access(question, frozenset({"public"}), lambda: True)
    assert denied.status == "no_access" and denied.passages == []
    # "credit limits" is in its text only: not enough (one heading term, "goodwill")
    body = svc.search_telling_no_access(ask("goodwill credit limits"), frozenset({"public"}),
                                        lambda: True)
    assert body.status == "no_document"
    nothing = svc.search_telling_no_access(ask("quokka ferry timetable"), frozenset({"public"}),
                                           lambda: True)
    assert nothing.status == "no_document" and nothing.passages == []


# -- current version only ------------------------------------------------------
def test_only_the_current_version_of_a_live_document_is_found(index: Index) -> None:
    old = chunk("refunds", "window", "refund window thirty days", version=1)
    new = chunk("refunds", "window", "refund window sixty days", version=2)
    index.add([old, new], version=2)
    index.add([chunk("gone", "window", "refund window for a deleted policy")])
    index.store.put_state(DocumentState("gone", 2, T0, T0, deleted=True))
    index.store.refresh()
    found = ids(service(index).search(ask("refund window days"), frozenset()))
    assert found == ["refunds@v2#window"]


# -- few chunks, neighbours, provenance ----------------------------------------
def test_when_the_filters_leave_at_most_k_chunks_all_come_back_ranked(index: Index) -> None:
    index.add([
        chunk("lisbon", "tram", "tram zone rides are excluded", scope=["lisbon"]),
        chunk("lisbon", "fees", "parking fees in the old town", scope=["lisbon"]),
        chunk("valencia", "park", "tram zone rides in the park", scope=["valencia"]),
    ])
    found = ids(service(index).search(ask("tram zone rides", scope=["lisbon"], k=3), frozenset()))
    assert found == ["lisbon@v1#tram", "lisbon@v1#fees"]


def test_neighbours_are_appended_after_the_ranked_and_never_counted(index: Index) -> None:
    rule = chunk("refunds", "window", "refund window sixty days",
                 neighbours=Neighbours(next="refunds@v1#exceptions",
                                       related=["refunds@v1#exceptions", "refunds@v1#secret"]))
    exception = chunk("refunds", "exceptions", "exceptions: promotional credit is final")
    secret = chunk("refunds", "secret", "internal note", access_labels=["agents"])
    index.add([rule, exception, secret])
    response = service(index).search(ask("refund window sixty days", k=1), frozenset())
    assert ids(response) == ["refunds@v1#window"]
    neighbours = [p for p in response.passages if p.via == "neighbour_of"]
    assert [(p.chunk_id, p.neighbour_of) for p in neighbours] == [
        ("refunds@v1#exceptions", "refunds@v1#window")
    ]
    assert response.passages[0].via == "ranked"
    alone = service(index).search(ask("refund window sixty days", k=1, neighbours=False),
                                  frozenset())
    assert [p.chunk_id for p in alone.passages] == ["refunds@v1#window"]


def test_every_passage_carries_its_provenance(index: Index) -> None:
    c = chunk("terms", "fees", "late fees are waived once a year", scope=["lisbon"],
              valid_from=date(2027, 1, 1), valid_to=date(2027, 12, 31),
              effective_date=date(2027, 1, 1), access_labels=["public"],
              source_path="policies/terms.md", attributes={"code": "POL-7"})
    c = c.model_copy(update={"heading_path": ["Terms", "4.2 Late fees"]})
    index.add([c])
    (p,) = service(index).search(ask("late fees waived"), frozenset({"public"})).passages
    assert (p.document_id, p.title, p.version, p.clause) == ("terms", "terms policy", 1, "4.2")
    assert p.heading_path == ["Terms", "4.2 Late fees"] and p.scope == ["lisbon"]
    assert (p.valid_from, p.valid_to, p.effective_date) == (
        date(2027, 1, 1), date(2027, 12, 31), date(2027, 1, 1))
    assert p.link == "policies/terms.md#fees" and p.access_labels == ["public"]
    assert p.changed_at is not None and p.score > 0 and p.text.startswith("late fees")
    assert p.attributes == {"code": "POL-7"} and p.language == "en"


# -- bad input -----------------------------------------------------------------
@pytest.mark.parametrize("label", [None, "a\x00b", "", "x" * 300])
def test_a_bad_caller_label_is_refused_naming_it(index: Index, label: Any) -> None:
    with pytest.raises(SearchInputError, match="caller label"):
        service(index).search(ask("refund"), frozenset({label}))


@pytest.mark.parametrize(
    ("field", "values"),
    [("k", {"k": 0}), ("k", {"k": 11}), ("question", {"question": "x" * (MAX_QUESTION_CHARS + 1)}),
     ("question", {"question": "a\x00b"})],
)
def test_bad_requests_name_the_field(field: str, values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match=field):
        SearchRequest(**{"question": "refund", **values})


# -- vectors -------------------------------------------------------------------
def unit(*values: float) -> list[float]:
    v = np.zeros(DIMS, dtype=np.float32)
    v[: len(values)] = values
    return list(v / np.linalg.norm(v))


class LookupEncoder:
    """An ``Encoder`` for tests: a fixed vector per known text."""

    model_id = "lookup@8"
    dim = DIMS

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
        return np.asarray([self.table[t] for t in texts], dtype=np.float32)


def test_vectors_follow_writes_and_the_dense_leg_finds_a_paraphrase(index: Index) -> None:
    index.add([chunk("refunds", "window", "refund window sixty days"),
               chunk("refunds", "damage", "scratches on the frame are charged")])
    missing = index.search.chunks_missing_vectors("lookup@8", 10)
    assert sorted(cid for cid, _ in missing) == ["refunds@v1#damage", "refunds@v1#window"]
    assert all("refunds policy" in text for _, text in missing)
    assert index.search.vector_backlog("lookup@8")[0] == 2
    stored = index.search.put_vectors("lookup@8", {
        "refunds@v1#window": unit(1, 0), "refunds@v1#damage": unit(0, 1),
        "nobody@v1#x": unit(1, 1),
    })
    index.store.refresh()
    assert stored == 2
    assert index.search.vector_backlog("lookup@8") == (0, None)
    assert index.search.chunks_missing_vectors("other@8", 10) != []
    encoder = LookupEncoder({"my bike got a dent": unit(0.1, 1)})
    response = service(index, encoder=encoder, threshold=0.5).search(
        ask("my bike got a dent", neighbours=False), frozenset())
    assert ids(response)[0] == "refunds@v1#damage"
    assert response.best_score == pytest.approx(0.995, abs=0.01)
    index.store.delete_chunks(["refunds@v1#damage"])
    index.store.refresh()
    hits = index.search.vector_search("lookup@8", np.asarray(unit(0, 1), dtype=np.float32),
                                      SearchFilters(DAY), 10)
    assert [h.chunk_id for h in hits] == ["refunds@v1#window"]


def test_below_the_dense_threshold_the_answer_is_no_document(index: Index) -> None:
    index.add([chunk("refunds", "window", "refund window sixty days")])
    index.search.put_vectors("lookup@8", {"refunds@v1#window": unit(1, 0)})
    index.store.refresh()
    encoder = LookupEncoder({"app store purchase": unit(0, 0, 1)})
    response = service(index, encoder=encoder, threshold=0.5).search(
        ask("app store purchase"), frozenset())
    assert response.status == "no_document" and response.best_score == pytest.approx(0.0, abs=1e-6)


def test_without_vectors_names_the_chunks_the_dense_leg_cannot_see(index: Index) -> None:
    index.add([chunk("refunds", "window", "refund window sixty days"),
               chunk("refunds", "damage", "scratches on the frame are charged")])
    index.search.put_vectors("lookup@8", {"refunds@v1#window": unit(1, 0)})
    index.store.refresh()
    both = ["refunds@v1#window", "refunds@v1#damage"]
    assert index.search.without_vectors("lookup@8", both) == {"refunds@v1#damage"}
    assert index.search.without_vectors("other@8", both) == set(both)
    assert index.search.without_vectors("lookup@8", []) == set()


def test_before_the_vectors_arrive_the_keyword_leg_answers_and_says_so(index: Index) -> None:
    """A replay, then a search before ``embed``: answered from the keyword leg, never
    ``no_document`` for want of a cosine; the response names the legs that answered."""
    index.add([chunk("refunds", "window", "refund window sixty days"),
               chunk("travel", "luggage", "luggage allowance one bag")])
    encoder = LookupEncoder({"refund window": unit(1, 0), "weather tomorrow": unit(0, 0, 1)})
    svc = service(index, encoder=encoder, threshold=0.5, keyword_threshold=0.5)
    before = svc.search(ask("refund window", neighbours=False), frozenset())
    assert before.status == "ok", before
    assert ids(before)[0] == "refunds@v1#window"
    assert before.legs == ["keyword"]
    assert before.threshold == 0.5 and before.best_score == pytest.approx(1.0)
    off_topic = svc.search(ask("weather tomorrow"), frozenset())
    assert off_topic.status == "no_document"
    index.search.put_vectors("lookup@8", {"refunds@v1#window": unit(1, 0),
                                          "travel@v1#luggage": unit(0, 1)})
    index.store.refresh()
    after = svc.search(ask("refund window", neighbours=False), frozenset())
    assert after.status == "ok" and after.legs == ["keyword", "dense"]
    assert after.best_score == pytest.approx(1.0, abs=1e-5)  # the cosine now
    assert svc.search(ask("weather tomorrow"), frozenset()).status == "no_document"


def test_a_new_version_without_its_vector_is_answered_beside_older_vectors(
    index: Index,
) -> None:
    """Other documents have vectors (far from the question); the one that answers was
    just written and has none yet: the dense leg's low cosine must not refuse it."""
    index.add([chunk("travel", "luggage", "luggage allowance one bag")])
    index.search.put_vectors("lookup@8", {"travel@v1#luggage": unit(0, 1)})
    index.add([chunk("refunds", "window", "refund window sixty days", version=2)])
    encoder = LookupEncoder({"refund window": unit(1, 0)})
    response = service(index, encoder=encoder, threshold=0.5).search(
        ask("refund window", neighbours=False), frozenset())
    assert response.status == "ok", response
    assert ids(response)[0] == "refunds@v2#window"
    assert response.legs == ["keyword", "dense"]
    # Once its vector is there, the cosine decides again (and is far below 0.5 here).
    index.search.put_vectors("lookup@8", {"refunds@v2#window": unit(0, 0, 1)})
    index.store.refresh()
    refused = service(index, encoder=encoder, threshold=0.5).search(
        ask("refund window"), frozenset())
    assert refused.status == "no_document" and refused.threshold == 0.5


def test_the_dense_leg_filters_inside_even_when_the_visible_chunk_ranks_last(
    index: Index,
) -> None:
    chunks = [chunk(f"d{i:03d}", "s", "words", access_labels=["agents"]) for i in range(80)]
    chunks.append(chunk("open", "s", "words"))
    index.add(chunks)
    vectors = {c.chunk_id: unit(1, 0.01 * i) for i, c in enumerate(chunks[:-1])}
    vectors["open@v1#s"] = unit(0, 1)
    index.search.put_vectors("lookup@8", vectors)
    index.store.refresh()
    query = np.asarray(unit(1, 0), dtype=np.float32)
    hits = index.search.vector_search("lookup@8", query, SearchFilters(DAY, (), frozenset()), 3)
    assert [h.chunk_id for h in hits] == ["open@v1#s"]
    index.search.put_vectors("lookup@8", {"open@v1#s": unit(1, 0)})  # a new vector is seen
    index.store.refresh()
    (hit,) = index.search.vector_search("lookup@8", query, SearchFilters(DAY, (), frozenset()), 3)
    assert hit.score == pytest.approx(1.0, abs=1e-5)


def test_keyword_leg_meets_inflections_and_customer_keywords_in_each_language(
    index: Index,
) -> None:
    index.add([
        chunk("erstattung", "regel", "Erstattungen für stornierte Fahrten", language="de"),
        chunk("monsoon", "rule", "damage by water to parcels", keywords=["soggy", "geela"]),
        chunk("iade", "kural", "iade limitinin a\u015f\u0131lmas\u0131", language="tr"),
    ])
    svc = service(index)
    question = ask("Erstattung für eine stornierte Fahrt", language="de", k=1)
    german = svc.search(question, frozenset())
    assert ids(german) == ["erstattung@v1#regel"]  # k=1: not the "at most k chunks" rule
    customer = svc.search(ask("my parcel arrived soggy", k=1), frozenset())
    assert ids(customer) == ["monsoon@v1#rule"]
    turkish = svc.search(ask("iade limiti", language="tr", k=1), frozenset())
    assert ids(turkish) == ["iade@v1#kural"]


# -- views: windows and several encoders ---------------------------------------
def test_a_chunk_scores_by_its_best_window_and_keeps_one_vector_per_view(index: Index) -> None:
    """A windowed view stores a row per window; the dense leg scores a chunk by its best
    row. Vectors are kept per view id: a second view of the same chunks leaves the
    first as it was, and each view has its own backlog."""
    index.add([chunk("refunds", "window", "refund window sixty days"),
               chunk("travel", "luggage", "luggage allowance one bag")])
    index.search.put_vectors("lookup@8+w150s75", {
        "refunds@v1#window": [unit(1, 0), unit(0, 0, 1)],  # two windows, the 2nd on topic
        "travel@v1#luggage": unit(0, 1),
    })
    index.search.put_vectors("lookup@8", {"refunds@v1#window": unit(1, 0)})
    index.store.refresh()
    query = np.asarray(unit(0, 0, 1), dtype=np.float32)
    windowed = index.search.vector_search("lookup@8+w150s75", query, SearchFilters(DAY), 10)
    assert windowed[0].chunk_id == "refunds@v1#window"
    assert windowed[0].score == pytest.approx(1.0, abs=1e-5)
    whole = index.search.vector_search("lookup@8", query, SearchFilters(DAY), 10)
    assert [h.chunk_id for h in whole] == ["refunds@v1#window"]
    assert whole[0].score == pytest.approx(0.0, abs=1e-5)
    assert index.search.vector_backlog("lookup@8+w150s75")[0] == 0
    assert index.search.vector_backlog("lookup@8")[0] == 1
    assert index.search.without_vectors("lookup@8", ["travel@v1#luggage"]) == {
        "travel@v1#luggage"}
    # a chunk deleted takes every view's vectors with it
    index.store.delete_chunks(["refunds@v1#window"])
    index.store.refresh()
    left = index.search.vector_search("lookup@8+w150s75", query, SearchFilters(DAY), 10)
    assert [h.chunk_id for h in left] == ["travel@v1#luggage"]


@pytest.mark.parametrize("bad", [[], [[]], [[1.0, float("nan")] + [0.0] * (DIMS - 2)],
                                 [[1.0] * DIMS, [1.0] * (DIMS - 1)]],
                         ids=["empty", "empty-row", "nan", "ragged-rows"])
def test_a_bad_vector_value_is_refused_and_stores_nothing(index: Index, bad: Any) -> None:
    index.add([chunk("refunds", "window", "refund window sixty days")])
    with pytest.raises(ValueError, match="vector"):
        index.search.put_vectors("lookup@8", {"refunds@v1#window": bad})
    index.store.refresh()
    assert index.search.vector_backlog("lookup@8")[0] == 1


class OtherEncoder(LookupEncoder):
    model_id = "other@8"


def test_search_fuses_every_view_and_works_on_with_one_removed(index: Index) -> None:
    """Two encoders, two dense legs: the chunk that only the second view sees is found;
    dropping that view leaves search answering from the first (and keyword)."""
    index.add([chunk("refunds", "window", "refund window sixty days"),
               chunk("travel", "luggage", "luggage allowance one bag"),
               chunk("travel", "pets", "small animals travel in a carrier")])
    index.search.put_vectors("lookup@8", {
        "refunds@v1#window": unit(1, 0), "travel@v1#luggage": unit(0, 1),
        "travel@v1#pets": unit(0, 0, 1)})
    index.search.put_vectors("other@8", {
        "refunds@v1#window": unit(0, 1), "travel@v1#luggage": unit(0, 0, 1),
        "travel@v1#pets": unit(1, 0)})
    index.store.refresh()
    question = "can my cat come along"  # no keyword in any chunk
    first = LookupEncoder({question: unit(1, 0.2)})  # first view: refunds
    second = OtherEncoder({question: unit(1, 0.1)})  # second view: pets
    both = service(index, views=[DenseView(first), DenseView(second)], threshold=0.5)
    response = both.search(ask(question, neighbours=False, k=2), frozenset())
    assert response.status == "ok" and response.legs == ["dense"]
    assert set(ids(response)) == {"refunds@v1#window", "travel@v1#pets"}
    one = service(index, views=[DenseView(first)], threshold=0.5)
    alone = one.search(ask(question, neighbours=False, k=1), frozenset())
    assert ids(alone) == ["refunds@v1#window"]
    both.close()
    one.close()
