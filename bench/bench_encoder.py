"""MiniLM encoder speed per onnxruntime configuration, each against today's in the same run;
or (``--encoder``) each dense encoder against MiniLM in the same run.

    .venv/bin/python bench/bench_encoder.py [--corpora DIR] [--rounds 3] [--block 32]
        [--configs NAME,...] [--load-rounds 5] [--json]
    .venv/bin/python bench/bench_encoder.py --encoder bge-small --encoder e5-small
        [--encoder NAME[@MAX_LENGTH] ...] [--threads 2] [--rounds 3] [--block 32] [--json]
    .venv/bin/python bench/bench_encoder.py --views minilm+w150s75,bge-small+w150s75:en

The texts are real chunks: every chunk of the final state of
``basecamp-policies.jsonl`` (``--corpora``, ``../shared/corpora`` by default) as
the backfill encodes it (``store.search_terms.text_to_embed``), or of
``examples/library`` when that log is absent.

The machine has 2 cores shared with other work, so no figure is an absolute time
alone. The chunks are cut into blocks of ``--block`` (32: one backfill round, one
``encode`` call); every round encodes every block once with every configuration,
back to back, in an order that reverses from block to block (A B C, C B A, ...),
so each configuration sees the same load as the baseline beside it. Reported per
configuration: chunks/s (median over rounds of the round's total time) and the
ratio to the baseline (median over every block of baseline time / its time,
paired measurements taken seconds apart). The vectors of each configuration are
compared with the baseline's: the minimum cosine over every chunk must be >=
0.9999 (the embedding cache is keyed by model id and text), else the bench says
so and exits 1.

``baseline`` is the configuration the encoder had before this bench (batch 8,
2 intra-op threads, 1 inter-op thread, sequential, ORT_ENABLE_ALL, spinning on);
``default`` is ``MiniLMEncoder()`` as it is now. The other rows are what
onnxruntime offers beside them; the ones that did not pay stay here so the
question can be asked again on other hardware.

``--encoder NAME`` (repeatable; the names of ``embeddings.registry.encoder_by_name``,
``@MAX_LENGTH`` for another length, e.g. ``bge-small@256``) measures those encoders
instead of the configurations, on the same texts, the same way: interleaved blocks, with
``minilm`` (``MiniLMEncoder()``, added when not named) as the reference of the ratios.
Texts are encoded as passages (what the backfill does). No cosine check: the models differ.

``--views SPEC,...`` (``POLICY_INDEXER_ENCODERS`` syntax) measures what each dense view
costs the backfill per chunk (its windows cut, every piece encoded) against MiniLM over
whole chunks (the one view before views), interleaved the same way, and the sum of the
listed views: the indexing cost of that configuration in units of the old one.

Load: the time to build a ``MiniLMEncoder`` (read and check the model, optimise
the graph) with and without the cache of the optimised model
(``optimized_model_dir``), alternating, median of ``--load-rounds``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from chunker import chunk_document
from embeddings.encoder import Encoder
from embeddings.minilm import MiniLMEncoder, packaged_model_path
from embeddings.onnx_encoder import OnnxSentenceEncoder
from embeddings.packaged import BgeSmallEncoder, E5SmallEncoder
from embeddings.registry import encoder_by_name
from embeddings.views import ViewSpec, parse_view_specs
from events.changelog import read_changelog
from events.model import Action
from store.search_terms import embed_windows, text_to_embed

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = ROOT.parent / "shared" / "corpora"
CORPUS = "basecamp-policies.jsonl"
EXAMPLES = ROOT / "examples" / "library"
MIN_COSINE = 0.9999

Factory = Callable[[], MiniLMEncoder]


def basecamp_final_chunks(path: Path) -> list[str]:
    """The text to embed of every chunk of every document's last version, deletes gone."""
    last = {}
    for event in read_changelog(path):
        last[event.document_id] = event
    texts: list[str] = []
    for event in last.values():
        if event.action is not Action.UPSERT or event.content is None:
            continue
        texts += [text_to_embed(c) for c in chunk_document(
            event.document_id, event.version, event.content,
            content_type=event.content_type or "text/markdown",
            metadata=event.metadata.overrides(), changed_at=event.changed_at,
        )]
    return texts


def example_chunks(folder: Path) -> list[str]:
    texts: list[str] = []
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".md", ".html"):
            continue
        content_type = "text/html" if path.suffix == ".html" else "text/markdown"
        document_id = path.relative_to(folder).as_posix()
        texts += [text_to_embed(c) for c in chunk_document(
            document_id, 1, path.read_text(encoding="utf-8"), content_type=content_type)]
    return texts


class _SessionVariant(MiniLMEncoder):
    """Today's encoder with its session rebuilt from other ``SessionOptions``: for the rows
    that are not knobs of ``MiniLMEncoder`` (they did not pay)."""

    def __init__(self, configure: Callable[[ort.SessionOptions], None], *,
                 io_binding: bool = False, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        configure(options)
        self._session = ort.InferenceSession(str(packaged_model_path()), sess_options=options,
                                             providers=["CPUExecutionProvider"])
        if io_binding:
            self._session = _IOBound(self._session)


class _IOBound:
    """``run`` through an IO binding: inputs bound from numpy, the output left to ORT."""

    def __init__(self, session: ort.InferenceSession) -> None:
        self._session = session

    def get_inputs(self) -> list[object]:
        return list(self._session.get_inputs())

    def run(self, _names: object, feeds: dict[str, npt.NDArray[np.int64]]) -> list[object]:
        binding = self._session.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        binding.bind_output("last_hidden_state")
        self._session.run_with_iobinding(binding)
        return list(binding.copy_outputs_to_cpu())


def _level(level: ort.GraphOptimizationLevel) -> Callable[[ort.SessionOptions], None]:
    def configure(options: ort.SessionOptions) -> None:
        options.graph_optimization_level = level
    return configure


def _parallel(options: ort.SessionOptions) -> None:
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    options.inter_op_num_threads = 2


def _unchanged(options: ort.SessionOptions) -> None:
    return None


CONFIGS: dict[str, Factory] = {
    "baseline": lambda: MiniLMEncoder(batch_size=8, threads=2, spinning=True),
    "default": MiniLMEncoder,
    "spinning off": lambda: MiniLMEncoder(spinning=False),
    "threads 1": lambda: MiniLMEncoder(threads=1, spinning=True),
    "threads 1 spinning off": lambda: MiniLMEncoder(threads=1, spinning=False),
    "batch 4": lambda: MiniLMEncoder(batch_size=4, spinning=True),
    "batch 16": lambda: MiniLMEncoder(batch_size=16, spinning=True),
    "ORT_ENABLE_BASIC": lambda: _SessionVariant(
        _level(ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)),
    "ORT_ENABLE_EXTENDED": lambda: _SessionVariant(
        _level(ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)),
    "parallel 2 inter-op": lambda: _SessionVariant(_parallel),
    "IO binding": lambda: _SessionVariant(_unchanged, io_binding=True),
}
QUICK = ("baseline", "default", "spinning off", "threads 1", "threads 1 spinning off")


def blocks(texts: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(texts), size):
        yield texts[start : start + size]


class Encodes(Protocol):
    def encode(self, texts: list[str]) -> object: ...


def measure(encoders: Mapping[str, Encodes], texts: list[str], rounds: int,
            block: int, reference: str = "baseline") -> dict[str, dict[str, float]]:
    names = list(encoders)
    round_seconds: dict[str, list[float]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    flip = False
    for _ in range(rounds):
        totals = dict.fromkeys(names, 0.0)
        for part in blocks(texts, block):
            order = names[::-1] if flip else names
            flip = not flip
            seconds: dict[str, float] = {}
            for name in order:
                started = time.perf_counter()
                encoders[name].encode(part)
                seconds[name] = time.perf_counter() - started
                totals[name] += seconds[name]
            for name in names:
                ratios[name].append(seconds[reference] / seconds[name])
        for name in names:
            round_seconds[name].append(totals[name])
    return {
        name: {
            "chunks_per_s": round(len(texts) / statistics.median(round_seconds[name]), 2),
            "ratio": round(statistics.median(ratios[name]), 3),
            "round_seconds": [round(s, 2) for s in round_seconds[name]],  # type: ignore[dict-item]
        }
        for name in names
    }


def min_cosines(encoders: dict[str, MiniLMEncoder], texts: list[str]) -> dict[str, float]:
    reference = encoders["baseline"].encode(texts)
    return {name: float(np.min(np.sum(encoder.encode(texts) * reference, axis=1)))
            for name, encoder in encoders.items()}


def build_encoder(spec: str, threads: int) -> Encoder:
    """``NAME`` of the registry, or ``NAME@MAX_LENGTH`` for an ONNX one at another length."""
    name, _, length = spec.partition("@")
    if not length:
        return encoder_by_name(name, threads=threads)
    if name == "minilm":
        return MiniLMEncoder(max_length=int(length), threads=threads)
    if name == "bge-small":
        return BgeSmallEncoder(max_length=int(length), threads=threads)
    if name == "e5-small":
        return E5SmallEncoder(max_length=int(length), threads=threads)
    raise SystemExit(f"--encoder {spec!r}: @MAX_LENGTH only for minilm, bge-small, e5-small")


def compare_encoders(args: argparse.Namespace, texts: list[str], source: str) -> int:
    """Every ``--encoder`` against MiniLM, on the same texts in the same interleaved run."""
    names = ["minilm", *[n for n in args.encoder if n != "minilm"]]
    encoders = {name: build_encoder(name, args.threads) for name in names}
    tokens: dict[str, list[int]] = {}
    for name, encoder in encoders.items():
        if isinstance(encoder, OnnxSentenceEncoder):
            prefixed = [encoder.prefix("passage") + t for t in texts]
            tokens[name] = [len(e.ids) for e in encoder._tokenizer.encode_batch(prefixed)]
    results = measure(encoders, texts, args.rounds, args.block, reference="minilm")
    rows: dict[str, dict[str, object]] = {}
    for name, encoder in encoders.items():
        row: dict[str, object] = {"model_id": encoder.model_id, **results[name]}
        if name in tokens:
            cut = getattr(encoder, "max_length", 0)
            row["tokens_median"] = statistics.median(tokens[name])
            row["chunks_at_max_length"] = sum(t >= cut for t in tokens[name])
        rows[name] = row
    report = {
        "texts": source, "chunks": len(texts), "rounds": args.rounds, "block": args.block,
        "threads": args.threads, "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2), "onnxruntime": ort.__version__,
        "encoders": rows,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{len(texts)} chunks of {source} as passages; blocks of {args.block}, "
          f"{args.rounds} rounds, {args.threads} threads; {report['cpus']} CPUs, load average "
          f"{report['load_average_1m']} at the end; onnxruntime {ort.__version__}")
    print(f"{'encoder':16} {'model_id':30} {'chunks/s':>9} {'x minilm':>9} {'tokens':>7} "
          f"{'cut':>4}")
    for name, row in rows.items():
        print(f"{name:16} {row['model_id']!s:30} {row['chunks_per_s']:9.2f} "
              f"{row['ratio']:8.3f}x {row.get('tokens_median', '-')!s:>7} "
              f"{row.get('chunks_at_max_length', '-')!s:>4}")
    return 0


class ViewCost:
    """A dense view as the backfill runs it: each chunk cut (windows) and every piece
    encoded; ``encode`` takes chunk texts, so ``measure`` times a block of chunks."""

    def __init__(self, spec: ViewSpec, encoder: Encoder) -> None:
        self.encoder = encoder
        self.model_id = encoder.model_id
        shape = spec.shape
        self.cut = (lambda t: [t]) if shape is None else functools.partial(
            embed_windows, words=shape.words, stride=shape.stride)
        self.pieces = 0

    def encode(self, texts: list[str]) -> object:
        flat = [piece for text in texts for piece in self.cut(text)]
        self.pieces += len(flat)
        return self.encoder.encode(flat, kind="passage")


def compare_views(args: argparse.Namespace, texts: list[str], source: str) -> int:
    """Each ``--views`` entry's indexing time per chunk against MiniLM over whole chunks
    (the one view there was before views), on the same chunks in the same interleaved run;
    then the sum of the listed views: what a chunk costs the backfill with all of them."""
    specs = parse_view_specs(args.views)
    built: dict[str, Encoder] = {}
    views: dict[str, ViewCost] = {"minilm (whole)": ViewCost(ViewSpec("minilm"), MiniLMEncoder(
        threads=args.threads))}
    for spec in specs:
        if spec.name not in built:
            built[spec.name] = build_encoder(spec.name, args.threads)
        label = spec.name + (spec.shape.suffix if spec.shape is not None else "")
        views[label] = ViewCost(spec, built[spec.name])
    results = measure(views, texts, args.rounds, args.block, reference="minilm (whole)")
    rounds = args.rounds
    print(f"{len(texts)} chunks of {source}; blocks of {args.block}, {rounds} rounds, "
          f"{args.threads} threads; load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'view':28} {'texts/chunk':>11} {'chunks/s':>9} {'time x minilm whole':>20}")
    total = 0.0
    for label, view in views.items():
        cost = 1.0 / results[label]["ratio"]
        if label != "minilm (whole)":
            total += cost
        print(f"{label:28} {view.pieces / (len(texts) * rounds):11.2f} "
              f"{results[label]['chunks_per_s']:9.2f} {cost:19.2f}x")
    print(f"{'all listed views':28} {'':11} {'':9} {total:19.2f}x")
    return 0


def load_times(rounds: int) -> dict[str, float]:
    """Seconds to build the encoder without and with the optimised-model cache (warm)."""
    with tempfile.TemporaryDirectory() as cache:
        MiniLMEncoder(optimized_model_dir=Path(cache))  # writes the cache once
        seconds: dict[str, list[float]] = {"no cache": [], "cache": []}
        for i in range(rounds):
            order = ["no cache", "cache"] if i % 2 == 0 else ["cache", "no cache"]
            for name in order:
                started = time.perf_counter()
                MiniLMEncoder(optimized_model_dir=Path(cache) if name == "cache" else None)
                seconds[name].append(time.perf_counter() - started)
    no_cache, cached = (statistics.median(seconds["no cache"]),
                        statistics.median(seconds["cache"]))
    return {"no_cache_s": round(no_cache, 3), "cache_s": round(cached, 3),
            "ratio": round(no_cache / cached, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--block", type=int, default=32, help="chunks per encode call")
    parser.add_argument("--configs", default=",".join(QUICK),
                        help=f"comma-separated, from: {', '.join(CONFIGS)}; or 'all'")
    parser.add_argument("--load-rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--encoder", action="append", default=[],
                        help="compare this encoder (registry name, optionally @MAX_LENGTH) "
                        "with MiniLM instead of the configurations; repeatable")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (--encoder)")
    parser.add_argument("--views", help="dense views (POLICY_INDEXER_ENCODERS syntax): each "
                        "one's indexing time per chunk against MiniLM over whole chunks, and "
                        "their sum")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    log = args.corpora / CORPUS
    if log.exists():
        texts, source = basecamp_final_chunks(log), f"{CORPUS} (final state)"
    else:
        texts, source = example_chunks(EXAMPLES), "examples/library"
    if args.views:
        return compare_views(args, texts, source)
    if args.encoder:
        return compare_encoders(args, texts, source)
    wanted = list(CONFIGS) if args.configs == "all" else args.configs.split(",")
    unknown = [n for n in wanted if n not in CONFIGS]
    if unknown:
        parser.error(f"unknown --configs {unknown!r}; known: {', '.join(CONFIGS)}")
    names = ["baseline", *[n for n in wanted if n != "baseline"]]
    encoders = {name: CONFIGS[name]() for name in names}

    tokens = [len(e.ids) for e in encoders["baseline"]._tokenizer.encode_batch(texts)]
    cosines = min_cosines(encoders, texts)
    results = measure(encoders, texts, args.rounds, args.block)
    load = load_times(args.load_rounds) if args.load_rounds > 0 else None
    report = {
        "texts": source, "chunks": len(texts),
        "wordpiece_tokens_median": statistics.median(tokens),
        "chunks_at_max_length": sum(t >= 256 for t in tokens),
        "rounds": args.rounds, "block": args.block, "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2), "onnxruntime": ort.__version__,
        "configs": {n: results[n] | {"min_cosine": round(cosines[n], 6)} for n in names},
        "load": load,
    }
    failed = [n for n in names if cosines[n] < MIN_COSINE]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{len(texts)} chunks of {source}: median {report['wordpiece_tokens_median']} "
              f"WordPiece tokens, {report['chunks_at_max_length']} cut at 256; blocks of "
              f"{args.block}, {args.rounds} rounds; {report['cpus']} CPUs, load average "
              f"{report['load_average_1m']}; onnxruntime {ort.__version__}")
        print(f"{'configuration':26} {'chunks/s':>9} {'x baseline':>11} {'min cos':>10}")
        for name in names:
            row = report["configs"][name]
            print(f"{name:26} {row['chunks_per_s']:9.2f} {row['ratio']:10.3f}x "
                  f"{row['min_cosine']:10.6f}")
        if load is not None:
            print(f"\nbuilding the encoder: {load['no_cache_s']:.3f} s, with the optimised "
                  f"model cached {load['cache_s']:.3f} s ({load['ratio']:.2f}x)")
    for name in failed:
        print(f"FAIL {name}: min cosine {cosines[name]:.6f} < {MIN_COSINE}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
