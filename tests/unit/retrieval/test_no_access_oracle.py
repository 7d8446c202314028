"""``no_access`` is no oracle on restricted text.

A public caller probing a staff document's secret must learn nothing it could not
already know: the exact secret and a wrong one get the same answer, whether its key
may be told ``no_access`` (then from titles and heading paths only) or not (the
default). Every store (Elasticsearch under ``services``), since the decision runs
the store's keyword leg; over ``POST /search`` too, where the key's flag and rate
limit live.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.chunks import make_chunk
from support.stores import STORE_FACTORIES, add_current

from chunker.model import Chunk
from retrieval.credentials import Caller, Credentials
from retrieval.http import create_search_app
from retrieval.models import SearchRequest, SearchResponse
from retrieval.no_access import NoAccessGate
from retrieval.searcher import search_as
from retrieval.service import SearchService
from store.base import Store
from store.elasticsearch import ElasticsearchStore
from store.es_search import ElasticsearchSearchIndex
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.search_index import SearchIndex
from store.sqlite import SQLiteStore
from store.sqlite_search import SQLiteSearchIndex
from webhooks.serve import ServerThread

SECRET = "The secret override code for refunds is ZEBRA-4471."
PROBES = ("Is the override code for refunds ZEBRA-4471?",
          "Is the override code for refunds ZEBRA-4470?")
# The code's digits alone: the permission-free re-rank (before) found 1 of 1 terms in the
# staff text for the right one (no_access) and 0 of 1 for the wrong one (no_document).
BARE_PROBES = ("4471", "4470")
PUBLIC = frozenset({"public"})
PUBLIC_KEY = "public-key-0123456789abcdef"
TOLD_KEY = "told-key-0123456789abcdef"


def chunk(doc: str, title: str, section: str, text: str, labels: list[str]) -> Chunk:
    return make_chunk(doc, 1, section, text=text, heading_path=[title, section],
                      metadata={"title": title, "language": "en", "access_labels": labels,
                                "source_path": f"policies/{doc}.md"})


LIBRARY = [
    chunk("staff-overrides", "Refund overrides", "Override procedure", SECRET, ["staff"]),
    chunk("refunds", "Refunds", "Window", "Refunds are paid within sixty days of the order.",
          ["public"]),
    chunk("tyres", "Flat tyres", "Repairs", "A flat tyre is repaired for free.", ["public"]),
]


def search_index(store: Store) -> SearchIndex:
    if isinstance(store, SQLiteStore):
        return SQLiteSearchIndex(store)
    if isinstance(store, ElasticsearchStore):
        return ElasticsearchSearchIndex(store)
    assert isinstance(store, InMemoryStore)
    return InMemorySearchIndex(store)


@pytest.fixture(params=STORE_FACTORIES)
def service(request: pytest.FixtureRequest) -> Iterator[SearchService]:
    with request.param(request) as store:
        add_current(store, LIBRARY)
        store.refresh()
        svc = SearchService(search_index(store), None)
        try:
            yield svc
        finally:
            svc.close()


def answer(response: SearchResponse) -> dict[str, Any]:
    """Everything a caller reads, except the time it took."""
    return response.model_dump(mode="json", exclude={"took_ms"})


@pytest.mark.parametrize("probes", [PROBES, BARE_PROBES], ids=["sentence", "bare-code"])
def test_the_exact_secret_and_a_wrong_one_get_the_same_answer_by_default(
    service: SearchService, probes: tuple[str, str]
) -> None:
    right, wrong = (service.search(SearchRequest(question=q), PUBLIC) for q in probes)
    assert right.status == "no_document" and right.passages == []
    assert answer(right) == answer(wrong)
    # the staff caller does find the passage: the probe is about a real secret
    staff = service.search(SearchRequest(question=probes[0]), frozenset({"staff"}))
    assert staff.status == "ok" and staff.passages[0].text == SECRET


def test_with_no_access_on_the_answer_reads_titles_and_headings_only(
    service: SearchService,
) -> None:
    def told(question: str) -> SearchResponse:
        return service.search_telling_no_access(SearchRequest(question=question), PUBLIC,
                                                lambda: True)

    right, wrong = told(PROBES[0]), told(PROBES[1])
    # "override" and "refunds" are in the staff document's title and headings
    assert right.status == "no_access" and right.passages == []
    assert answer(right) == answer(wrong)
    # words only the staff text holds say nothing: the same as any unknown words
    for first, second in (BARE_PROBES, ("secret ZEBRA-4471", "secret ZEBRA-4470")):
        body_only = told(first)
        assert body_only.status == "no_document"
        assert answer(body_only) == answer(told(second))
    assert told("quokka ferry timetable").status == "no_document"


def test_no_access_is_spent_from_the_keys_bucket_then_no_document(
    service: SearchService,
) -> None:
    now = [0.0]
    gate = NoAccessGate(clock=lambda: now[0])
    caller = Caller("prober", PUBLIC, no_access_per_minute=2)
    request = SearchRequest(question=PROBES[0])

    def status() -> str:
        return search_as(service, request, caller, gate).status

    assert [status(), status(), status()] == ["no_access", "no_access", "no_document"]
    ok = search_as(service, SearchRequest(question="flat tyre repaired"), caller, gate)
    assert ok.status == "ok"  # an answered search spends nothing and is never refused
    now[0] += 30.0  # 2 a minute: one token back after 30 s
    assert [status(), status()] == ["no_access", "no_document"]
    # a key without the flag is never told, whatever the gate holds
    assert search_as(service, request, Caller("plain", PUBLIC), gate).status == "no_document"


@pytest.mark.parametrize("flag", [False, True], ids=["no_access-off", "no_access-on"])
def test_post_search_probes_of_the_secret_are_indistinguishable(
    service: SearchService, flag: bool
) -> None:
    key = TOLD_KEY if flag else PUBLIC_KEY
    credentials = Credentials.from_mapping({
        "public-bot": {"key": PUBLIC_KEY, "labels": ["public"]},
        "told-bot": {"key": TOLD_KEY, "labels": ["public"], "no_access": True},
    })
    app = create_search_app(service, credentials, CollectorRegistry(), gate=NoAccessGate())
    with ServerThread(app) as server:
        replies = [httpx.post(server.url + "/search", json={"question": q},
                              headers={"Authorization": f"Bearer {key}"}, timeout=30)
                   for q in PROBES]
    assert [r.status_code for r in replies] == [200, 200]
    right, wrong = (SearchResponse.model_validate(r.json()) for r in replies)
    assert right.status == ("no_access" if flag else "no_document")
    assert answer(right) == answer(wrong)


def test_the_flag_is_off_unless_the_key_says_so() -> None:
    credentials = Credentials.from_mapping({
        "plain": {"key": PUBLIC_KEY, "labels": ["public"]},
        "told": {"key": TOLD_KEY, "labels": ["public"], "no_access": True,
                 "no_access_per_minute": 3},
    })
    assert credentials.resolve(PUBLIC_KEY).no_access_per_minute is None
    assert credentials.resolve(TOLD_KEY).no_access_per_minute == 3
    assert "no_access=3/min" in repr(credentials)
