"""What the embedding cache saves on the real change logs, and what the MiniLM encoder costs.

    .venv/bin/python bench/bench_embeddings.py [--corpora DIR] [--sample 48] [--json]

Side by side in one run:

1. Replay: every upsert of ``basecamp-policies.jsonl`` and of
   ``mozilla-legal-docs.jsonl.gz`` goes through ``chunker.chunk_document`` (as
   the worker calls it) and the text the backfill encodes of each chunk
   (``store.search_terms.text_to_embed``) through a
   ``CachedEncoder`` over a ``HashingEncoder`` (fast, so the replay counts
   rather than waits). Counted: chunks of every version (what an encoder with
   no cache would encode), texts the inner encoder actually encoded, and the
   ratio between them (the cache's gain). Each distinct text must be encoded
   exactly once; the bench says so or exits non-zero.
2. MiniLM throughput: a sample of real chunks of 300-800 tokens (the
   chunker's count) from the mozilla log, encoded by ``MiniLMEncoder``
   (int8, onnxruntime, 2 threads) at several batch sizes, best of 2 rounds;
   texts/s. The replay counts become projected encoding seconds at the
   default batch size's rate, with the cache and without.

Nothing is downloaded; the HashingEncoder figure is beside it for scale.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from chunker import chunk_document
from embeddings.cache import CachedEncoder, InMemoryEmbeddingCache
from embeddings.hashing import HashingEncoder
from embeddings.minilm import MiniLMEncoder
from events.changelog import read_changelog
from events.model import Action
from store.search_terms import text_to_embed

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = ROOT.parent / "shared" / "corpora"
CORPORA = ("basecamp-policies.jsonl", "mozilla-legal-docs.jsonl.gz")
BATCH_SIZES = (1, 8, 32)


@dataclass
class Replay:
    corpus: str
    upserts: int
    chunks_every_version: int
    distinct_texts: int
    texts_encoded_with_cache: int
    encoder_calls: int
    cache_hits: int
    seconds: float

    @property
    def gain(self) -> float:
        return self.chunks_every_version / max(1, self.texts_encoded_with_cache)


def replay(path: Path) -> tuple[Replay, list[str]]:
    """Counts of one log's replay, and its texts of 300-800 tokens (for the MiniLM sample)."""
    encoder = CachedEncoder(HashingEncoder(), InMemoryEmbeddingCache())
    upserts = chunks = 0
    distinct: set[str] = set()
    mid_sized: list[str] = []
    started = time.perf_counter()
    for event in read_changelog(path):
        if event.action is not Action.UPSERT or event.content is None:
            continue
        upserts += 1
        document = chunk_document(
            event.document_id, event.version, event.content,
            content_type=event.content_type or "text/markdown",
            metadata=event.metadata.overrides(), changed_at=event.changed_at,
        )
        texts = [text_to_embed(c) for c in document]
        chunks += len(texts)
        for chunk, text in zip(document, texts, strict=True):
            if text not in distinct and 300 <= chunk.token_count <= 800:
                mid_sized.append(text)
            distinct.add(text)
        if texts:
            encoder.encode(texts)
    return Replay(
        corpus=path.name, upserts=upserts, chunks_every_version=chunks,
        distinct_texts=len(distinct), texts_encoded_with_cache=encoder.texts_encoded,
        encoder_calls=encoder.encoder_calls, cache_hits=encoder.cache_hits,
        seconds=time.perf_counter() - started,
    ), mid_sized


def throughput(encoder: MiniLMEncoder | HashingEncoder, texts: list[str], rounds: int = 2) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        encoder.encode(texts)
        best = min(best, time.perf_counter() - started)
    return len(texts) / best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--sample", type=int, default=48,
                        help="chunks of 300-800 tokens to encode with MiniLM")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may come from a hub

    replays: list[Replay] = []
    sample: list[str] = []
    for name in CORPORA:
        result, mid_sized = replay(args.corpora / name)
        replays.append(result)
        if result.texts_encoded_with_cache != result.distinct_texts:
            print(f"FAIL {name}: encoded {result.texts_encoded_with_cache} texts, "
                  f"{result.distinct_texts} distinct", file=sys.stderr)
            return 1
        if "mozilla" in name:
            step = max(1, len(mid_sized) // args.sample)
            sample = mid_sized[::step][: args.sample]

    hashing_rate = throughput(HashingEncoder(), sample)
    minilm_rates: dict[int, float] = {}
    for batch_size in BATCH_SIZES:
        minilm_rates[batch_size] = throughput(MiniLMEncoder(batch_size=batch_size), sample)
    default_rate = minilm_rates[MiniLMEncoder().batch_size]

    report = {
        "replays": [asdict(r) | {"gain": round(r.gain, 2)} for r in replays],
        "sample_chunks": len(sample),
        "hashing_texts_per_s": round(hashing_rate, 1),
        "minilm_texts_per_s": {str(b): round(r, 2) for b, r in minilm_rates.items()},
        "projected_minilm_seconds": {
            r.corpus: {"every_version": round(r.chunks_every_version / default_rate),
                       "with_cache": round(r.texts_encoded_with_cache / default_rate)}
            for r in replays
        },
        "cpus": os.cpu_count(),
        # the machine is shared: the 1-minute load when the throughput was measured
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{'corpus':32} {'upserts':>8} {'chunks(all)':>12} {'encoded':>9} {'gain':>6} "
          f"{'calls':>6} {'replay s':>9}")
    for r in replays:
        print(f"{r.corpus:32} {r.upserts:8} {r.chunks_every_version:12} "
              f"{r.texts_encoded_with_cache:9} {r.gain:5.1f}x {r.encoder_calls:6} "
              f"{r.seconds:9.1f}")
    print(f"\nencoding {len(sample)} mozilla chunks of 300-800 tokens (best of 2; "
          f"{report['cpus']} CPUs, load average {report['load_average_1m']}):")
    print(f"  HashingEncoder          {hashing_rate:8.1f} texts/s")
    for b, rate in minilm_rates.items():
        print(f"  MiniLM int8, batch {b:<3}  {rate:8.2f} texts/s")
    print(f"\nprojected MiniLM encoding time at {default_rate:.2f} texts/s (default batch):")
    for r in replays:
        every, cached = (r.chunks_every_version / default_rate,
                         r.texts_encoded_with_cache / default_rate)
        print(f"  {r.corpus:32} every version {every:9.0f} s   with the cache {cached:8.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
