"""The vector backfill: chunks are keyword-searchable as soon as they are written, vectors follow.

The worker writes chunks without vectors, so freshness never waits for the
encoder (about 10-20 chunks/s on 2 cores). This loop asks the index for live
chunks that lack a vector for the current model, oldest first, encodes them
through the ``CachedEncoder`` (an unchanged section is a cache hit, not an
encoding) and stores the vectors. It keeps no state of its own: the index is
the record of what is missing, so a crash, a restart or a second process only
repeats harmless work, and a model change (a new ``model_id``) is the same loop
until the new model's backlog is empty (``reembed``).

After each round it looks at the backlog and sets the backlog gauge and the
time of the oldest chunk still waiting; the lag gauge is computed from that at
scrape time (``embeddings.metrics``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol

import structlog
from tqdm import tqdm

from embeddings.cache import CachedEncoder
from embeddings.errors import BackfillStalledError
from embeddings.limits import BATCH_SIZE
from embeddings.metrics import EmbeddingMetrics
from embeddings.views import Windows, whole

log = structlog.get_logger(__name__)


# Texts encoded a call within a round: a stop is seen between two slices (a slice of bge's
# windows, encoded one text at a time, takes about a second on two busy cores).
ENCODE_SLICE = 8


class VectorIndex(Protocol):
    """What the backfill needs of a store (SQLite, Elasticsearch and in-memory implement it)."""

    def chunks_missing_vectors(self, model_id: str, limit: int) -> list[tuple[str, str]]:
        """(chunk_id, text to embed) of live chunks with no vector for model_id, oldest first."""

    def put_vectors(
        self, model_id: str, vectors: Mapping[str, Sequence[float] | Sequence[Sequence[float]]]
    ) -> int:
        """Store vectors by chunk id (a chunk deleted meanwhile is skipped); returns how many
        stored. A chunk's value is one vector, or one per window (its rows)."""

    def vector_backlog(self, model_id: str) -> tuple[int, datetime | None]:
        """How many live chunks lack a vector for model_id, and indexed_at of the oldest one."""


class VectorBackfill:
    """Encodes and stores the vectors the index lacks, ``batch_size`` chunks a round."""

    def __init__(
        self,
        index: VectorIndex,
        encoder: CachedEncoder,
        batch_size: int = BATCH_SIZE,
        *,
        metrics: EmbeddingMetrics | None = None,
        view_id: str | None = None,
        windows: Windows = whole,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self.index = index
        self.encoder = encoder
        # What the vectors are stored under, and how a chunk's text is cut: a whole-chunk
        # view stores one vector under the model id, a windowed one a vector per window
        # under its own view id (embeddings.views).
        self.view_id = view_id or encoder.model_id
        self.windows = windows
        # Set by run_forever (or the owner of several): a round in progress ends early on it.
        self.stop: threading.Event | None = None
        self.batch_size = batch_size
        self.metrics = metrics if metrics is not None else encoder.metrics
        self.vectors_written = 0
        self.backlog = 0
        # indexed_at of the oldest chunk without a vector at the last look (None: none)
        self.oldest_missing: datetime | None = None
        if self.metrics is not None:
            self.metrics.vector_lag.set_function(self.lag_seconds)

    @property
    def model_id(self) -> str:
        """The id the vectors are stored under (the view's; the model's for a whole view)."""
        return self.view_id

    def lag_seconds(self) -> float:
        """Age of the oldest chunk without a vector at the last look, now; 0 when none."""
        oldest = self.oldest_missing
        if oldest is None:
            return 0.0
        return max(0.0, time.time() - oldest.timestamp())

    def observe_backlog(self) -> int:
        """Ask the index how far behind the vectors are; sets the gauges; returns the count."""
        count, oldest = self.index.vector_backlog(self.model_id)
        if oldest is not None and oldest.tzinfo is None:
            oldest = oldest.replace(tzinfo=UTC)  # a naive time from a store is UTC, not local
        self.backlog = count
        self.oldest_missing = oldest if count else None
        if self.metrics is not None:
            self.metrics.vector_backlog.set(count)
        return count

    def run_once(self) -> int:
        """One round: up to ``batch_size`` missing vectors encoded and stored; returns how many."""
        return self._round()[1]

    def _round(self) -> tuple[int, int]:
        """(chunks the index offered, vectors stored) of one round; then the backlog gauges.

        A stop asked for while the round encodes ends it between two slices of texts,
        storing nothing (the next start offers the same chunks again; the cache keeps what
        was encoded): a round of a slow encoder must not hold a process past its stop.
        """
        model_id = self.model_id
        missing = self.index.chunks_missing_vectors(model_id, self.batch_size)
        stored = 0
        if missing:
            vectors = self._encode(missing)
            if vectors is None:
                return len(missing), 0
            stored = self.index.put_vectors(model_id, vectors)
            self.vectors_written += stored
            if self.metrics is not None:
                self.metrics.vectors_written.inc(stored)
        self.observe_backlog()
        return len(missing), stored

    def _encode(
        self, missing: Sequence[tuple[str, str]]
    ) -> dict[str, list[float] | list[list[float]]] | None:
        """The vectors of each chunk: one (a whole view) or one per window; None when a stop
        came while encoding (checked between slices of ``ENCODE_SLICE`` texts)."""
        pieces = [[text] if self.windows is whole else (self.windows(text) or [text])
                  for _, text in missing]
        flat = [p for cut in pieces for p in cut]
        rows: list[list[float]] = []
        for start in range(0, len(flat), ENCODE_SLICE):
            if self.stop is not None and self.stop.is_set():
                return None
            rows += self.encoder.encode(flat[start:start + ENCODE_SLICE], kind="passage").tolist()
        out: dict[str, list[float] | list[list[float]]] = {}
        at = 0
        for (cid, _), cut in zip(missing, pieces, strict=True):
            out[cid] = rows[at] if self.windows is whole else rows[at:at + len(cut)]
            at += len(cut)
        return out

    def run_forever(self, stop: threading.Event, idle_s: float) -> None:
        """Rounds until ``stop`` is set; waits ``idle_s`` when nothing is missing or a round fails.

        A failed round (index or cache unreachable, the encoder failing) is
        logged and counted, never fatal: the chunks are still keyword-searchable,
        and the lag gauge keeps growing, which is what the alert watches.
        """
        if idle_s <= 0:
            raise ValueError(f"idle_s must be > 0, got {idle_s!r}")
        self.stop = stop
        while not stop.is_set():
            try:
                written = self.run_once()
            except Exception:  # any failure of a round: log it, wait, try again
                log.exception("vector backfill round failed", model_id=self.model_id)
                if self.metrics is not None:
                    self.metrics.backfill_errors.inc()
                written = 0
            if written == 0:
                stop.wait(idle_s)


class ViewBackfills:
    """The backfill of every dense view, a round of each in turn, in one thread.

    The gauges say the worst of them: the backlog is the sum, the lag the oldest
    chunk any view still lacks a vector for.
    """

    def __init__(self, backfills: Sequence[VectorBackfill]) -> None:
        if not backfills:
            raise ValueError("no dense view to backfill")
        self.backfills = list(backfills)
        metrics = self.backfills[0].metrics
        self.metrics = metrics
        if metrics is not None:
            metrics.vector_lag.set_function(self.lag_seconds)

    def lag_seconds(self) -> float:
        return max(b.lag_seconds() for b in self.backfills)

    def run_once(self, stop: threading.Event | None = None) -> int:
        written = 0
        for backfill in self.backfills:
            if stop is not None and stop.is_set():
                break
            try:
                written += backfill.run_once()
            except Exception:  # one view failing must not starve the others
                log.exception("vector backfill round failed", model_id=backfill.model_id)
                if backfill.metrics is not None:
                    backfill.metrics.backfill_errors.inc()
        if self.metrics is not None:
            self.metrics.vector_backlog.set(sum(b.backlog for b in self.backfills))
        return written

    def run_forever(self, stop: threading.Event, idle_s: float) -> None:
        """Rounds of every view until ``stop``; waits ``idle_s`` when none wrote anything."""
        if idle_s <= 0:
            raise ValueError(f"idle_s must be > 0, got {idle_s!r}")
        for backfill in self.backfills:
            backfill.stop = stop
        while not stop.is_set():
            if self.run_once(stop) == 0:
                stop.wait(idle_s)


def reembed(index: VectorIndex, encoder: CachedEncoder, progress: bool = True,
            *, batch_size: int = BATCH_SIZE, view_id: str | None = None,
            windows: Windows = whole) -> int:
    """Encode every live chunk that lacks a vector for ``encoder.model_id``; returns how many.

    The re-embedding job of a model change, and the catch-up after an outage:
    rounds until the backlog is 0, or until the index offers no more chunks (a
    backlog that also counts chunks it will not offer, such as older versions
    waiting for their delete step, must not keep the job running). Resumable by
    construction: it only ever asks the index for what is missing, so an
    interrupted run is finished by running it again. Raises
    ``BackfillStalledError`` when a round is offered chunks, stores none of
    them and the backlog does not shrink (the index refuses the vectors): a
    loud stop instead of a busy loop.
    """
    backfill = VectorBackfill(index, encoder, batch_size, view_id=view_id, windows=windows)
    total = backfill.observe_backlog()
    written = 0
    with tqdm(total=total, disable=not progress, unit="chunk",
              desc=f"re-embedding ({backfill.view_id})") as bar:
        while backfill.backlog > 0:
            before = backfill.backlog
            offered, stored = backfill._round()
            if offered == 0:
                break
            # a round may store none because its chunks were deleted meanwhile; then the
            # backlog shrank. One that stores none and leaves the backlog as it was is stuck.
            if stored == 0 and backfill.backlog >= before:
                raise BackfillStalledError(
                    f"{backfill.backlog} chunks lack a vector for {backfill.view_id!r} but a "
                    f"round stored none of {offered}; check put_vectors of "
                    f"{type(index).__name__}"
                )
            written += stored
            # new chunks may arrive while it runs: the bar's total follows the backlog
            bar.total = max(bar.total or 0, written + backfill.backlog)
            bar.update(stored)
    return written
