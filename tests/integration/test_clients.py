"""The client distribution (clients/python) against a real ``policy-indexer serve``.

The sample library is indexed by ``policy-indexer reindex`` into an embedded index
and served by ``serve`` on loopback; the typed client (blocking and asyncio), the
LangChain retriever and tool and the LlamaIndex retriever (the real ``langchain-core``
and ``llama-index-core``) must return its passages with every provenance field. Only
the 503 retries are asked of a stub peer (a loopback HTTP server that answers 503
with ``Retry-After``, then 200): the real server does not answer 503 on demand. The
last test installs the distribution into a fresh virtualenv, without the indexer,
and searches the real server from there.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import venv
from collections.abc import Iterator
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from openapi_spec_validator import validate
from policy_indexer_client import (
    AsyncPolicyIndexerClient,
    AuthenticationError,
    Citation,
    InvalidRequestError,
    PolicyIndexerClient,
    RetryPolicy,
    SearchResponse,
    ServiceUnavailableError,
    UnknownRunError,
)
from policy_indexer_client import models as client_models
from policy_indexer_client.langchain import PolicyRetriever, search_policy_tool
from policy_indexer_client.llamaindex import PolicyIndexRetriever
from support.waiting import wait_until
from support.workers import CLI, free_port

pytestmark = pytest.mark.slow  # starts `policy-indexer serve` (a process) and loopback servers

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "examples" / "library"
CLIENT_DIR = ROOT / "clients" / "python"
RIDER_KEY = "rider-key-0123456789abcdef"
KEYS = {"rider": {"key": RIDER_KEY, "labels": ["public"]}}
AS_OF = date(2026, 12, 1)
QUESTION = "refund for a flat tyre"
SCOPE = ["lisbon"]
PROVENANCE = {"title", "document_id", "clause", "version", "chunk_id", "heading_path",
              "scope", "access_labels", "valid_from", "valid_to", "effective_date", "link",
              "score", "via", "neighbour_of", "run_id"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``policy-indexer serve`` over the sample library, indexed into an embedded index."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    port = free_port()
    env.update({
        "POLICY_INDEXER_SOURCE_KIND": "folder",
        "POLICY_INDEXER_SOURCE_PATH": str(LIBRARY),
        "POLICY_INDEXER_EMBEDDED_DIR": str(tmp_path_factory.mktemp("embedded")),
        "POLICY_INDEXER_SEARCH_API_KEYS": json.dumps(KEYS),
        "POLICY_INDEXER_SEARCH_PORT": str(port),
        "POLICY_INDEXER_METRICS_PORT": str(free_port()),
        "POLICY_INDEXER_LOG_LEVEL": "WARNING",
    })
    done = subprocess.run([CLI, "reindex"], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    proc = subprocess.Popen([CLI, "serve"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{url}/readyz", timeout=2).status_code, 60,
                   "serve to answer /readyz", accept=lambda code: code == 200,
                   retry_on=(httpx.TransportError,))
        yield url
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out


@pytest.fixture
def client(server: str) -> Iterator[PolicyIndexerClient]:
    with PolicyIndexerClient(server, RIDER_KEY) as c:
        yield c


def assert_provenance(metadata: dict[str, Any], response: SearchResponse) -> None:
    assert set(metadata) >= PROVENANCE, PROVENANCE - set(metadata)
    assert metadata["run_id"] == response.run_id and response.run_id
    passage = next(p for p in response.passages if p.chunk_id == metadata["chunk_id"])
    assert metadata["document_id"] == passage.document_id
    assert metadata["clause"] == passage.clause and metadata["version"] == passage.version
    assert metadata["title"] == passage.title and metadata["link"] == passage.link


def test_openapi_document_is_valid_and_matches_the_client_models(server: str) -> None:
    document = httpx.get(f"{server}/openapi.json", timeout=10).json()
    validate(document)
    assert {"/search", "/citations/check", "/healthz", "/readyz"} <= set(document["paths"])
    schemas = document["components"]["schemas"]
    # the client mirrors the server's models field for field (both ways)
    for name in ("SearchRequest", "SearchResponse", "Passage", "Freshness", "Citation",
                 "CheckRequest", "CheckResponse", "CitationResult", "Problem"):
        model = getattr(client_models, name)
        assert set(model.model_fields) == set(schemas[name]["properties"]), name


def test_the_sync_client_searches_and_checks_citations_of_the_run(
    client: PolicyIndexerClient,
) -> None:
    answer = client.search(QUESTION, scope=SCOPE, as_of=AS_OF, k=3)
    assert answer.status == "ok", answer.message
    assert answer.run_id and 1 <= len(answer.ranked) <= 3
    for p in answer.passages:
        assert p.document_id and p.title and p.clause and p.version >= 1 and p.link
        assert set(p.access_labels) <= {"public"}
    first = answer.ranked[0]
    quote = " ".join(first.text.split()[2:8])
    checked = client.check_citations([Citation.of(first, quote=quote)], run_id=answer.run_id)
    assert checked.ok, checked.results[0].problems
    assert checked.results[0].codes == ["support_unchecked"]
    wrong = client.check_citations(
        [{"document_id": first.document_id, "clause": "no-such-clause"}], run_id=answer.run_id)
    assert not wrong.ok and "unknown_clause" in wrong.results[0].codes


def test_refusals_raise_with_the_servers_detail(server: str,
                                                client: PolicyIndexerClient) -> None:
    with PolicyIndexerClient(server, "not-a-key-0123456789") as stranger, \
            pytest.raises(AuthenticationError, match="the API key is not known"):
        stranger.search(QUESTION)
    # the client's model leaves the language's pattern to the server, which names it
    with pytest.raises(InvalidRequestError, match="language") as refused:
        client.search(QUESTION, language="english!")
    assert refused.value.status == 422 and refused.value.errors[0]["loc"] == ["language"]
    with pytest.raises(UnknownRunError, match="404 unknown_run"):
        client.check_citations([{"document_id": "x", "clause": "1"}], run_id="0" * 32)


def test_the_async_client_answers_the_same(server: str, client: PolicyIndexerClient) -> None:
    async def ask() -> tuple[SearchResponse, bool]:
        async with AsyncPolicyIndexerClient(server, RIDER_KEY) as c:
            answer = await c.search(QUESTION, scope=SCOPE, as_of=AS_OF)
            checked = await c.check_citations([Citation.of(answer.ranked[0])],
                                              run_id=answer.run_id)
            return answer, checked.ok

    answer, ok = asyncio.run(ask())
    assert answer.status == "ok" and ok
    blocking = client.search(QUESTION, scope=SCOPE, as_of=AS_OF)
    assert [p.chunk_id for p in answer.passages] == [p.chunk_id for p in blocking.passages]
    assert answer.run_id != blocking.run_id  # each search is a run


def test_the_langchain_retriever_and_tool(server: str, client: PolicyIndexerClient) -> None:
    expected = client.search(QUESTION, scope=SCOPE, as_of=AS_OF)
    retriever = PolicyRetriever(client=client, scope=SCOPE, as_of=AS_OF)
    documents = retriever.invoke(QUESTION)
    assert [d.metadata["chunk_id"] for d in documents] == [
        p.chunk_id for p in expected.passages]
    by_chunk = {p.chunk_id: p for p in expected.passages}
    for document in documents:
        assert document.page_content == by_chunk[document.metadata["chunk_id"]].text
        assert_provenance(document.metadata, SearchResponse.model_validate(
            {**expected.model_dump(), "run_id": document.metadata["run_id"]}))

    async def ask_async() -> list[Any]:
        async with AsyncPolicyIndexerClient(server, RIDER_KEY) as c:
            return await PolicyRetriever(async_client=c, scope=SCOPE,
                                         as_of=AS_OF).ainvoke(QUESTION)

    assert [d.id for d in asyncio.run(ask_async())] == [d.id for d in documents]
    tool = search_policy_tool(client)
    assert tool.name == "search_policy" and "labels" not in tool.args
    answer = SearchResponse.model_validate_json(
        tool.invoke({"question": QUESTION, "scope": SCOPE, "as_of": AS_OF.isoformat()}))
    assert answer.status == "ok" and answer.run_id
    assert [p.chunk_id for p in answer.passages] == [p.chunk_id for p in expected.passages]


def test_the_llamaindex_retriever(server: str, client: PolicyIndexerClient) -> None:
    from llama_index.core.schema import MetadataMode, NodeWithScore

    expected = client.search(QUESTION, scope=SCOPE, as_of=AS_OF)
    retriever = PolicyIndexRetriever(client, scope=SCOPE, as_of=AS_OF)
    found = retriever.retrieve(QUESTION)
    assert [n.node.node_id for n in found] == [p.chunk_id for p in expected.passages]
    for scored, passage in zip(found, expected.passages, strict=True):
        assert isinstance(scored, NodeWithScore) and scored.score == pytest.approx(
            passage.score)
        metadata = scored.node.metadata
        assert_provenance(metadata, SearchResponse.model_validate(
            {**expected.model_dump(), "run_id": metadata["run_id"]}))
        shown = scored.node.get_content(metadata_mode=MetadataMode.LLM)
        assert passage.document_id in shown and passage.text in shown

    async def ask_async() -> list[NodeWithScore]:
        async with AsyncPolicyIndexerClient(server, RIDER_KEY) as c:
            return await PolicyIndexRetriever(async_client=c, scope=SCOPE,
                                              as_of=AS_OF).aretrieve(QUESTION)

    assert [n.node.node_id for n in asyncio.run(ask_async())] == [
        n.node.node_id for n in found]


# --- 503 and Retry-After, against a stub peer on loopback ---------------------------

NO_DOCUMENT = json.dumps({"status": "no_document", "message": "nothing found",
                          "passages": [], "as_of": "2026-12-01", "threshold": 0.5}).encode()


class _Stub(BaseHTTPRequestHandler):
    """Answers each POST with the next scripted (status, Retry-After); 200 when none left."""

    script: ClassVar[list[tuple[int, str | None]]] = []
    seen: ClassVar[list[float]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        type(self).seen.append(time.monotonic())
        status, retry_after = type(self).script.pop(0) if type(self).script else (200, None)
        body = NO_DOCUMENT if status == 200 else json.dumps(
            {"error": "unavailable", "detail": "the index is being rebuilt"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[tuple[str, type[_Stub]]]:
    handler = type("Stub", (_Stub,), {"script": [], "seen": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


def test_a_503_is_retried_after_its_retry_after(stub: tuple[str, type[_Stub]]) -> None:
    url, peer = stub
    peer.script = [(503, "1")]
    with PolicyIndexerClient(url, RIDER_KEY) as c:
        assert c.search("refund").status == "no_document"
    assert len(peer.seen) == 2 and peer.seen[1] - peer.seen[0] >= 0.95  # waited 1 s

    peer.script, peer.seen[:] = [(503, "0"), (429, None)], []

    async def ask() -> SearchResponse:
        async with AsyncPolicyIndexerClient(url, RIDER_KEY,
                                            retry=RetryPolicy(backoff_s=0.01)) as c:
            return await c.search("refund")

    assert asyncio.run(ask()).status == "no_document" and len(peer.seen) == 3


def test_retries_are_bounded_and_a_long_retry_after_is_not_waited_for(
    stub: tuple[str, type[_Stub]],
) -> None:
    url, peer = stub
    peer.script = [(503, "0")] * 5
    with PolicyIndexerClient(url, RIDER_KEY, retry=RetryPolicy(attempts=3)) as c, \
            pytest.raises(ServiceUnavailableError, match="after 3 attempts") as exhausted:
        c.search("refund")
    assert len(peer.seen) == 3 and "the index is being rebuilt" in str(exhausted.value)

    peer.script, peer.seen[:] = [(503, "3600")], []
    started = time.monotonic()
    with PolicyIndexerClient(url, RIDER_KEY) as c, \
            pytest.raises(ServiceUnavailableError, match="Retry-After: 3600 s"):
        c.search("refund")
    assert len(peer.seen) == 1 and time.monotonic() - started < 30


# --- the distribution installs and works on its own ------------------------------


def test_the_client_installs_alone_and_searches_without_the_indexer(
    server: str, tmp_path: Path,
) -> None:
    source = tmp_path / "src"
    shutil.copytree(CLIENT_DIR, source,
                    ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    env_dir = tmp_path / "agent-venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(source)],
        capture_output=True, text=True, timeout=600, check=False)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    script = """
import importlib.metadata as md, importlib.util as iu, json
from policy_indexer_client import PolicyIndexerClient
names = {d.metadata["Name"].lower() for d in md.distributions()}
absent = [m for m in ("policy_indexer", "retrieval", "store", "langchain_core", "llama_index")
          if iu.find_spec(m) is not None]
answer = PolicyIndexerClient().search("refund for a flat tyre", scope=["lisbon"])
print(json.dumps({"names": sorted(names), "present": absent, "status": answer.status,
                  "run_id": answer.run_id}))
"""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("POLICY_INDEXER_", "PYTHON", "VIRTUAL_ENV"))}
    env.update({"POLICY_INDEXER_URL": server, "POLICY_INDEXER_API_KEY": RIDER_KEY})
    ran = subprocess.run([python, "-c", script], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert "policy-indexer-client" in seen["names"] and "policy-indexer" not in seen["names"]
    assert seen["present"] == [], seen
    assert seen["status"] == "ok" and seen["run_id"]
    assert sys.prefix != str(env_dir)
