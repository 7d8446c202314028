"""One owner per document at the webhook: 409 for an id another source owns, nothing published.

The receiver asks ``webhooks.owners.IndexAndFolderOwners``: the index's state names the
owner, else the configured folder owns the ids it has a file for. The worker's guard is
the rule (``tests/unit/indexing/test_owner.py``); this is the early answer to the sender.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient
from support.cms_signers import sanity_document, sanity_headers
from support.webhook_helpers import NOW, SECRET, MemoryPublisher, encode, payload, signed_headers

from sources.folder import MarkdownFolderSource
from store.elasticsearch import ElasticsearchStore
from store.errors import TransientStoreError
from store.memory import InMemoryStore
from store.model import DocumentState
from webhooks.adapters.sanity import SanityAdapter
from webhooks.app import create_app
from webhooks.config import WebhookConfig
from webhooks.owners import IndexAndFolderOwners

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SANITY = "sanity-secret-for-unit-tests-01"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "refunds").mkdir()
    (tmp_path / "refunds" / "index.md").write_text("# Refunds\n\nSixty days.\n")
    return tmp_path


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def client(publisher: MemoryPublisher, store: InMemoryStore, folder: Path) -> Iterator[TestClient]:
    owners = IndexAndFolderOwners(store, MarkdownFolderSource(folder).holds)
    app = create_app(WebhookConfig(secrets=(SECRET,)), publisher, CollectorRegistry(),
                     clock=lambda: NOW, adapters=[SanityAdapter([SANITY])], owners=owners)
    with TestClient(app) as client:
        yield client


def post_cms(client: TestClient, document_id: str, version: int) -> tuple[int, dict[str, str]]:
    body = encode(payload("document.published", id=document_id, version=version))
    answer = client.post("/webhooks/cms", content=body, headers=signed_headers(body))
    return answer.status_code, answer.json()


def test_a_folder_document_is_refused_409_naming_both_owners(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    status, body = post_cms(client, "refunds", version=10**12)
    assert status == 409, body
    assert body["error"] == "owner_conflict"
    for name in ("'refunds'", "'folder'", "'cms'"):
        assert name in body["detail"]
    assert publisher.events == []


def test_an_id_the_index_gives_to_another_source_is_refused(
    client: TestClient, publisher: MemoryPublisher, store: InMemoryStore
) -> None:
    store.put_state(DocumentState("promo", 3, T0, T0, owner="sanity"))
    status, body = post_cms(client, "promo", version=4)
    assert status == 409 and "'sanity'" in body["detail"], body
    assert publisher.events == []


def test_its_own_documents_unowned_and_new_ids_are_accepted_and_stamped(
    client: TestClient, publisher: MemoryPublisher, store: InMemoryStore
) -> None:
    store.put_state(DocumentState("mine", 1, T0, T0, owner="cms"))
    store.put_state(DocumentState("legacy", 1, T0, T0))  # unowned: adopted
    for document_id in ("mine", "legacy", "brand-new"):
        status, body = post_cms(client, document_id, version=2)
        assert status == 202, body
    assert [(e.document_id, e.source) for e in publisher.events] == [
        ("mine", "cms"), ("legacy", "cms"), ("brand-new", "cms")]


def test_an_adapter_gets_409_too_and_stamps_its_own_name(
    client: TestClient, publisher: MemoryPublisher, store: InMemoryStore
) -> None:
    store.put_state(DocumentState("policy-deliveries", 1, T0, T0, owner="cms"))
    body = encode(sanity_document("policy-deliveries", "2025-11-29T19:50:00.123Z"))
    headers = sanity_headers(body, SANITY, int(NOW * 1000) - 2000, "update")
    answer = client.post("/webhooks/sanity", content=body, headers=headers)
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"] == "owner_conflict" and "'cms'" in answer.json()["detail"]
    assert publisher.events == []
    body = encode(sanity_document("policy-returns", "2025-11-29T19:50:00.123Z"))
    headers = sanity_headers(body, SANITY, int(NOW * 1000) - 2000, "update")
    answer = client.post("/webhooks/sanity", content=body, headers=headers)
    assert answer.status_code == 202, answer.text
    assert [(e.document_id, e.source) for e in publisher.events] == [
        ("policy-returns", "sanity")]


class DownStore(InMemoryStore):
    def get_state(self, document_id: str) -> DocumentState | None:
        raise TransientStoreError(f"index down while reading {document_id!r}")


def test_an_index_that_cannot_be_read_lets_the_event_through_to_the_guard(
    publisher: MemoryPublisher, tmp_path: Path
) -> None:
    """The webhook keeps taking changes while the index is down; the indexer's owner
    guard still refuses a conflicting one (dead letter ``owner``)."""
    app = create_app(WebhookConfig(secrets=(SECRET,)), publisher, CollectorRegistry(),
                     clock=lambda: NOW, owners=IndexAndFolderOwners(DownStore()))
    with TestClient(app) as client:
        status, body = post_cms(client, "refunds", version=2)
    assert status == 202, body
    assert [e.document_id for e in publisher.events] == ["refunds"]


@pytest.mark.services
def test_the_kafka_modes_lookup_reads_the_owner_from_elasticsearch(
    publisher: MemoryPublisher, elasticsearch_url: str
) -> None:
    """``policy-indexer webhook`` in the Kafka mode asks the Elasticsearch states."""
    store = ElasticsearchStore.connect(elasticsearch_url, f"t{uuid.uuid4().hex[:12]}")
    store.ensure_ready()
    try:
        store.put_state(DocumentState("refunds", 3, T0, T0, owner="folder"))
        app = create_app(WebhookConfig(secrets=(SECRET,)), publisher, CollectorRegistry(),
                         clock=lambda: NOW, owners=IndexAndFolderOwners(store))
        with TestClient(app) as client:
            status, body = post_cms(client, "refunds", version=4)
            assert status == 409 and "'folder'" in body["detail"], body
            assert post_cms(client, "other", version=1)[0] == 202
        assert [e.document_id for e in publisher.events] == ["other"]
    finally:
        store.delete_everything()
        store.close()
