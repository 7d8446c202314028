"""A GitHub push, a GitLab push and a Standard Webhooks request end as chunks in Elasticsearch.

On the real services: the receiver publishes to a real Kafka topic, the
worker of the pipeline contract suite indexes into a real Elasticsearch
index, and each adapter's request ends as the right document at the right
version there.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry
from standardwebhooks.webhooks import Webhook
from support.git_library import git, github_push, octokit_push_example
from support.kafka_topics import MAX_MESSAGE_BYTES
from support.pipelines import kafka_pipeline
from support.waiting import wait_until
from support.webhook_helpers import encode, payload

from sources.git import GitSource
from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig
from webhooks.adapters.base import Adapter
from webhooks.adapters.git_push import GitPushTarget
from webhooks.adapters.github import GitHubPushAdapter, sign
from webhooks.adapters.gitlab import GitLabPushAdapter
from webhooks.adapters.standard import StandardWebhooksAdapter, decode_secret
from webhooks.app import create_app
from webhooks.serve import ServerThread

pytestmark = pytest.mark.services

SECRET = b"github-secret-on-kafka-000001"
TOKEN = b"gitlab-token-on-kafka-0000001"
STANDARD = "whsec_" + base64.b64encode(b"standard-secret-on-kafka-0001").decode()
REPOSITORY = "policy-team/library"


def test_each_adapter_request_ends_as_its_chunks_in_elasticsearch(
    request: pytest.FixtureRequest, tmp_path: Path, unique: str, kafka_bootstrap: str
) -> None:
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    remote.mkdir()
    git(remote, "init", "--quiet", "--bare")
    work.mkdir()
    git(work, "init", "--quiet", "-b", "main")

    def commit_and_push(name: str, content: str) -> str:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(content, encoding="utf-8")
        git(work, "add", name)
        git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet",
            "-m", name)
        subprocess.run(["git", "-C", str(work), "push", "--quiet", str(remote),
                        "HEAD:refs/heads/main"], check=True, capture_output=True)
        return git(work, "rev-parse", "HEAD").strip()

    with kafka_pipeline(request) as pipeline:
        publisher = KafkaEventPublisher(KafkaPublisherConfig(
            bootstrap_servers=kafka_bootstrap, topic=f"{unique}-changes", timeout_seconds=10,
            max_message_bytes=MAX_MESSAGE_BYTES))
        target = GitPushTarget(REPOSITORY, "main", GitSource(str(remote), tmp_path / "mirror"))
        adapters: list[Adapter] = [
            GitHubPushAdapter([SECRET], target), GitLabPushAdapter([TOKEN], target),
            StandardWebhooksAdapter([decode_secret(STANDARD)])]
        app = create_app(None, publisher, CollectorRegistry(), adapters=adapters)
        try:
            with ServerThread(app) as server:
                after = commit_and_push("refund/index.md", "# Refunds\n\n## Late\n\n60 days.\n")
                body = github_push(octokit_push_example(), repository=REPOSITORY, branch="main",
                                   before="0" * 40, after=after, commits=[])
                answer = httpx.post(server.url + "/webhooks/github", content=body, timeout=60,
                                    headers={"Content-Type": "application/json",
                                             "X-GitHub-Event": "push",
                                             "X-Hub-Signature-256": sign(SECRET, body)})
                assert answer.status_code == 202, answer.text
                after = commit_and_push("terms.md", "# Terms\n\n## Use\n\nBe kind.\n")
                body = json.dumps({"object_kind": "push", "ref": "refs/heads/main",
                                   "before": "0" * 40, "after": after,
                                   "project": {"path_with_namespace": REPOSITORY}}).encode()
                answer = httpx.post(server.url + "/webhooks/gitlab", content=body, timeout=60,
                                    headers={"Content-Type": "application/json",
                                             "X-Gitlab-Event": "Push Hook",
                                             "X-Gitlab-Token": TOKEN.decode()})
                assert answer.status_code == 202, answer.text
                assert answer.json()["document_ids"] == ["terms"]
                body = encode(payload(version=5))
                now = time.time()
                signature = Webhook(STANDARD).sign("msg_k1", datetime.fromtimestamp(now, UTC),
                                                   body.decode())
                answer = httpx.post(server.url + "/webhooks/standard", content=body, timeout=60,
                                    headers={"Content-Type": "application/json",
                                             "webhook-id": "msg_k1",
                                             "webhook-timestamp": str(int(now)),
                                             "webhook-signature": signature})
                assert answer.status_code == 202, answer.text
        finally:
            publisher.close()
        pipeline.wait_caught_up()
        store = pipeline.store

        def indexed() -> dict[str, int]:
            store.refresh()
            return {d: s.version for d in ("refund", "terms", "refunds/late-delivery")
                    if (s := store.get_state(d)) is not None and not s.deleted}

        wait_until(indexed, 60, "the three documents in Elasticsearch",
                   accept=lambda v: v == {"refund": 1, "terms": 1, "refunds/late-delivery": 5})
        chunks = {ref.chunk_id for ref in store.iter_chunks()}
        assert any(c.startswith("refund@v1#") for c in chunks), chunks
        assert any(c.startswith("terms@v1#") for c in chunks), chunks
        assert any(c.startswith("refunds/late-delivery@v5#") for c in chunks), chunks
