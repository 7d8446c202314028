"""``index_replicas`` is the one setting for the replicas of every index the project makes.

The run log and the lease were created with ``number_of_replicas: 0`` in code,
whatever the setting: losing one node of a cluster turned them red and stopped
the nightly repair. Here the chunk template, the run log, the lease and the
embedding cache all take the setting, an existing run-log index is brought to
it, and ``doctor``'s replica check names an index with no replica from what a
real cluster answers (this Elasticsearch is one node: the check is given the
node count a cluster reports, the settings are the real answer).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from policy_indexer.runtime.backends import KafkaBackends, open_elasticsearch
from policy_indexer.runtime.doctor import Check, project_indices, replica_report
from policy_indexer.settings import Settings
from reindex.backends_es import ElasticsearchRunLog
from store.elasticsearch import ElasticsearchStore

pytestmark = pytest.mark.services


def settings_for(url: str, unique: str, replicas: int) -> Settings:
    return Settings(pipeline="kafka", elasticsearch_url=url, index_prefix=unique,
                    index_replicas=replicas)


@pytest.fixture
def store(elasticsearch_url: str, unique: str) -> Iterator[ElasticsearchStore]:
    opened = ElasticsearchStore.connect(elasticsearch_url, unique)
    yield opened
    opened.delete_everything()
    opened.client.options(ignore_status=404).indices.delete(
        index=f"{unique}-reindex-*,{unique}-embeddings")
    opened.close()


def replicas_of(store: ElasticsearchStore, settings: Settings) -> dict[str, int]:
    got = store.client.indices.get_settings(index=project_indices(settings),
                                            name="index.number_of_replicas",
                                            ignore_unavailable=True, allow_no_indices=True)
    return {name: int(body["settings"]["index"]["number_of_replicas"])
            for name, body in got.body.items()}


def test_every_index_takes_index_replicas(
    elasticsearch_url: str, unique: str, store: ElasticsearchStore
) -> None:
    settings = settings_for(elasticsearch_url, unique, 1)
    es = open_elasticsearch(settings)
    try:
        es.ensure_ready()
        backends = KafkaBackends(settings, es)
        backends.job_backends()
        backends.embedding_cache()  # creates its index
    finally:
        es.close()
    assert replicas_of(store, settings) == {
        f"{unique}-chunks-000001": 1,
        f"{unique}-document-states-000001": 1,
        f"{unique}-reindex-runs": 1,
        f"{unique}-reindex-lease": 1,
        f"{unique}-embeddings": 1,
    }


def test_a_run_log_made_with_no_replica_is_brought_to_the_setting(
    elasticsearch_url: str, unique: str, store: ElasticsearchStore
) -> None:
    ElasticsearchRunLog(store.client, unique).ensure_ready()  # the default: 0, as before
    settings = settings_for(elasticsearch_url, unique, 1)
    assert replicas_of(store, settings) == {f"{unique}-reindex-runs": 0}
    ElasticsearchRunLog(store.client, unique, replicas=1).ensure_ready()
    assert replicas_of(store, settings) == {f"{unique}-reindex-runs": 1}


def fails(checks: list[Check]) -> list[str]:
    return [c.detail for c in checks if c.outcome == "fail"]


def test_doctor_names_each_index_with_no_replica_on_a_cluster(
    elasticsearch_url: str, unique: str, store: ElasticsearchStore
) -> None:
    settings = settings_for(elasticsearch_url, unique, 0)
    store.ensure_ready()  # chunks and states with 0 replicas (index_replicas 0)
    ElasticsearchRunLog(store.client, unique, replicas=1).ensure_ready()
    answer = store.client.indices.get_settings(index=project_indices(settings),
                                               name="index.number_of_replicas",
                                               ignore_unavailable=True, allow_no_indices=True)
    on_three = list(replica_report(dict(answer.body), 3))
    problems = fails(on_three)
    assert len(problems) == 2, on_three
    assert f"index '{unique}-chunks-000001' has 0 replicas on a 3-node cluster" in problems[0]
    assert f"index '{unique}-document-states-000001' has 0 replicas" in problems[1]
    assert not any("reindex-runs" in p for p in problems)
    # one node: a replica could never be placed, 0 is right
    assert list(replica_report(dict(answer.body), 1)) == []
    store.client.indices.put_settings(index=f"{unique}-chunks-*,{unique}-document-states-*",
                                      settings={"index": {"number_of_replicas": 1}})
    answer = store.client.indices.get_settings(index=project_indices(settings),
                                               name="index.number_of_replicas",
                                               ignore_unavailable=True, allow_no_indices=True)
    healed = list(replica_report(dict(answer.body), 3))
    assert fails(healed) == [] and healed[0].outcome == "ok", healed
    assert "3 index(es)" in healed[0].detail


def test_another_prefix_is_not_reported(
    elasticsearch_url: str, unique: str, store: ElasticsearchStore
) -> None:
    """``policy`` must not report ``policy-staging``'s indices (a pattern ``policy-*`` would)."""
    store.ensure_ready()
    longer = settings_for(elasticsearch_url, f"{unique}-staging", 0)
    shorter = settings_for(elasticsearch_url, unique, 0)
    other = ElasticsearchStore.connect(elasticsearch_url, f"{unique}-staging")
    try:
        other.ensure_ready()
        assert set(replicas_of(store, shorter)) == {f"{unique}-chunks-000001",
                                                    f"{unique}-document-states-000001"}
        assert f"{unique}-staging-chunks-000001" in replicas_of(store, longer)
    finally:
        other.delete_everything()
        other.close()
