"""The folder watcher feeding the embedded pipeline: the index follows the sample library.

The watcher publishes to the local queue; the queue worker indexes into the
SQLite store; both run in threads of this process, as in ``policy-indexer run``.
Each change of the folder (create, edit, rename, delete, and an edit made while
the watcher was stopped) must show in the index within two seconds.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from support.waiting import wait_until

from metrics.definitions import WorkerMetrics
from policy_indexer.runtime.backends import EmbeddedBackends
from policy_indexer.runtime.parts import ThreadPart
from policy_indexer.settings import Settings
from sources.folder import MarkdownFolderSource
from store.sqlite import SQLiteStore
from watcher.watch import STATE_FILE, WatcherThread, start_watcher_thread

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "library"
FOLLOW_S = 2.0  # the bound: the index follows each change within two seconds
EVERYONE = ["public", "agents"]


@dataclass
class Running:
    library: Path
    embedded: EmbeddedBackends
    worker: ThreadPart
    watcher: WatcherThread | None = None

    @property
    def store(self) -> SQLiteStore:
        return self.embedded.store

    def start_watcher(self) -> None:
        self.watcher = start_watcher_thread(
            self.library, self.embedded.publisher(),
            state_path=self.embedded.settings.embedded_dir / STATE_FILE, index=self.store,
        )

    def live(self, document_id: str) -> bool:
        state = self.store.get_state(document_id)
        return state is not None and not state.deleted

    def finds(self, word: str, document_id: str, labels: list[str] = EVERYONE) -> bool:
        hits = self.store.search(word, access_labels=labels, limit=20)
        return any(hit.chunk.document_id == document_id for hit in hits)

    def matches_folder(self) -> bool:
        source = MarkdownFolderSource(self.library)
        listed = {e.document_id: e.version for e in source.list_documents()}
        states = {s.document_id: s for s in self.store.iter_states() if not s.deleted}
        return states.keys() == listed.keys() and all(
            states[d].version >= v for d, v in listed.items()
        ) and {c.document_id for c in self.store.iter_chunks()} == listed.keys()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    library = tmp_path / "library"
    shutil.copytree(EXAMPLES, library)
    settings = Settings(
        embedded_dir=tmp_path / "data", kafka_topic=f"folder-{uuid.uuid4().hex[:8]}",
        commit_every_seconds=0.2,
    )
    embedded = EmbeddedBackends.open(settings)
    worker = embedded.start_worker(WorkerMetrics.create(CollectorRegistry()))
    run = Running(library, embedded, worker)
    run.start_watcher()
    try:
        yield run
    finally:
        assert run.watcher is not None
        run.watcher.stop()
        worker.stop()
        embedded.close()
        assert run.watcher.error is None and worker.error is None


def test_the_index_follows_every_change_of_the_library_within_two_seconds(
    running: Running,
) -> None:
    r, lib = running, running.library
    wait_until(r.matches_folder, 20, "the first indexing of the whole sample library",
               every_s=0.02)
    assert r.finds("goodwill", "refunds/agent-handbook", ["public", "agents"])
    assert not r.finds("goodwill", "refunds/agent-handbook", ["public"])  # agents only
    assert r.finds("opening", "help/contact", ["public"])  # HTML, labels from <meta>
    assert not r.finds("opening", "help/contact", [])

    (lib / "promotions" / "autumn.md").write_text(
        "---\ntitle: Autumn offer\naccess_labels: [public]\n---\n## Offer\nPumpkinride day.\n"
    )
    wait_until(lambda: r.finds("pumpkinride", "promotions/autumn"), FOLLOW_S,
               "the created document to be found", every_s=0.02)

    policy = lib / "refunds" / "index.md"
    policy.write_text(policy.read_text().replace("60 days", "90 days (zeppelinrule)"))
    wait_until(lambda: r.finds("zeppelinrule", "refunds"), FOLLOW_S,
               "the edit to be found", every_s=0.02)

    (lib / "promotions" / "spring-pass.md").rename(lib / "promotions" / "spring-pass-2027.md")
    wait_until(lambda: r.live("promotions/spring-pass-2027")
               and not r.live("promotions/spring-pass"), FOLLOW_S,
               "the rename in the index", every_s=0.02)

    (lib / "cities" / "valencia" / "fallas-week.md").unlink()
    wait_until(lambda: not r.live("cities/valencia/fallas-week")
               and not r.finds("fallas", "cities/valencia/fallas-week"), FOLLOW_S,
               "the deleted document to leave the index", every_s=0.02)
    # Old versions and deleted documents' chunks gone:
    wait_until(r.matches_folder, FOLLOW_S, "the index to match the folder", every_s=0.02)

    assert r.watcher is not None
    r.watcher.stop()  # changes made while no watcher runs
    annex = lib / "cities" / "lisbon" / "index.md"
    annex.write_text(annex.read_text().replace("Graça", "Graça, Quiosquetram"))
    (lib / "help" / "contact.html").unlink()
    r.start_watcher()
    wait_until(lambda: r.finds("quiosquetram", "cities/lisbon")
               and not r.live("help/contact"), FOLLOW_S,
               "the changes made while no watcher ran", every_s=0.02)
    wait_until(r.matches_folder, FOLLOW_S, "the index to match the folder again",
               every_s=0.02)
