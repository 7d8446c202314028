"""search_policy through the commands people and agents run, on both modes.

The sample library is indexed by ``policy-indexer reindex`` (the folder source),
vectors by ``policy-indexer embed --once``; then ``search``, ``serve`` (POST
/search with API keys) and ``mcp`` (stdio, with the ``mcp`` package's own
client) answer from that index, with the default encoder (the packaged
MiniLM): these tests check the wiring and the rules (labels from credentials,
filters, provenance, statuses); the ranking is measured by ``eval``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.search_cli import (
    AGENT_KEY,
    AS_OF,
    HANDBOOK_QUESTION,
    LIBRARY,
    RIDER_KEY,
    cli,
    environment,
    search,
)
from support.waiting import wait_until
from support.workers import CLI, free_port

from store.elasticsearch import ElasticsearchStore

pytestmark = pytest.mark.slow  # runs the CLI (reindex, embed, serve, mcp) as processes


def index_the_library(env: dict[str, str]) -> None:
    done = cli(env, "reindex")
    assert done.returncode == 0, done.stdout + done.stderr
    embedded = cli(env, "embed", "--once")
    assert embedded.returncode == 0, embedded.stderr
    assert "embedded" in embedded.stdout and int(embedded.stdout.split()[1]) > 0


@pytest.fixture(scope="module")
def embedded_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = environment(embedded_dir=str(tmp_path_factory.mktemp("embedded")))
    index_the_library(env)
    return env


@pytest.fixture
def kafka_env(elasticsearch_url: str, unique: str) -> Iterator[dict[str, str]]:
    env = environment(pipeline="kafka", elasticsearch_url=elasticsearch_url,
                      index_prefix=unique)
    index_the_library(env)
    yield env
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.delete_everything()
    store.client.options(ignore_status=404).indices.delete(index=f"{unique}-*")
    store.close()


def assert_answers_with_provenance_and_labels(env: dict[str, str]) -> None:
    """What every mode must do: provenance on every passage, labels and dates inside."""
    answer = search(env, "refund for a flat tyre", "--labels", "public", "--scope", "lisbon")
    assert answer["status"] == "ok", answer
    ranked = [p for p in answer["passages"] if p["via"] == "ranked"]
    assert 1 <= len(ranked) <= 5
    for p in answer["passages"]:
        assert p["document_id"] and p["title"] and p["clause"] and p["version"] >= 1
        assert p["link"] and "#" in p["link"]
        assert set(p["access_labels"]) <= {"public"}
        assert not p["scope"] or {"lisbon", "all-cities"} & set(p["scope"]), p["scope"]
        assert p["valid_to"] is None or p["valid_to"] >= AS_OF
    # the agents' handbook: never for a caller without the label, found with it
    rider = search(env, HANDBOOK_QUESTION, "--labels", "public")
    assert all(p["document_id"] != "refunds/agent-handbook" for p in rider["passages"])
    agent = search(env, HANDBOOK_QUESTION, "--labels", "public,agents")
    assert any(p["document_id"] == "refunds/agent-handbook" for p in agent["passages"]), agent
    # no labels at all: every chunk of the library carries one, so nothing can be seen
    nobody = search(env, HANDBOOK_QUESTION)
    assert nobody["status"] == "no_access" and nobody["passages"] == [], nobody


def test_embedded_search_answers_with_provenance_inside_the_filters(
    embedded_env: dict[str, str],
) -> None:
    assert_answers_with_provenance_and_labels(embedded_env)


def test_search_refuses_bad_requests_with_the_field_named(embedded_env: dict[str, str]) -> None:
    for args, field in [(("--k", "11"), "k"), (("--as-of", "yesterday"), "as-of"),
                        (("--language", "english!"), "language")]:
        done = cli(embedded_env, "search", "refund", *args)
        assert done.returncode == 2, (args, done.stdout)
        assert field in done.stderr, done.stderr
    long = cli(embedded_env, "search", "x" * 2001)
    assert long.returncode == 2 and "question" in long.stderr


def test_the_readable_view_shows_sources_and_dates(embedded_env: dict[str, str]) -> None:
    done = cli(embedded_env, "search", "refund for a flat tyre", "--labels", "public",
               "--as-of", AS_OF)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: ")
    assert "refunds/index.md#" in done.stdout and "scope " in done.stdout


def serve_and_ask(env: dict[str, str]) -> None:
    """``policy-indexer serve``: POST /search and /mcp, labels from the API key only."""
    port, metrics_port = free_port(), free_port()
    token = "search-metrics-token-0123456789"
    env = {**env, "POLICY_INDEXER_SEARCH_PORT": str(port),
           "POLICY_INDEXER_METRICS_PORT": str(metrics_port),
           "POLICY_INDEXER_SEARCH_METRICS_TOKEN": token}
    proc = subprocess.Popen([CLI, "serve"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=2).status_code, 60,
                   "serve to answer /healthz", accept=lambda code: code == 200,
                   retry_on=(httpx.TransportError,))
        body = {"question": HANDBOOK_QUESTION, "as_of": AS_OF}

        def ask(key: str | None, payload: dict[str, Any]) -> httpx.Response:
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            return httpx.post(f"{url}/search", json=payload, headers=headers, timeout=30)

        assert ask(None, body).status_code == 401
        assert ask("not-a-key-0123456789", body).status_code == 401
        smuggled = ask(RIDER_KEY, {**body, "access_labels": ["agents"]})
        assert smuggled.status_code == 422, smuggled.text
        rider = ask(RIDER_KEY, body).json()
        assert all(p["document_id"] != "refunds/agent-handbook" for p in rider["passages"])
        agent = ask(AGENT_KEY, body).json()
        assert any(p["document_id"] == "refunds/agent-handbook" for p in agent["passages"])
        for key, sees in ((RIDER_KEY, False), (AGENT_KEY, True)):
            answer = mcp_over_http(f"{url}/mcp", key)
            found = any(p["document_id"] == "refunds/agent-handbook" for p in answer["passages"])
            assert found is sees, answer
        # the search port's /metrics: only for the token's bearer; the loopback metrics
        # server serves the same registry
        assert httpx.get(f"{url}/metrics", timeout=5).status_code == 401
        for metrics in (
            httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"},
                      timeout=5).text,
            httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text,
        ):
            assert 'policy_indexer_search_latency_seconds_count{interface="http"}' in metrics
            assert 'policy_indexer_search_latency_seconds_count{interface="mcp"}' in metrics
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out


def mcp_over_http(url: str, key: str) -> dict[str, Any]:
    """One ``search_policy`` call with the mcp package's own streamable HTTP client."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def call() -> dict[str, Any]:
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                result = await client.call_tool(
                    "search_policy", {"question": HANDBOOK_QUESTION, "as_of": AS_OF})
                assert not result.is_error, result.content
                assert result.structured_content is not None
                return dict(result.structured_content)

    return anyio.run(call)


def test_serve_takes_the_labels_from_the_api_key_never_from_the_body(
    embedded_env: dict[str, str],
) -> None:
    serve_and_ask(embedded_env)


@pytest.mark.services
def test_kafka_mode_serve_answers_from_elasticsearch(kafka_env: dict[str, str]) -> None:
    serve_and_ask(kafka_env)


def test_mcp_over_stdio_binds_the_configured_key(embedded_env: dict[str, str]) -> None:
    """``policy-indexer mcp`` as an agent host starts it, spoken to by the mcp client."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def call(key: str) -> tuple[list[str], dict[str, Any]]:
        params = StdioServerParameters(command=CLI, args=["mcp"],
                                       env={**embedded_env, "POLICY_INDEXER_MCP_API_KEY": key})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = [tool.name for tool in (await session.list_tools()).tools]
            result = await session.call_tool(
                "search_policy", {"question": HANDBOOK_QUESTION, "as_of": AS_OF})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            return tools, result.structured_content

    tools, rider = anyio.run(call, RIDER_KEY)
    assert tools == ["search_policy", "check_citations"]
    assert rider["run_id"] is not None  # recorded under the stdio key's own id
    assert all(p["document_id"] != "refunds/agent-handbook" for p in rider["passages"])
    _tools, agent = anyio.run(call, AGENT_KEY)
    assert any(p["document_id"] == "refunds/agent-handbook" for p in agent["passages"])


def test_mcp_without_its_key_says_which_setting(embedded_env: dict[str, str]) -> None:
    done = cli(embedded_env, "mcp")
    assert done.returncode == 1 and "POLICY_INDEXER_MCP_API_KEY" in done.stderr


def test_sweep_works_on_the_embedded_index(embedded_env: dict[str, str]) -> None:
    """It used to target Elasticsearch whatever the mode."""
    done = cli(embedded_env, "sweep", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "no leftovers: nothing to do" in done.stdout


@pytest.mark.services
def test_kafka_mode_search_answers_from_elasticsearch(kafka_env: dict[str, str]) -> None:
    assert_answers_with_provenance_and_labels(kafka_env)


def test_a_passage_of_a_document_behind_its_source_says_so(tmp_path: Path) -> None:
    """The index keeps answering from the old version: the passage announces it is stale."""
    import shutil

    library = tmp_path / "library"
    shutil.copytree(LIBRARY, library)
    env = environment(embedded_dir=str(tmp_path / "data"), source_path=str(library),
                      search_encoder="none")
    done = cli(env, "reindex")
    assert done.returncode == 0, done.stdout + done.stderr
    question = "refund for a flat tyre"
    fresh = search(env, question, "--labels", "public")
    ranked = [p for p in fresh["passages"] if p["document_id"] == "refunds"]
    assert ranked and all(p["freshness"]["behind_source"] is False for p in ranked), ranked

    policy = library / "refunds" / "index.md"
    policy.write_text(policy.read_text().replace("60 days", "90 days"))
    os.utime(policy, (policy.stat().st_atime, policy.stat().st_mtime + 120))
    stale = search(env, question, "--labels", "public")
    behind = [p for p in stale["passages"] if p["document_id"] == "refunds"]
    assert behind, stale
    for p in behind:
        assert p["freshness"]["behind_source"] is True
        assert p["freshness"]["source_version"] > p["version"]
    readable = cli(env, "search", question, "--labels", "public", "--as-of", AS_OF)
    assert "STALE: the source has v" in readable.stdout

