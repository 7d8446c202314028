"""How fast the embedded index follows an edit of a watched folder, beside a direct publish.

    .venv/bin/python bench/bench_folder_watch.py [--edits 40] [--debounce-ms 400]

Both runs use a copy of the sample library (examples/library), the local
queue, the queue worker and the SQLite store in threads of this process, as
``policy-indexer run`` does.

1. Baseline: the change event of each edit is published straight to the local
   queue (what the watcher would publish, with no file system in between);
   time from publish to the moment the index holds the new version.
2. Watcher: the file is rewritten; time from the write to the moment the index
   holds a new version. The difference is the watcher's cost: notification,
   the quiet period that ends a burst, the folder comparison.

Prints median and 95th percentile of each, and their ratio. Also the
start-up: time to index the whole sample library from an empty index.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client import CollectorRegistry

from events.model import Action, ChangeEvent
from metrics.definitions import WorkerMetrics
from policy_indexer.logs import configure_logging
from policy_indexer.runtime.backends import EmbeddedBackends
from policy_indexer.settings import Settings
from watcher.watch import STATE_FILE, start_watcher_thread

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "library"
DOCUMENT = "refunds"


def wait(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("the index did not follow in 30 s")
        time.sleep(0.002)


def version_of(embedded: EmbeddedBackends) -> int:
    state = embedded.store.get_state(DOCUMENT)
    return 0 if state is None else state.version


def summary(name: str, seconds: list[float]) -> float:
    median = statistics.median(seconds)
    p95 = sorted(seconds)[int(0.95 * (len(seconds) - 1))]
    print(f"{name:<10} median {median * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   "
          f"n={len(seconds)}")
    return median


def run(edits: int, debounce_ms: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    try:
        library = work / "library"
        shutil.copytree(EXAMPLES, library)
        settings = Settings(embedded_dir=work / "data", kafka_topic=f"b-{uuid.uuid4().hex[:8]}",
                            commit_every_seconds=0.2)
        embedded = EmbeddedBackends.open(settings)
        worker = embedded.start_worker(WorkerMetrics.create(CollectorRegistry()))
        path = library / "refunds" / "index.md"
        text = path.read_text()
        try:
            direct: list[float] = []
            publisher = embedded.publisher()
            for n in range(1, edits + 1):
                event = ChangeEvent(
                    event_id=uuid.uuid4().hex, document_id=DOCUMENT, action=Action.UPSERT,
                    version=n, changed_at=datetime.now(UTC), content_type="text/markdown",
                    content=f"{text}\nBaseline edit {n}.\n",
                )
                began = time.perf_counter()
                publisher.publish(event)
                wait(lambda n=n: version_of(embedded) >= n)
                direct.append(time.perf_counter() - began)

            began = time.perf_counter()
            watcher = start_watcher_thread(
                library, embedded.publisher(), state_path=settings.embedded_dir / STATE_FILE,
                index=embedded.store, debounce_ms=debounce_ms,
            )
            documents = len(list(library.rglob("*.md"))) + len(list(library.rglob("*.html")))
            wait(lambda: sum(1 for _ in embedded.store.iter_states()) >= documents
                 and version_of(embedded) > edits)
            start_up = time.perf_counter() - began
            watched: list[float] = []
            for n in range(edits):
                before = version_of(embedded)
                began = time.perf_counter()
                path.write_text(f"{text}\nWatched edit {n}.\n")
                wait(lambda before=before: version_of(embedded) > before)
                watched.append(time.perf_counter() - began)
            watcher.stop()
        finally:
            worker.stop()
            embedded.close()
        print(f"edits of {DOCUMENT!r} in the sample library, debounce {debounce_ms} ms")
        base = summary("direct", direct)
        mine = summary("watcher", watched)
        print(f"watcher / direct (median): {mine / base:.1f}x")
        print(f"start-up: {documents} documents indexed from an empty index in "
              f"{start_up * 1000:.0f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--debounce-ms", type=int, default=400)
    args = parser.parse_args()
    configure_logging("WARNING", "json")
    run(args.edits, args.debounce_ms)


if __name__ == "__main__":
    main()
