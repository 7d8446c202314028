"""The keyword leg's BM25 in numpy, over an in-memory copy of FTS5's postings.

At 100k chunks a question's terms match ~50,000 rows, and FTS5 ranks every one
of them through its auxiliary-function interface, row by row (the leg's 64 ms
p50 / 120 ms p95). Here the same postings sit in numpy arrays (term -> row
positions and term counts), and the same formula runs once per query term over
all its rows at once.

The result is FTS5's own: ``bm25()`` with its constants (k1 1.2, b 0.75), its
idf (``log((N - n + 0.5) / (n + 0.5))``, 1e-6 where that is not positive), its
row length (tokens in the row) and average length, summed over the query's
terms in their order with the same floating-point operations, so every score
is bit for bit what ``bm25(chunk_terms)`` returns, and ties rank by row id as
``ORDER BY score, rowid`` does (``tests/unit/store/test_sqlite_search_postings.py``).

The copy is trusted only when it is FTS5's: ``build`` splits each row's terms
on white space (how ``store.search_terms`` writes them) and compares every
term's row count and total count with FTS5's own vocabulary (``fts5vocab``) of
the same snapshot; any difference, and no copy is made. A question term the
copy does not hold and that is not plain lower-case ASCII (which FTS5 might
tokenise otherwise) makes ``rank`` return None: the caller then asks FTS5.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# FTS5's bm25() constants (sqlite3/ext/fts5/fts5_aux.c, fts5Bm25Function).
K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
# Rows turned into term ids between two pauses of ``build`` (~2 ms of work at 100k chunks).
BATCH_ROWS = 128
# A term FTS5's unicode61 tokeniser keeps as it is: absent from the copy means no match.
_PLAIN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Postings:
    """Every row of the FTS5 table, as positions (rows in row-id order) per term."""

    rowids: npt.NDArray[np.int64]  # position -> FTS5 row id, ascending
    norms: npt.NDArray[np.float64]  # position -> k1 * (1 - b + b * length / avgdl)
    starts: dict[str, tuple[int, int]]  # term -> its slice of positions / counts
    positions: npt.NDArray[np.int32]
    counts: npt.NDArray[np.int32]  # occurrences of the term in the row
    total_tokens: int

    @classmethod
    def build(
        cls,
        rows: Sequence[tuple[int, str]],
        vocabulary: Sequence[tuple[str, int, int]],
        *,
        pause: Callable[[], None] | None = None,
    ) -> Postings | None:
        """From (rowid, terms) in ascending row id, terms space-separated as FTS5 holds
        them, and FTS5's vocabulary of the same snapshot (``fts5vocab`` ``row``: term, rows,
        occurrences). None when the two disagree: the copy would not be FTS5's.

        The rows are turned into term ids ``BATCH_ROWS`` at a time, and ``pause`` (if
        given) is called after each batch: a reader on a background thread passes one
        that lets the GIL go (``time.sleep(0)``), so searches on other threads get it
        back at once instead of after the interpreter's 5 ms switch interval."""
        n = len(rows)
        term_id = {term: i for i, (term, _, _) in enumerate(vocabulary)}.__getitem__
        batches: list[npt.NDArray[np.int64]] = []
        lengths = np.zeros(n, dtype=np.int64)
        try:
            for start in range(0, n, BATCH_ROWS):
                ids: list[int] = []
                for i, (_, text) in enumerate(rows[start:start + BATCH_ROWS], start):
                    tokens = text.split()
                    lengths[i] = len(tokens)
                    ids += map(term_id, tokens)
                batches.append(np.asarray(ids, dtype=np.int64))
                if pause is not None:
                    pause()
        except KeyError:
            return None  # a token FTS5 does not hold as it is
        # One key per (term, row), sorted: a run of equal keys is the term's count in the row.
        width = max(n, 1)
        keys = (np.concatenate(batches) if batches else np.zeros(0, np.int64)) * width + np.repeat(
            np.arange(n, dtype=np.int64), lengths
        )
        keys.sort()
        firsts = np.flatnonzero(np.diff(keys, prepend=-1))
        unique = keys[firsts]
        counts = np.diff(np.append(firsts, len(keys)))
        bounds = np.searchsorted(unique // width, np.arange(len(vocabulary) + 1))
        rows_per_term = np.diff(bounds)
        occurrences = np.add.reduceat(counts, bounds[:-1]) if len(counts) else counts
        if not (
            np.array_equal(rows_per_term, [d for _, d, _ in vocabulary])
            and np.array_equal(occurrences, [c for _, _, c in vocabulary])
        ):
            return None
        total = int(lengths.sum())
        avgdl = total / n if n else 1.0
        return cls(
            rowids=np.asarray([r for r, _ in rows], dtype=np.int64),
            norms=K1 * (1 - B + B * lengths.astype(np.float64) / avgdl),
            starts={t: (int(bounds[i]), int(bounds[i + 1])) for i, (t, _, _) in
                    enumerate(vocabulary)},
            positions=(unique % width).astype(np.int32),
            counts=counts.astype(np.int32),
            total_tokens=total,
        )

    def rank(self, terms: Sequence[str], limit: int) -> list[tuple[int, float]] | None:
        """The best ``limit`` rows matching any term as (rowid, bm25), FTS5's
        ``ORDER BY bm25(...), rowid``: bm25 is negative, best first.

        None when a term is one this copy cannot answer for (see the module docstring).
        """
        n = len(self.rowids)
        if n == 0:
            return []
        rows = float(n)
        scores = np.zeros(n, dtype=np.float64)
        matched = False
        for term in terms:
            span = self.starts.get(term)
            if span is None:
                if not _PLAIN.fullmatch(term):
                    return None
                continue  # no row holds it: adds 0 to every score, as in FTS5
            start, end = span
            hits = end - start
            idf = math.log((rows - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = MIN_IDF
            where = self.positions[start:end]
            freq = self.counts[start:end].astype(np.float64)
            scores[where] += idf * ((freq * (K1 + 1.0)) / (freq + self.norms[where]))
            matched = True
        if not matched:
            return []
        found = np.flatnonzero(scores > 0.0)
        if len(found) > limit:
            cut = np.partition(scores[found], len(found) - limit)[len(found) - limit]
            found = found[scores[found] >= cut]  # every tie at the cut, in row-id order
        order = found[np.argsort(-scores[found], kind="stable")][:limit]
        return [(int(self.rowids[i]), -1.0 * float(scores[i])) for i in order]
