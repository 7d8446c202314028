"""Replaying the basecamp log through the chunker and the cache encodes each distinct text once."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunker import chunk_document
from embeddings.cache import CachedEncoder
from embeddings.cache_sqlite import SQLiteEmbeddingCache
from embeddings.hashing import HashingEncoder
from events.changelog import read_changelog
from events.model import Action
from store.search_terms import text_to_embed


def replay_texts(log: Path) -> list[list[str]]:
    """What the backfill encodes of every chunk of every upsert, one list per version."""
    versions = []
    for event in read_changelog(log):
        if event.action is Action.UPSERT and event.content is not None:
            chunks = chunk_document(
                event.document_id, event.version, event.content,
                content_type=event.content_type or "text/markdown",
                metadata=event.metadata.overrides(), changed_at=event.changed_at,
            )
            versions.append([text_to_embed(c) for c in chunks])
    return versions


@pytest.mark.corpus
def test_basecamp_replay_encodes_each_distinct_text_exactly_once(
    corpora_dir: Path, tmp_path: Path
) -> None:
    versions = replay_texts(corpora_dir / "basecamp-policies.jsonl")
    every_chunk = sum(len(v) for v in versions)
    distinct = {t for v in versions for t in v}
    encoder = CachedEncoder(HashingEncoder(), SQLiteEmbeddingCache.in_dir(tmp_path))
    for texts in versions:
        encoder.encode(texts)
    assert encoder.texts_encoded == len(distinct)
    assert encoder.texts_encoded + encoder.cache_hits == every_chunk
    # the log really repeats sections across versions, so the cache has work to do
    assert every_chunk > 2 * len(distinct)

    # a second replay (a restart, a full reindex) encodes nothing: the cache is on disk
    again = CachedEncoder(HashingEncoder(), SQLiteEmbeddingCache.in_dir(tmp_path))
    for texts in versions:
        again.encode(texts)
    assert (again.encoder_calls, again.texts_encoded) == (0, 0)

