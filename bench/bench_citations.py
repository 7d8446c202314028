"""check_citations latency, and what recording every search as a run costs (issue 24).

    .venv/bin/python bench/bench_citations.py                         # SQLite and ES
    .venv/bin/python bench/bench_citations.py --store sqlite --json bench/results/citations.json

The sample library (``examples/library``) is indexed the way the tests do it:
``policy-indexer reindex`` then ``policy-indexer embed --once`` in a fresh embedded
directory (SQLite), or with ``POLICY_INDEXER_PIPELINE=kafka`` into a fresh index prefix
on Elasticsearch (``--store elasticsearch``: skipped, with the reason, when ES does not
answer; the prefix's indices are deleted at the end). The search side is then built in
this process by the composition root, ``policy_indexer.runtime.search.searching``, as
``policy-indexer search`` builds it (freshness and reranker off): the service, its
run log and the citation checker.

Measured, per store, all in one run so every figure shares the machine's load:

1. **check**: ``CitationChecker.check`` of a reply with 1 and with 10 citations of a
   recorded run (each with the passage's version, a quote cut from its text and a
   claim carrying one of its numbers; every one ok), alternating 1 and 10 round by
   round. p50/p95 in milliseconds. Goal: 10 citations p95 < 50 ms embedded.
2. **search with the run log on against off**: the same questions through the bare
   ``SearchService`` (off) and through ``SearchParts.recording()`` (on: each answer
   written to the run log), alternating rounds, the order reversed each round.
   p50/p95 of each and the on/off ratios. Goal: within 10% (ratio <= 1.10).

The table goes to stdout; ``--json FILE`` writes every figure and the machine note
(cores, load average before and after, date).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from policy_indexer.runtime.search import SearchParts, searching
from policy_indexer.settings import Settings
from retrieval.citations import CheckRequest, Citation
from retrieval.credentials import Caller
from retrieval.models import SearchRequest, SearchResponse
from retrieval.recording import LOCAL_KEY_ID

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "examples" / "library"
CLI = str(Path(sys.executable).with_name("policy-indexer"))
LABELS = frozenset({"public", "agents"})
AS_OF = date(2026, 12, 1)
# Questions the sample library answers (each ``ok`` with the threshold of the settings).
QUESTIONS = [
    "refund for a flat tyre",
    "goodwill credit limits for agents",
    "who can ask for a refund",
    "how does the money come back after a refund",
    "damage and parking charges",
    "beach surcharge in lisbon in summer",
    "closed streets during fallas week in valencia",
    "refunds of a discounted spring pass",
]
NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), linear between the closest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "p50_ms": round(percentile(ms, 50), 2),
            "p95_ms": round(percentile(ms, 95), 2), "max_ms": round(max(ms), 2)}


# --- the index ------------------------------------------------------------------------


def cli_env(values: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env.update({"POLICY_INDEXER_SOURCE_KIND": "folder",
                "POLICY_INDEXER_SOURCE_PATH": str(LIBRARY),
                "POLICY_INDEXER_LOG_LEVEL": "WARNING"})
    env.update({f"POLICY_INDEXER_{k.upper()}": v for k, v in values.items()})
    return env


def index_the_library(values: dict[str, str]) -> None:
    """``reindex`` then ``embed --once``, as tests/integration/test_search_commands.py does."""
    env = cli_env(values)
    for args in (["reindex"], ["embed", "--once"]):
        done = subprocess.run([CLI, *args], env=env, capture_output=True, text=True,
                              timeout=600, check=False)
        if done.returncode != 0:
            raise SystemExit(f"policy-indexer {' '.join(args)} failed ({done.returncode}):\n"
                             f"{done.stdout}{done.stderr}")


@contextmanager
def sqlite_settings() -> Iterator[Settings]:
    with tempfile.TemporaryDirectory(prefix="bench-citations-") as tmp:
        values = {"embedded_dir": str(Path(tmp) / "embedded")}
        index_the_library(values)
        yield Settings(_env_file=None, embedded_dir=Path(values["embedded_dir"]))


def elasticsearch_unreachable(url: str) -> str | None:
    """Why ES cannot be used (None: it answers with a green or yellow cluster)."""
    try:
        answer = httpx.get(f"{url}/_cluster/health", timeout=3)
    except httpx.HTTPError as exc:
        return f"Elasticsearch is not reachable at {url}: {exc}"
    if answer.status_code != 200 or answer.json().get("status") not in {"green", "yellow"}:
        return f"Elasticsearch at {url} is not healthy: {answer.status_code} {answer.text[:200]}"
    return None


@contextmanager
def elasticsearch_settings(url: str) -> Iterator[Settings]:
    prefix = f"bench-citations-{uuid.uuid4().hex[:8]}"
    values = {"pipeline": "kafka", "elasticsearch_url": url, "index_prefix": prefix}
    try:
        index_the_library(values)
        yield Settings(_env_file=None, pipeline="kafka", elasticsearch_url=url,
                       index_prefix=prefix)
    finally:
        httpx.delete(f"{url}/{prefix}-*", params={"expand_wildcards": "all"}, timeout=60)


# --- the measures ---------------------------------------------------------------------


def citations_of(answer: SearchResponse, count: int) -> list[Citation]:
    """``count`` citations of the run's passages (cycled), each ok: version, quote, claim."""
    cited: list[Citation] = []
    passages = answer.passages
    for i in range(count):
        p = passages[i % len(passages)]
        words = p.text.split()
        quote = " ".join(words[2:9]) if len(words) > 9 else p.text.strip()
        numbers = NUMBER.findall(p.text)
        claim = (f"The policy says {numbers[0]} applies here." if numbers
                 else "The policy applies here.")
        cited.append(Citation(document_id=p.document_id, clause=p.clause, version=p.version,
                              quote=quote, claim=claim))
    return cited


@dataclass
class StoreResult:
    store: str
    check: dict[int, list[float]] = field(default_factory=dict)
    search: dict[str, list[float]] = field(default_factory=dict)
    round_ratios: dict[str, list[float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        search: dict[str, Any] = {}
        for kind, ratios in self.round_ratios.items():
            on, off = summary(self.search[f"{kind}_on"]), summary(self.search[f"{kind}_off"])
            search[kind] = {
                "run_log_off": off, "run_log_on": on,
                "ratio_p50": round(on["p50_ms"] / off["p50_ms"], 3),
                "ratio_p95": round(on["p95_ms"] / off["p95_ms"], 3),
                "median_round_ratio": round(statistics.median(ratios), 3),
            }
        return {"store": self.store,
                "check": {f"{n}_citations": summary(v) for n, v in self.check.items()},
                "search": search}


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure(store: str, parts: SearchParts, args: argparse.Namespace) -> StoreResult:
    checker, recording = parts.checker, parts.recording()
    if checker is None or parts.run_log is None:
        raise SystemExit(f"{store}: the search parts have no run log / citation checker")
    result = StoreResult(store, check={1: [], 10: []},
                         search={f"{k}_{s}": [] for k in ("repeated", "fresh")
                                 for s in ("on", "off")},
                         round_ratios={"repeated": [], "fresh": []})

    # 1. check_citations of a recorded run (the command line's caller, as check-citations)
    answer = recording.search(SearchRequest(question=QUESTIONS[0], as_of=AS_OF, k=10),
                              LABELS)
    if answer.status != "ok" or answer.run_id is None:
        raise SystemExit(f"{store}: the search to cite answered {answer.status}, "
                         f"run_id {answer.run_id}")
    caller = Caller(LOCAL_KEY_ID, LABELS)
    requests = {n: CheckRequest(run_id=answer.run_id, citations=citations_of(answer, n))
                for n in (1, 10)}
    for n, request in requests.items():
        checked = checker.check(request, caller)
        if not checked.ok:
            problems = [r.problems for r in checked.results if not r.ok]
            raise SystemExit(f"{store}: {n} citations of the run are not ok: {problems}")
    for _ in range(args.warmup):
        for request in requests.values():
            checker.check(request, caller)
    def check_once(request: CheckRequest) -> Callable[[], object]:
        return lambda: checker.check(request, caller)

    for i in range(args.checks):
        for n in ((1, 10) if i % 2 == 0 else (10, 1)):
            result.check[n].append(timed(check_once(requests[n])))

    # 2. search, run log off (the bare service) against on (recorded), alternating rounds:
    # "repeated": the same questions each round (their vectors in the query cache);
    # "fresh": each search a question never asked before (encoded by MiniLM)
    sides: dict[str, Callable[[SearchRequest], object]] = {
        "off": lambda r: parts.service.search(r, LABELS),
        "on": lambda r: recording.search(r, LABELS),
    }
    for _ in range(args.warmup):
        for side in sides.values():
            for q in QUESTIONS:
                side(SearchRequest(question=q, as_of=AS_OF))
    for kind in ("repeated", "fresh"):
        for r in range(args.rounds):
            per_round: dict[str, list[float]] = {}
            for name in (("off", "on") if r % 2 == 0 else ("on", "off")):
                side = sides[name]
                asked = [SearchRequest(question=q if kind == "repeated"
                                       else f"{q} (ticket {name} {r} {i})", as_of=AS_OF)
                         for i, q in enumerate(QUESTIONS)]
                per_round[name] = [timed(partial(side, one)) for one in asked]
                result.search[f"{kind}_{name}"].extend(per_round[name])
            result.round_ratios[kind].append(
                statistics.median(per_round["on"]) / statistics.median(per_round["off"]))
    return result


def render(results: list[dict[str, Any]], skipped: dict[str, str]) -> str:
    lines = ["check_citations (CitationChecker.check, ms)",
             "| store | citations | n | p50 | p95 | max |", "|---|---|---|---|---|---|"]
    for res in results:
        for key, s in res["check"].items():
            lines.append(f"| {res['store']} | {key.split('_')[0]} | {s['n']} | "
                         f"{s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {s['max_ms']:.1f} |")
    lines += ["", "search, run log off against on (ms)",
              "| store | questions | n each | off p50 | on p50 | off p95 | on p95 | "
              "p50 on/off | p95 on/off | median round on/off |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        for kind, s in res["search"].items():
            off, on = s["run_log_off"], s["run_log_on"]
            lines.append(f"| {res['store']} | {kind} | {off['n']} | {off['p50_ms']:.1f} | "
                         f"{on['p50_ms']:.1f} | {off['p95_ms']:.1f} | {on['p95_ms']:.1f} | "
                         f"{s['ratio_p50']:.3f} | {s['ratio_p95']:.3f} | "
                         f"{s['median_round_ratio']:.3f} |")
    for store, reason in skipped.items():
        lines.append(f"{store}: skipped: {reason}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", action="append", choices=["sqlite", "elasticsearch"],
                        help="sqlite, elasticsearch (repeatable; default both)")
    parser.add_argument("--elasticsearch-url", default="http://127.0.0.1:9200")
    parser.add_argument("--checks", type=int, default=200,
                        help="checks of each size (1 and 10 citations)")
    parser.add_argument("--rounds", type=int, default=30,
                        help="rounds of searches, each side once per question")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args()
    stores = args.store or ["sqlite", "elasticsearch"]

    load_before = os.getloadavg()
    results: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for store in stores:
        if store == "sqlite":
            opened = sqlite_settings()
        else:
            reason = elasticsearch_unreachable(args.elasticsearch_url)
            if reason is not None:
                skipped[store] = reason
                print(f"{store}: skipped: {reason}", file=sys.stderr)
                continue
            opened = elasticsearch_settings(args.elasticsearch_url)
        with opened as settings, searching(settings, freshness=False,
                                           rerank=False) as (_backends, parts):
            results.append(measure(store, parts, args).to_json())
    load_after = os.getloadavg()

    print(render(results, skipped))
    machine = {"cores": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
               "load_after": [round(x, 2) for x in load_after],
               "date": datetime.now(UTC).isoformat(timespec="seconds")}
    print(f"\n{machine['date']}, {machine['cores']} cores, 1-minute load "
          f"{load_before[0]:.1f} -> {load_after[0]:.1f}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(
            {"command": " ".join(["bench/bench_citations.py", *sys.argv[1:]]),
             "machine": machine, "results": results, "skipped": skipped}, indent=2) + "\n",
            encoding="utf-8")


if __name__ == "__main__":
    main()
