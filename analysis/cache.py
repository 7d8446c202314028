"""A small bounded, thread-safe LRU keyed by content hash, for work that depends on text alone.

Language detection and term analysis are pure functions of their text, and the
versions of a document mostly repeat their text: a new version changes a few
sections and keeps the rest. Keyed by a hash of what the function reads, a
repeat is answered from memory and gives the same answer by construction.
The bound is on entries and on the summed ``weight`` of the values (characters,
for strings), so a few huge values cannot hold much memory either.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")


def content_key(*parts: str) -> bytes:
    """A 16-byte digest of ``parts`` (lone surrogates allowed, parts kept apart)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.digest()


@dataclass(frozen=True)
class CacheInfo:
    hits: int
    misses: int
    entries: int
    weight: int


class ContentCache(Generic[V]):
    """At most ``max_entries`` values and ``max_weight`` summed weight, least recent out first."""

    def __init__(
        self, max_entries: int, max_weight: int, weight: Callable[[V], int] = lambda _v: 1
    ) -> None:
        if max_entries < 1 or max_weight < 1:
            raise ValueError("a cache holds at least one entry and one unit of weight")
        self._max_entries = max_entries
        self._max_weight = max_weight
        self._weigh = weight
        self._items: OrderedDict[bytes, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._hits = self._misses = 0
        self._lock = threading.Lock()

    def get(self, key: bytes) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self._misses += 1
                return None
            self._hits += 1
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: bytes, value: V) -> None:
        weight = self._weigh(value)
        if weight > self._max_weight:
            return  # larger than the whole cache: not kept
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._items[key] = (value, weight)
            self._weight += weight
            while len(self._items) > self._max_entries or self._weight > self._max_weight:
                _, (_, dropped) = self._items.popitem(last=False)
                self._weight -= dropped

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._items), self._weight)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weight = self._hits = self._misses = 0
