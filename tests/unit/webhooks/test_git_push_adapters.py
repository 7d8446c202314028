"""POST /webhooks/github and /webhooks/gitlab on a real Git repository, in-process.

A real GitHub push payload (``@octokit/webhooks-examples``) signed as GitHub
signs it is accepted and its changes published; the same body with any one
byte changed, a wrong signature, another repository, another branch, another
event or a malformed body each get their documented status, and nothing is
published.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient
from support.git_library import git, octokit_push_example
from support.webhook_helpers import NOW, MemoryPublisher

from events.model import Action
from sources.git import GitSource
from webhooks.adapters.base import Adapter
from webhooks.adapters.git_push import GitPushTarget
from webhooks.adapters.github import GitHubPushAdapter
from webhooks.adapters.gitlab import GitLabPushAdapter
from webhooks.app import create_app

SECRET = b"github-secret-for-unit-tests-01"
OLD_SECRET = b"github-secret-being-rotated-02"
TOKEN = b"gitlab-token-for-unit-tests-001"
REPOSITORY = "Codertocat/Hello-World"  # the repository of the octokit example


@dataclass
class Upstream:
    path: Path
    work: Path

    def commit(self, files: dict[str, str | None], message: str) -> str:
        for name, content in files.items():
            target = self.work / name
            if content is None:
                git(self.work, "rm", "--quiet", name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
            git(self.work, "add", name)
        git(self.work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit",
            "--quiet", "-m", message)
        git(self.work, "push", "--quiet", "origin", "HEAD:refs/heads/master")
        return git(self.work, "rev-parse", "HEAD").strip()


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    bare, work = tmp_path / "upstream.git", tmp_path / "work"
    bare.mkdir()
    git(bare, "init", "--quiet", "--bare")
    work.mkdir()
    git(work, "init", "--quiet", "-b", "master")
    git(work, "remote", "add", "origin", str(bare))
    return Upstream(bare, work)


@pytest.fixture
def client(upstream: Upstream, tmp_path: Path,
           publisher: MemoryPublisher) -> Iterator[TestClient]:
    source = GitSource(str(upstream.path), tmp_path / "mirror", branch="master")
    target = GitPushTarget(REPOSITORY, "master", source)
    adapters: list[Adapter] = [GitHubPushAdapter([SECRET, OLD_SECRET], target),
                GitLabPushAdapter([TOKEN], target)]
    app = create_app(None, publisher, CollectorRegistry(), clock=lambda: NOW, adapters=adapters)
    with TestClient(app) as client:
        yield client


def github_headers(body: bytes, secret: bytes = SECRET, event: str = "push") -> dict[str, str]:
    return {"Content-Type": "application/json", "X-GitHub-Event": event,
            "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()}


def real_push(after: str, **changes: Any) -> bytes:
    """The octokit example, untouched but for the commit it names (and ``changes``)."""
    example = octokit_push_example()
    example.update(after=after, **changes)
    return json.dumps(example).encode()


def test_a_real_github_push_signed_by_github_publishes_the_changes(
    client: TestClient, upstream: Upstream, publisher: MemoryPublisher
) -> None:
    upstream.commit({"refund/index.md": "# Refunds\n\n60 days.\n", "terms.md": "# Terms\n"}, "1")
    head = upstream.commit({"refund/index.md": "# Refunds\n\n90 days.\n"}, "2")
    body = real_push(head)
    answer = client.post("/webhooks/github", content=body, headers=github_headers(body))
    assert answer.status_code == 202, answer.text
    assert answer.json()["events"] == 2
    by_id = {e.document_id: e for e in publisher.events}
    assert by_id["refund"].version == 2 and by_id["refund"].content == "# Refunds\n\n90 days.\n"
    assert by_id["terms"].version == 1
    # The next push publishes only what changed since, renames as delete + upsert.
    publisher.events.clear()
    head = upstream.commit({"terms.md": None, "legal/terms.md": "# Terms\n"}, "3")
    body = real_push(head)
    assert client.post("/webhooks/github", content=body,
                       headers=github_headers(body, OLD_SECRET)).status_code == 202
    assert {(e.document_id, e.action, e.version) for e in publisher.events} == {
        ("terms", Action.DELETE, 2), ("legal/terms", Action.UPSERT, 1)}


def test_any_byte_changed_is_refused_and_nothing_is_published(
    client: TestClient, upstream: Upstream, publisher: MemoryPublisher
) -> None:
    head = upstream.commit({"refund.md": "# Refunds\n"}, "1")
    body = real_push(head)
    headers = github_headers(body)
    for position in (0, len(body) // 2, len(body) - 1):
        tampered = bytearray(body)
        tampered[position] ^= 0x01
        answer = client.post("/webhooks/github", content=bytes(tampered), headers=headers)
        assert answer.status_code == 401, (position, answer.text)
    assert publisher.events == []


@pytest.mark.parametrize(
    ("change", "status", "error"),
    [
        ({"X-Hub-Signature-256": None}, 401, "unauthorized"),
        ({"X-Hub-Signature-256": "sha1=abc"}, 401, "unauthorized"),
        ({"secret": b"another-secret-of-some-length"}, 401, "unauthorized"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"),
        ({"body": {"repository": {"full_name": "someone/else"}}}, 403, "forbidden"),
        ({"body": {"ref": "refs/heads/feature"}}, 202, None),
        ({"body": {"ref": "refs/tags/v1"}}, 202, None),
        ({"body": {"after": "0" * 40, "deleted": True}}, 202, None),
        ({"X-GitHub-Event": "issues"}, 202, None),
        ({"X-GitHub-Event": "ping"}, 202, None),
        ({"raw": b"{not json"}, 400, "invalid_json"),
        ({"raw": b"[1, 2]"}, 400, "invalid_json"),
        ({"body": {"after": "not-a-sha"}}, 422, "invalid_payload"),
        ({"drop": "repository"}, 422, "invalid_payload"),
    ],
)
def test_each_bad_or_foreign_github_request_gets_its_status_and_publishes_nothing(
    *, client: TestClient, upstream: Upstream, publisher: MemoryPublisher,
    change: dict[str, Any], status: int, error: str | None,
) -> None:
    head = upstream.commit({"refund.md": "# Refunds\n"}, "1")
    example = octokit_push_example()
    example["after"] = head
    example.update(change.get("body", {}))
    if "drop" in change:
        del example[change["drop"]]
    body = change.get("raw", json.dumps(example).encode())
    headers: dict[str, str | None] = {
        **github_headers(body, change.get("secret", SECRET), change.get("X-GitHub-Event", "push")),
    }
    for name in ("X-Hub-Signature-256", "Content-Type"):
        if name in change:
            headers[name] = change[name]
    sent = {k: v for k, v in headers.items() if v is not None}
    answer = client.post("/webhooks/github", content=body, headers=sent)
    assert answer.status_code == status, answer.text
    if error is None:
        assert answer.json()["status"] == "ignored"
    else:
        assert answer.json()["error"] == error
    assert publisher.events == []


def gitlab_push(after: str, **changes: Any) -> bytes:
    """A GitLab push body, with the fields of GitLab's documented "Push events" example."""
    body: dict[str, Any] = {
        "object_kind": "push", "event_name": "push", "before": "0" * 40, "after": after,
        "ref": "refs/heads/master", "ref_protected": True, "checkout_sha": after,
        "user_id": 4, "user_name": "John Smith", "user_username": "jsmith",
        "project_id": 15,
        "project": {"id": 15, "name": "Hello-World", "path_with_namespace": REPOSITORY,
                    "default_branch": "master",
                    "git_http_url": "http://example.com/Codertocat/Hello-World.git"},
        "commits": [{"id": after, "message": "Update", "added": [], "modified": [],
                     "removed": []}],
        "total_commits_count": 1,
    }
    body.update(changes)
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("headers", "body_changes", "status"),
    [
        ({"X-Gitlab-Token": TOKEN.decode(), "X-Gitlab-Event": "Push Hook"}, {}, 202),
        ({"X-Gitlab-Event": "Push Hook"}, {}, 401),
        ({"X-Gitlab-Token": "wrong-token-of-some-length", "X-Gitlab-Event": "Push Hook"}, {}, 401),
        ({"X-Gitlab-Token": TOKEN.decode(), "X-Gitlab-Event": "Tag Push Hook"}, {}, 202),
        ({"X-Gitlab-Token": TOKEN.decode(), "X-Gitlab-Event": "Push Hook"},
         {"project": {"path_with_namespace": "other/project"}}, 403),
        ({"X-Gitlab-Token": TOKEN.decode(), "X-Gitlab-Event": "Push Hook"},
         {"ref": "refs/heads/develop"}, 202),
        ({"X-Gitlab-Token": TOKEN.decode(), "X-Gitlab-Event": "Push Hook"},
         {"object_kind": "tag_push"}, 422),
    ],
)
def test_gitlab_pushes_are_checked_by_token_repository_and_branch(
    *, client: TestClient, upstream: Upstream, publisher: MemoryPublisher,
    headers: dict[str, str], body_changes: dict[str, Any], status: int,
) -> None:
    head = upstream.commit({"refund.md": "# Refunds\n"}, "1")
    body = gitlab_push(head, **body_changes)
    answer = client.post("/webhooks/gitlab", content=body,
                         headers={"Content-Type": "application/json", **headers})
    assert answer.status_code == status, answer.text
    published = status == 202 and not body_changes and headers["X-Gitlab-Event"] == "Push Hook"
    assert [e.document_id for e in publisher.events] == (["refund"] if published else [])


def test_a_push_whose_commit_the_remote_lacks_is_503_and_publishes_nothing(
    client: TestClient, upstream: Upstream, publisher: MemoryPublisher
) -> None:
    upstream.commit({"refund.md": "# Refunds\n"}, "1")
    body = real_push("1" * 40)
    answer = client.post("/webhooks/github", content=body, headers=github_headers(body))
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"]
    assert publisher.events == []
