"""Dense views: the configured list, the windows a chunk is cut into, and the backfill of
a windowed view (one row per window, the short chunks' vectors shared with the whole view
through the content-addressed cache)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest
from support.chunks import make_chunk

from chunker.sections import path_title
from embeddings.backfill import ENCODE_SLICE, VectorBackfill, ViewBackfills, reembed
from embeddings.cache import CachedEncoder, InMemoryEmbeddingCache
from embeddings.encoder import TextKind, Vectors
from embeddings.views import DenseView, ViewSpec, WindowShape, check_distinct, parse_view_specs
from retrieval.models import SearchRequest
from retrieval.service import SearchService
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.model import DocumentState
from store.search_terms import embed_head, embed_windows, text_to_embed


@pytest.mark.parametrize(("text", "name", "shape", "weight"), [
    ("minilm", "minilm", None, 1.0),
    ("minilm+w150s75", "minilm", WindowShape(150, 75), 1.0),
    ("bge-small+w120", "bge-small", WindowShape(120, 60), 1.0),
    (" e5-small*0.5 ", "e5-small", None, 0.5),
])
def test_a_view_spec_reads_name_windows_and_weight(
    text: str, name: str, shape: WindowShape | None, weight: float,
) -> None:
    assert ViewSpec.parse(text) == ViewSpec(name, shape, weight)


def test_a_view_spec_reads_the_languages_it_is_asked_in() -> None:
    assert ViewSpec.parse("bge-small+w150s75:en") == ViewSpec(
        "bge-small", WindowShape(150, 75), 1.0, frozenset({"en"}))
    assert ViewSpec.parse("e5-small*0.5:en/es").languages == frozenset({"en", "es"})
    for bad in ("bge-small:", "bge-small:EN", "bge-small:en/", "bge-small:e"):
        with pytest.raises(ValueError, match="dense view"):
            ViewSpec.parse(bad)


def test_the_primary_view_answers_every_language() -> None:
    encoder = CountingEncoder()
    with pytest.raises(ValueError, match="primary"):
        check_distinct([DenseView(encoder, languages=frozenset({"en"}))])
    check_distinct([DenseView(encoder), DenseView(OtherCounting(), languages=frozenset({"en"}))])


def test_a_view_for_english_is_not_asked_a_german_question() -> None:
    store = InMemoryStore()
    chunk = make_chunk("refunds", 1, "window", text="Refund within sixty days",
                       heading_path=["Refunds", "Window"])
    store.write_chunks([chunk])
    at = datetime(2027, 1, 1, tzinfo=UTC)
    store.put_state(DocumentState("refunds", 1, at, at, (chunk.chunk_id,)))
    index = InMemorySearchIndex(store)
    first, english = CountingEncoder(), OtherCounting()
    for encoder in (first, english):
        reembed(index, CachedEncoder(encoder, InMemoryEmbeddingCache()), progress=False)
    service = SearchService(index, None, views=[
        DenseView(first), DenseView(english, languages=frozenset({"en"}))], threshold=-1.0)
    try:
        first.encoded.clear()
        english.encoded.clear()
        german = service.search(SearchRequest(question="Wie lange habe ich Zeit für eine "
                                              "Rückerstattung meines Rollers?", language="de"),
                                frozenset())
        assert german.status == "ok"
        assert len(first.encoded) == 1 and english.encoded == []
        service.search(SearchRequest(question="how long do I have to ask for a refund",
                                     language="en"), frozenset())
        assert len(first.encoded) == 2 and len(english.encoded) == 1
    finally:
        service.close()


@pytest.mark.parametrize("text", [
    "", "MiniLM", "minilm+w", "minilm+w8", "minilm+w150s200", "minilm*0", "minilm*-1",
    "minilm;drop", "minilm+w150s75+w100",
])
def test_a_bad_view_spec_is_refused_with_the_expected_form(text: str) -> None:
    with pytest.raises(ValueError, match=r"dense view|window"):
        ViewSpec.parse(text)


def test_a_view_listed_twice_is_refused_and_an_empty_list_means_no_dense_leg() -> None:
    assert parse_view_specs(" , ") == []
    with pytest.raises(ValueError, match="twice"):
        parse_view_specs("minilm+w100,minilm+w100s50")


def words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


def test_a_short_chunk_is_one_window_the_text_itself() -> None:
    text = "Refunds > Window\n" + words(40)
    assert embed_windows(text, 50, 25) == [text]


def test_windows_overlap_cover_every_word_and_each_carries_the_heading_path() -> None:
    body = words(230)
    text = "Refunds > Window\n" + body
    cut = embed_windows(text, 100, 50)
    assert len(cut) == 4  # starts at 0, 50, 100, 150; the last reaches word 229
    assert all(w.startswith("Refunds > Window\n") for w in cut)
    seen = {word for w in cut for word in w.split("\n", 1)[1].split()}
    assert seen == set(body.split())
    assert cut[1].split("\n", 1)[1].split()[0] == "w50"
    assert cut[-1].endswith("w229")


def test_the_title_line_in_front_of_a_long_title_path_stays_in_every_window() -> None:
    title = ("A very long policy title " * 20).strip()  # longer than a heading path keeps
    assert path_title(title) != title
    chunk = make_chunk("doc", 1, "s", text=words(120),
                       heading_path=[path_title(title), "Section"], metadata={"title": title})
    text = text_to_embed(chunk)
    head = f"{title}\n{path_title(title)} > Section\n"
    assert text.startswith(head)
    assert embed_head(text) == len(head)
    assert all(w.startswith(head) for w in embed_windows(text, 50, 50))
    plain = make_chunk("doc", 1, "s", text="Line one\nline two", heading_path=["Doc", "S"],
                       metadata={"title": "Doc"})
    assert embed_head(text_to_embed(plain)) == len("Doc > S\n")
    assert embed_head("no newline at all") == len("no newline at all")


class CountingEncoder:
    """Unit vectors from a hash of the text; counts what it encodes."""

    model_id = "counting@8"
    dim = 8

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
        self.encoded += list(texts)
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).normal(size=8) for t in texts]
        out = np.asarray(rows, dtype=np.float32)
        normed: Vectors = out / np.linalg.norm(out, axis=1, keepdims=True)
        return normed


class OtherCounting(CountingEncoder):
    model_id = "other-counting@8"


def test_a_windowed_view_stores_a_row_per_window_and_reuses_the_whole_view_cache() -> None:
    store = InMemoryStore()
    index = InMemorySearchIndex(store)
    short = make_chunk("refunds", 1, "short", text=words(30), heading_path=["Refunds", "S"])
    long = make_chunk("refunds", 1, "long", text=words(260), heading_path=["Refunds", "L"])
    store.write_chunks([short, long])


    at = datetime(2027, 1, 1, tzinfo=UTC)
    store.put_state(DocumentState("refunds", 1, at, at, (short.chunk_id, long.chunk_id)))
    inner = CountingEncoder()
    cached = CachedEncoder(inner, InMemoryEmbeddingCache())
    assert reembed(index, cached, progress=False) == 2  # the whole view: 2 texts
    assert len(inner.encoded) == 2
    shape = WindowShape(100, 50)
    view = DenseView(cached, shape, lambda t: embed_windows(t, 100, 50))
    assert view.view_id == "counting@8+w100s50"
    written = reembed(index, cached, progress=False, view_id=view.view_id,
                      windows=view.windows)
    assert written == 2
    # the short chunk's single window is its whole text: a cache hit, not an encoding;
    # the long one's 5 windows (0, 50, 100, 150, 200) are new
    assert len(inner.encoded) == 2 + 5
    assert index._vectors[long.chunk_id][view.view_id].shape == (5, 8)
    assert index._vectors[short.chunk_id][view.view_id].shape == (1, 8)
    # a second run over the same index has nothing to do
    assert reembed(index, cached, progress=False, view_id=view.view_id,
                   windows=view.windows) == 0
    # a second replay into a fresh index: every window vector comes from the cache
    again = InMemoryStore()
    again.write_chunks([short, long])
    again.put_state(DocumentState("refunds", 1, at, at, (short.chunk_id, long.chunk_id)))
    fresh = InMemorySearchIndex(again)
    assert reembed(fresh, cached, progress=False, view_id=view.view_id,
                   windows=view.windows) == 2
    assert fresh._vectors[long.chunk_id][view.view_id].shape == (5, 8)
    assert len(inner.encoded) == 7


def test_a_stop_during_a_round_ends_it_between_slices_and_stores_nothing() -> None:
    """A slow encoder's round must not hold a process past its stop: the stop is seen
    between two slices of texts, and nothing half-encoded is stored."""
    store = InMemoryStore()
    chunks = [make_chunk("refunds", 1, f"s{i}", text=words(400, i), ordinal=i)
              for i in range(8)]
    store.write_chunks(chunks)
    at = datetime(2027, 1, 1, tzinfo=UTC)
    store.put_state(DocumentState("refunds", 1, at, at, tuple(c.chunk_id for c in chunks)))
    index = InMemorySearchIndex(store)
    stop = threading.Event()

    class StoppingEncoder(CountingEncoder):
        def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
            stop.set()  # the process is asked to stop while this slice encodes
            return super().encode(texts, kind=kind)

    inner = StoppingEncoder()
    backfill = VectorBackfill(index, CachedEncoder(inner, InMemoryEmbeddingCache()),
                              batch_size=8, view_id="counting@8+w100s50",
                              windows=lambda t: embed_windows(t, 100, 50))
    ViewBackfills([backfill]).run_forever(stop, idle_s=0.01)
    assert len(inner.encoded) == ENCODE_SLICE  # one slice of the round's 56 windows
    assert index.vector_backlog("counting@8+w100s50")[0] == 8  # nothing stored
