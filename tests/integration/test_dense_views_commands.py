"""Several dense views through the commands, on both modes: ``POLICY_INDEXER_ENCODERS``
lists them, ``embed --once`` fills each (and only what a view lacks), ``search`` fuses
them, and a view dropped from the list leaves search working on the others.

The views here use the hashing encoder (no model file, fast); the packaged models go
through the same code (``embeddings.registry``) and are measured by the bench.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.search_cli import AS_OF, cli, environment, search

from store.elasticsearch import ElasticsearchStore

pytestmark = pytest.mark.slow  # runs the CLI as processes (several seconds)


def embed(env: dict[str, str], encoders: str) -> int:
    done = cli({**env, "POLICY_INDEXER_ENCODERS": encoders}, "embed", "--once")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("embedded "), done.stdout
    return int(done.stdout.split()[1])


def check_views(env: dict[str, str]) -> None:
    # the hashing encoder's cosines are not MiniLM's: no threshold, the wiring is what counts
    env = {**env, "POLICY_INDEXER_SEARCH_THRESHOLD": "-1"}
    done = cli(env, "reindex")
    assert done.returncode == 0, done.stdout + done.stderr
    one = embed(env, "hashing")
    assert one > 0  # every chunk of the library, once
    # a second view: only its own vectors are encoded; the first view is complete
    assert embed(env, "hashing,hashing+w40s20") == one
    assert embed(env, "hashing,hashing+w40s20") == 0
    for encoders in ("hashing,hashing+w40s20", "hashing+w40s20"):  # fused; one dropped
        answer = search({**env, "POLICY_INDEXER_ENCODERS": encoders},
                        "refund for a flat tyre", "--labels", "public", "--scope", "lisbon")
        assert answer["status"] == "ok", answer
        assert "dense" in answer["legs"], answer
        assert all(p["valid_to"] is None or p["valid_to"] >= AS_OF for p in answer["passages"])
    # nothing configured: the keyword leg alone still answers
    keyword = search({**env, "POLICY_INDEXER_ENCODERS": ""}, "refund for a flat tyre",
                     "--labels", "public")
    assert keyword["status"] == "ok" and keyword["legs"] == ["keyword"], keyword


def test_views_on_the_embedded_index(tmp_path: pytest.TempPathFactory) -> None:
    check_views(environment(embedded_dir=str(tmp_path)))


@pytest.fixture
def kafka_env(elasticsearch_url: str, unique: str) -> Iterator[dict[str, str]]:
    yield environment(pipeline="kafka", elasticsearch_url=elasticsearch_url,
                      index_prefix=unique)
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.delete_everything()
    store.close()


@pytest.mark.services
def test_views_on_elasticsearch(kafka_env: dict[str, str]) -> None:
    check_views(kafka_env)


def test_an_unknown_encoder_in_the_list_is_a_one_line_error(tmp_path: pytest.TempPathFactory,
                                                            ) -> None:
    env = environment(embedded_dir=str(tmp_path), encoders="minilm,word2vec")
    done = cli(env, "search", "refund")
    assert done.returncode != 0
    assert "word2vec" in done.stderr and "known: minilm" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    bad = cli(environment(embedded_dir=str(tmp_path), encoders="minilm+w5"), "search", "x")
    assert bad.returncode != 0 and "window" in bad.stderr and "Traceback" not in bad.stderr
