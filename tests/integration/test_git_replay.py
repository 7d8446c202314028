"""The basecamp library's real history, replayed as Git pushes, ends as the final library.

A Git repository is built from the basecamp change log (one commit per change,
at its time), its commits are pushed in batches to an upstream repository, and
the running embedded pipeline learns of them through signed GitHub push
requests (a real ``@octokit/webhooks-examples`` payload, made this push) to
the receiver built by the composition root, or through the polling mode with
no webhook at all. The index must end equal to the library's final state at
the corpus's versions, and the Git source must list that state for the
monitor and the reconcile. A force-push that rewrites the last commits ends
the same way.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.git_library import (
    CorpusHistory,
    corpus_events,
    corpus_records,
    github_push,
    octokit_push_example,
)
from support.index_equality import assert_index_equals, expected_index
from support.waiting import wait_until

from events.model import Action, ChangeEvent
from metrics.definitions import WorkerMetrics
from policy_indexer.runtime.backends import EmbeddedBackends
from policy_indexer.runtime.sources import git_poller_part
from policy_indexer.runtime.webhook import webhook_app
from policy_indexer.settings import Settings
from sources.git import GitSource
from webhooks.serve import ServerThread

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

SECRET = "github-webhook-secret-for-tests"
REPOSITORY = "policy-team/basecamp-policies"
BATCH = 50


@dataclass
class Run:
    settings: Settings
    backends: EmbeddedBackends
    history: CorpusHistory
    records: list[dict[str, Any]]

    def wait_drained(self) -> None:
        queue, topic = self.backends.queue, self.backends.topic
        wait_until(lambda: queue.pending(topic) == 0, 120, "the local queue to drain")

    def source(self) -> GitSource:
        return GitSource(str(self.history.upstream), self.settings.source_path or "",
                         branch="main")


@contextmanager
def embedded(tmp_path: Path, **extra: Any) -> Iterator[Run]:
    records = corpus_records()
    history = CorpusHistory(tmp_path / "git", records)
    settings = Settings(
        embedded_dir=tmp_path / "data", source_kind="git", source_url=str(history.upstream),
        source_path=str(tmp_path / "mirror"), git_repository=REPOSITORY, git_branch="main",
        commit_every_records=50, **extra,
    )
    backends = EmbeddedBackends.open(settings)
    worker = backends.start_worker(WorkerMetrics.create(CollectorRegistry()))
    try:
        yield Run(settings, backends, history, records)
    finally:
        worker.stop()
        backends.close()


def send_push(url: str, body: bytes) -> httpx.Response:
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return httpx.post(url + "/webhooks/github", content=body, timeout=60, headers={
        "Content-Type": "application/json", "X-GitHub-Event": "push",
        "X-Hub-Signature-256": signature, "X-GitHub-Delivery": "d-1"})


def batch_ends(count: int) -> list[int]:
    return [*range(BATCH, count, BATCH), count]


def live_versions(records: list[dict[str, Any]]) -> dict[str, int]:
    last: dict[str, dict[str, Any]] = {}
    for r in records:
        last[r["document_id"]] = r
    return {d: r["version"] for d, r in last.items() if r["action"] == "upsert"}


def test_github_pushes_in_batches_end_as_the_final_library(tmp_path: Path) -> None:
    example = octokit_push_example()
    with embedded(tmp_path, webhook_github_secrets=[SECRET]) as run:
        app = webhook_app(run.settings, run.backends.publisher(), CollectorRegistry())
        with ServerThread(app) as server:
            start = 0
            for end in batch_ends(len(run.records)):
                before, after = run.history.push(run.history.commits[end - 1].sha)
                body = github_push(example, repository=REPOSITORY, branch="main", before=before,
                                   after=after, commits=run.history.commits[start:end])
                answer = send_push(server.url, body)
                assert answer.status_code == 202, answer.text
                assert answer.json()["status"] == "accepted"
                start = end
        run.wait_drained()
        assert_index_equals(run.backends.store, expected_index(corpus_events(run.records)))
        listed = {e.document_id: e.version for e in run.source().list_documents()}
        assert listed == live_versions(run.records)
        document = run.source().get_document("refund")
        last_refund = [r for r in run.records if r["document_id"] == "refund"][-1]
        assert document.content == last_refund["content"]
        assert document.changed_at == datetime.fromisoformat(
            last_refund["changed_at"].replace("Z", "+00:00")).astimezone(UTC)


def test_the_polling_mode_follows_the_pushes_without_any_webhook(tmp_path: Path) -> None:
    with embedded(tmp_path, git_poll_interval_seconds=0.2) as run:
        poller = git_poller_part(run.settings, run.backends.publisher())
        assert poller is not None
        poller.start()
        try:
            for end in batch_ends(len(run.records)):
                _, after = run.history.push(run.history.commits[end - 1].sha)
                wait_until(lambda: run.source().published_head(), 60,
                           f"the poller to publish up to {after[:12]}",
                           accept=lambda head, after=after: head == after)  # type: ignore[misc]
        finally:
            poller.stop()
        assert poller.error is None
        run.wait_drained()
        assert_index_equals(run.backends.store, expected_index(corpus_events(run.records)))


def test_a_force_push_that_rewrites_the_last_commits_ends_as_the_final_library(
    tmp_path: Path,
) -> None:
    example = octokit_push_example()
    with embedded(tmp_path, webhook_github_secrets=[SECRET]) as run:
        records, commits = run.records, run.history.commits
        # A document the real last commits change at least twice, so the draft's one
        # commit of it is outnumbered, and a draft document that the real history lacks.
        keep = len(records) - 20
        touched = [r["document_id"] for r in records[keep:] if r["action"] == "upsert"]
        twice = next(d for d in touched if touched.count(d) >= 2)
        path = next(r["path"] for r in records[keep:] if r["document_id"] == twice)
        draft = [
            {"seq": 0, "action": "upsert", "path": "drafts/unreviewed/index.md",
             "changed_at": records[-1]["changed_at"], "content": "# Draft\n\nNot approved.\n"},
            {"seq": 0, "action": "upsert", "path": path, "changed_at": records[-1]["changed_at"],
             "content": "# DRAFT\n\nThis rule was never approved.\n"},
        ]
        drafted = run.history.rewrite(keep, draft, marker=" [draft]")
        app = webhook_app(run.settings, run.backends.publisher(), CollectorRegistry())
        with ServerThread(app) as server:
            start = 0
            for end in batch_ends(keep):
                before, after = run.history.push(commits[end - 1].sha)
                body = github_push(example, repository=REPOSITORY, branch="main",
                                   before=before, after=after, commits=commits[start:end])
                assert send_push(server.url, body).status_code == 202
                start = end
            before, after = run.history.push(drafted[-1].sha)
            body = github_push(example, repository=REPOSITORY, branch="main", before=before,
                               after=after, commits=drafted)
            assert send_push(server.url, body).status_code == 202
            run.wait_drained()
            state = run.backends.store.get_state(twice)
            assert state is not None
            drafted_version = state.version
            # The author throws the draft away and force-pushes the real commits.
            before, after = run.history.push(commits[-1].sha, force=True)
            body = github_push(example, repository=REPOSITORY, branch="main", before=before,
                               after=after, commits=commits[keep:], forced=True)
            answer = send_push(server.url, body)
            assert answer.status_code == 202, answer.text
            assert answer.json()["forced"] is True
        run.wait_drained()
        events = corpus_events(records)
        assert max(e.version for e in events if e.document_id == twice) > drafted_version
        gone = ChangeEvent(event_id="draft-gone", document_id="drafts/unreviewed",
                           action=Action.DELETE, version=2, changed_at=events[-1].changed_at)
        assert_index_equals(run.backends.store, expected_index([*events, gone]))
        listed = {e.document_id: e.version for e in run.source().list_documents()}
        assert listed == live_versions(records)
