from __future__ import annotations

from support.chunks import make_chunk

from deleter.step import delete_older_versions
from store.memory import InMemoryStore


def test_only_older_versions_are_deleted_and_twice_is_harmless() -> None:
    store = InMemoryStore()
    store.write_chunks([make_chunk("d", v, s) for v in (1, 2, 3, 4) for s in ("a", "b")])
    store.write_chunks([make_chunk("other", 1)])
    result = delete_older_versions(store, "d", 3, known_ids=["d@v2#a", "d@v9#a", "d@v4#b"])
    assert result.deleted == 4
    assert sorted(store.chunks) == ["d@v3#a", "d@v3#b", "d@v4#a", "d@v4#b", "other@v1#intro"]
    again = delete_older_versions(store, "d", 3, known_ids=["d@v2#a"])
    assert again.deleted == 0
