"""The local Elasticsearch node is real: bulk write, refresh, filtered search, matching versions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from elasticsearch import Elasticsearch, helpers
from elasticsearch._version import __versionstr__

pytestmark = pytest.mark.services


@pytest.fixture
def es(elasticsearch_url: str) -> Iterator[Elasticsearch]:
    client = Elasticsearch(elasticsearch_url, request_timeout=30)
    yield client
    client.close()


def test_client_and_server_share_a_major_version(es: Elasticsearch) -> None:
    # `GET /` (es.info()) lives in the rest-root module, absent from the minimal
    # distribution; node info answers on both.
    nodes = es.nodes.info(node_id="_local", metric="_none")["nodes"]
    (server,) = {node["version"] for node in nodes.values()}
    assert server.split(".")[0] == __versionstr__.split(".")[0], (server, __versionstr__)


def test_bulk_write_refresh_and_filtered_query(es: Elasticsearch, unique: str) -> None:
    es.indices.create(
        index=unique,
        mappings={
            "properties": {
                "text": {"type": "text"},
                "access_labels": {"type": "keyword"},
                # Not "version": the bulk helper reads that key as document metadata.
                "doc_version": {"type": "integer"},
            }
        },
    )
    try:
        docs = [
            ("refund#a", "Refunds within 30 days", ["public"], 1),
            ("refund#b", "Refunds for annual plans", ["agents"], 1),
            ("refund#c", "Refunds are never given for gift cards", ["public"], 2),
        ]
        ok, errors = helpers.bulk(
            es,
            (
                {"_index": unique, "_id": i, "text": t, "access_labels": a, "doc_version": v}
                for i, t, a, v in docs
            ),
            raise_on_error=False,
        )
        assert (ok, errors) == (3, [])
        es.indices.refresh(index=unique)
        hits = es.search(
            index=unique,
            query={
                "bool": {
                    "must": {"match": {"text": "refunds"}},
                    "filter": [
                        {"terms": {"access_labels": ["public"]}},
                        {"term": {"doc_version": 2}},
                    ],
                }
            },
        )["hits"]["hits"]
        assert [h["_id"] for h in hits] == ["refund#c"]
    finally:
        es.indices.delete(index=unique)
