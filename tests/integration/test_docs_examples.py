"""Every shell example of the agent-side docs, run as written against a real server.

The fenced ``sh``/``bash``/``shell``/``console`` blocks of the docs an agent's author
reads (``DOCS``) are found by parsing the Markdown (markdown-it-py), so a new example
is run without touching this file; a block whose commands call ``policy-indexer``,
``curl`` or ``python`` is run command by command (``export`` lines carry over within
the block), from the repository root, the virtualenv first on ``PATH``. A block opts
out with ``<!-- not run: reason -->`` just above it; an untagged block that holds such
a command fails the suite (tag it, or opt it out), so no example escapes unnoticed.

The server is a real ``policy-indexer serve`` on loopback over an embedded index of
the sample library (``examples/library``: ``reindex`` then ``embed --once``), and the
placeholders are the test's: ``<key>`` an API key of the server, ``<id>`` a run id of
the caller that command is (the last ``run <id>`` a ``policy-indexer search`` printed,
for the command line's caller; the last ``run_id`` a ``curl`` to ``/search`` returned,
else one the test made with ``<key>``), ``<version>`` the current version of the
sample library's ``refunds`` document, and the documented port ``127.0.0.1:8090`` the
server's. Each command must exit 0 and its output parse as the docs say: JSON for
``curl`` and ``--json``, a ``run <id>`` line for ``policy-indexer search``, a ready
``/readyz`` for ``serve &`` (started on a port of its own, stopped with SIGTERM, exit
0), the MCP ``initialize`` answer on stdout for ``policy-indexer mcp``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from markdown_it import MarkdownIt
from support.waiting import wait_until
from support.workers import CLI, free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("docs/search-interfaces.md", "docs/citations.md", "clients/python/README.md")
SHELLS = {"sh", "bash", "shell", "console"}
PROGRAMS = ("policy-indexer", "curl", "python")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(\S.*?)\s*-->\s*$", re.S)
LIBRARY = ROOT / "examples" / "library"
KEY = "docs-key-0123456789abcdef"
KEYS = {"docs-bot": {"key": KEY, "labels": ["public"]}}
DOCUMENTED_PORT = "127.0.0.1:8090"
RUN_LINE = re.compile(r"^run ([0-9a-f]{32})\b", re.M)
SEED_QUESTION = "refund for a flat tyre"
MCP_INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "docs-examples", "version": "1"}}}) + "\n"


# --- the examples, from the Markdown -----------------------------------------------------


@dataclass(frozen=True)
class Block:
    where: str  # file:line of the fence
    info: str
    commands: tuple[str, ...]
    not_run: str | None


def commands_of(content: str, info: str) -> tuple[str, ...]:
    """The block's commands: continuation lines joined, blank and comment lines dropped;
    in a ``console`` block only the ``$ `` lines (the rest is output)."""
    commands: list[str] = []
    pending = ""
    for raw in content.splitlines():
        line = raw
        if info == "console" and not pending:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command and not command.startswith("#"):
            commands.append(command)
    return tuple(commands)


def words_of(command: str) -> list[str]:
    """The command's words from the program on (``NAME=value`` assignments and a trailing
    comment dropped), the program without its directory (``.venv/bin/policy-indexer`` is
    ``policy-indexer``)."""
    words = shlex.split(command, comments=True)
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words.pop(0)
    if words:
        words[0] = words[0].rsplit("/", 1)[-1]
    return words


def program_of(command: str) -> str:
    words = words_of(command)
    return words[0] if words else ""


def calls_a_program(command: str) -> bool:
    return program_of(command).startswith(PROGRAMS)


def blocks_of(path: str) -> list[Block]:
    tokens = MarkdownIt("commonmark").parse((ROOT / path).read_text(encoding="utf-8"))
    found: list[Block] = []
    for i, token in enumerate(tokens):
        if token.type != "fence":
            continue
        info = token.info.strip().split(" ")[0]
        before = tokens[i - 1] if i > 0 else None
        opted_out = (NOT_RUN.match(before.content.strip())
                     if before is not None and before.type == "html_block" else None)
        line = token.map[0] + 1 if token.map else 0
        found.append(Block(f"{path}:{line}", info, commands_of(token.content, info),
                           opted_out.group(1) if opted_out else None))
    return found


EXAMPLES = [b for path in DOCS for b in blocks_of(path)
            if b.info in SHELLS and any(calls_a_program(c) for c in b.commands)]


def test_every_command_example_is_tagged_as_a_shell_block() -> None:
    """An untagged fence that calls a program would escape this suite: tag it or opt out."""
    untagged = [b.where for path in DOCS for b in blocks_of(path)
                if b.info == "" and b.not_run is None
                and any(calls_a_program(c) for c in b.commands)]
    assert not untagged, f"tag these blocks ```sh (or <!-- not run: reason -->): {untagged}"
    assert EXAMPLES, "no shell example found in the docs: the parser is broken"


# --- the server ---------------------------------------------------------------------------


@dataclass
class Server:
    env: dict[str, str]
    url: str
    http_run_id: str
    cli_run_id: str
    refunds_version: int


def base_env(tmp: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env.update({
        "PATH": f"{Path(CLI).parent}{os.pathsep}{env.get('PATH', '')}",
        "POLICY_INDEXER_SOURCE_KIND": "folder",
        "POLICY_INDEXER_SOURCE_PATH": str(LIBRARY),
        "POLICY_INDEXER_EMBEDDED_DIR": str(tmp),
        "POLICY_INDEXER_SEARCH_API_KEYS": json.dumps(KEYS),
        "POLICY_INDEXER_SEARCH_PORT": str(port),
        "POLICY_INDEXER_METRICS_PORT": str(free_port()),
        "POLICY_INDEXER_LOG_LEVEL": "WARNING",
    })
    return env


def ready(url: str) -> None:
    wait_until(lambda: httpx.get(f"{url}/readyz", timeout=2).status_code, 60,
               f"{url}/readyz to answer 200", accept=lambda code: code == 200,
               retry_on=(httpx.TransportError,))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``policy-indexer serve`` over the sample library, and a run of each caller."""
    port = free_port()
    env = base_env(tmp_path_factory.mktemp("embedded"), port)
    for args in (["reindex"], ["embed", "--once"]):
        done = subprocess.run([CLI, *args], env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    proc = subprocess.Popen([CLI, "serve"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        ready(url)
        answer = httpx.post(f"{url}/search", headers={"Authorization": f"Bearer {KEY}"},
                            json={"question": SEED_QUESTION}, timeout=60).json()
        assert answer["status"] == "ok" and answer["run_id"], answer
        version = next(p["version"] for p in answer["passages"]
                       if p["document_id"] == "refunds")
        searched = subprocess.run([CLI, "search", SEED_QUESTION, "--labels", "public"],
                                  env=env, capture_output=True, text=True, timeout=300,
                                  check=False)
        cli_run = RUN_LINE.search(searched.stdout)
        assert searched.returncode == 0 and cli_run, searched.stdout + searched.stderr
        yield Server(env, url, answer["run_id"], cli_run.group(1), version)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out


# --- running a block -----------------------------------------------------------------------


@dataclass
class Placeholders:
    server: Server
    cli_run_id: str
    http_run_id: str

    def fill(self, command: str) -> str:
        run_id = self.http_run_id if program_of(command) == "curl" else self.cli_run_id
        return (command.replace("<key>", KEY).replace("<id>", run_id)
                .replace("<version>", str(self.server.refunds_version))
                .replace(DOCUMENTED_PORT, self.server.url.removeprefix("http://")))


def url_path(command: str) -> str:
    url = next(w for w in shlex.split(command) if w.startswith("http"))
    return httpx.URL(url).path


def check_output(command: str, stdout: str, placeholders: Placeholders) -> None:
    """The output parses as the docs say; a run id it prints is the next ``<id>``."""
    program = program_of(command)
    if program == "curl":
        body: Any = json.loads(stdout)
        path = url_path(command)
        if path == "/search":
            assert body["status"] in {"ok", "no_document", "no_access"}, body
            assert re.fullmatch(r"[0-9a-f]{32}", body["run_id"]), body
            placeholders.http_run_id = body["run_id"]
        elif path == "/citations/check":
            assert body["ok"] is True, body
            assert all(r["ok"] for r in body["results"]), body
        elif path == "/openapi.json":
            assert body["openapi"].startswith("3.1"), body.get("openapi")
        return
    words = words_of(command)
    if "--json" in words:
        json.loads(stdout)
    if program == "policy-indexer" and "search" in words:
        printed = RUN_LINE.search(stdout)
        if "--json" not in words:
            assert printed, f"no 'run <id>' line in:\n{stdout}"
        if printed:
            placeholders.cli_run_id = printed.group(1)


def start_in_background(command: str, exports: list[str], env: dict[str, str],
                        where: str) -> None:
    """``serve &``: on a port of its own; ready within a minute; SIGTERM ends it with 0."""
    port = free_port()
    env = {**env, "POLICY_INDEXER_SEARCH_PORT": str(port),
           "POLICY_INDEXER_METRICS_PORT": str(free_port())}
    assert words_of(command)[:2] == ["policy-indexer", "serve"], (
        f"{where}: only `policy-indexer serve &` is known to run in the background: {command}")
    # the shell passes our SIGTERM on and exits with the server's own code
    script = "\n".join([*exports, command, 'pid=$!',
                        'trap \'kill -TERM "$pid"; wait "$pid"; exit $?\' TERM',
                        'wait "$pid"'])
    proc = subprocess.Popen(["bash", "-c", script], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        ready(f"http://127.0.0.1:{port}")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, f"{where}: {command}\n{out}"


def run_command(command: str, exports: list[str], env: dict[str, str], where: str,
                placeholders: Placeholders) -> None:
    mcp = words_of(command)[:2] == ["policy-indexer", "mcp"]
    done = subprocess.run(["bash", "-c", "\n".join([*exports, command])], cwd=ROOT, env=env,
                          input=MCP_INITIALIZE if mcp else "", capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, (
        f"{where}: exit {done.returncode}: {command}\n{done.stdout}\n{done.stderr}")
    if mcp:
        answer = json.loads(done.stdout.splitlines()[0])
        assert answer["result"]["serverInfo"]["name"] == "policy-indexer", answer
        return
    check_output(command, done.stdout, placeholders)


@pytest.mark.parametrize("block", EXAMPLES, ids=[b.where for b in EXAMPLES])
def test_the_docs_example_runs_as_written(block: Block, server: Server) -> None:
    if block.not_run is not None:
        pytest.skip(f"{block.where}: not run: {block.not_run}")
    placeholders = Placeholders(server, server.cli_run_id, server.http_run_id)
    exports: list[str] = []
    for written in block.commands:
        command = placeholders.fill(written)
        if command.startswith("export "):
            exports.append(command)
        elif words_of(command)[-1:] == ["&"]:
            start_in_background(command, exports, server.env, block.where)
        else:
            run_command(command, exports, server.env, block.where, placeholders)
