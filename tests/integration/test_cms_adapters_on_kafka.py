"""A Contentful, a Sanity and a Strapi request each end as the right chunks in Elasticsearch.

On the real services: requests signed by ``@contentful/node-apps-toolkit`` and
``@sanity/webhook`` (npm) and Strapi's token go over HTTP to the receiver
(uvicorn), which publishes to a real Kafka topic; the worker of the pipeline
contract suite indexes into a real Elasticsearch index. Each document ends at
the version its CMS gave it, cut at the rich text's headings; Contentful's
unpublish then removes its entry.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.cms_signers import (
    contentful_entry,
    contentful_headers,
    contentful_rich_text,
    contentful_tombstone,
    sanity_document,
    sanity_headers,
    strapi_blocks,
    strapi_event,
)
from support.kafka_topics import MAX_MESSAGE_BYTES
from support.pipelines import kafka_pipeline
from support.waiting import wait_until

from store.elasticsearch import ElasticsearchStore
from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig
from webhooks.adapters.base import Adapter
from webhooks.adapters.contentful import ContentfulAdapter
from webhooks.adapters.sanity import SanityAdapter
from webhooks.adapters.strapi import StrapiAdapter
from webhooks.app import create_app
from webhooks.serve import ServerThread

pytestmark = pytest.mark.services

CONTENTFUL = "c" * 32 + "ON-KAFKA" + "f" * 24
SANITY = "sanity-secret-on-kafka-00001"
STRAPI = "strapi-token-on-kafka-000001"


def stamp(seconds_ago: float) -> str:
    return datetime.fromtimestamp(time.time() - seconds_ago, UTC).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def ms(value: str) -> int:
    return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)


def test_each_cms_request_ends_as_its_chunks_in_elasticsearch(
    request: pytest.FixtureRequest, unique: str, kafka_bootstrap: str
) -> None:
    entry_id, sanity_id, strapi_key = f"{unique}CF", f"{unique}-sanity", f"{unique}st"
    published, updated, strapi_updated = stamp(60), stamp(50), stamp(40)
    with kafka_pipeline(request) as pipeline:
        publisher = KafkaEventPublisher(KafkaPublisherConfig(
            bootstrap_servers=kafka_bootstrap, topic=f"{unique}-changes", timeout_seconds=10,
            max_message_bytes=MAX_MESSAGE_BYTES))
        adapters: list[Adapter] = [ContentfulAdapter([CONTENTFUL]), SanityAdapter([SANITY]),
                                   StrapiAdapter([STRAPI.encode()])]
        app = create_app(None, publisher, CollectorRegistry(), adapters=adapters)
        try:
            with ServerThread(app) as server:
                def post(route: str, body: bytes, headers: dict[str, str]) -> None:
                    answer = httpx.post(server.url + route, content=body, headers=headers,
                                        timeout=60)
                    assert answer.status_code == 202, answer.text
                    assert answer.json()["status"] == "accepted", answer.text

                body = json.dumps(contentful_entry(entry_id, contentful_rich_text(),
                                                   updated=published)).encode()
                post("/webhooks/contentful", body, contentful_headers(
                    body, CONTENTFUL, int(time.time() * 1000), "ContentManagement.Entry.publish"))
                body = json.dumps(sanity_document(sanity_id, updated)).encode()
                post("/webhooks/sanity", body,
                     sanity_headers(body, SANITY, int(time.time() * 1000), "create"))
                body = json.dumps(strapi_event("entry.publish", strapi_key, strapi_updated,
                                               body=strapi_blocks())).encode()
                post("/webhooks/strapi", body, {"Content-Type": "application/json",
                                                "Authorization": f"Bearer {STRAPI}"})
                store = pipeline.store
                assert isinstance(store, ElasticsearchStore)  # the real index, its texts read
                ids = {entry_id: ms(published), sanity_id: ms(updated),
                       f"policy/{strapi_key}": ms(strapi_updated)}

                def indexed() -> dict[str, int]:
                    store.refresh()
                    return {d: s.version for d in ids
                            if (s := store.get_state(d)) is not None and not s.deleted}

                wait_until(indexed, 60, "the three CMS documents in Elasticsearch",
                           accept=lambda v: v == ids)
                # states are read in real time, chunks searched after a refresh: a state seen
                # after indexed()'s refresh may have chunks the search cannot see yet
                store.refresh()
                # each document at its CMS version, its text cut at the rich text's headings
                for document_id, heading in ((entry_id, "## Eligibility"),
                                             (sanity_id, "## Late deliveries"),
                                             (f"policy/{strapi_key}", "## Claims")):
                    found = store.client.search(
                        index=store.names.chunks, size=50,
                        query={"term": {"document_id": document_id}})["hits"]["hits"]
                    texts = [h["_source"]["text"] for h in found]
                    assert {h["_source"]["version"] for h in found} == {ids[document_id]}
                    assert any(heading in t for t in texts), (document_id, texts)
                # the unpublish (a tombstone, stamped later) removes the entry
                deleted = stamp(1)
                body = json.dumps(contentful_tombstone(entry_id, deleted)).encode()
                post("/webhooks/contentful", body, contentful_headers(
                    body, CONTENTFUL, int(time.time() * 1000),
                    "ContentManagement.Entry.unpublish"))

                def entry_state() -> tuple[bool, int] | None:
                    store.refresh()
                    state = store.get_state(entry_id)
                    return None if state is None else (state.deleted, state.version)

                wait_until(entry_state, 60, "the unpublished entry deleted in Elasticsearch",
                           accept=lambda v: v == (True, ms(deleted)))
                wait_until(lambda: [r.chunk_id for r in store.iter_chunks()
                                    if r.document_id == entry_id], 60,
                           "the unpublished entry's chunks gone", accept=lambda v: v == [])
        finally:
            publisher.close()
