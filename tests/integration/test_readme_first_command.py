"""The README's first command, run as written in a fresh copy of the repository.

It must install the project (a new ``.venv``, no root, no server) and run
``policy-indexer run`` on the sample library: the library gets indexed (the
README's ``status --json``: every document at the folder's version, lag 0) and
``/metrics`` answers. Slow: ``pip`` installs every dependency into the new
virtualenv (about 30 s with a warm pip cache).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.embedded_run import (
    Process,
    assert_library_indexed,
    clean_env,
    status_json,
    within,
)
from support.waiting import wait_until
from support.workers import free_port

from policy_indexer.settings import Settings
from sources.folder import MarkdownFolderSource

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git", ".venv", ".policy-indexer", "__pycache__", "*.egg-info", ".mypy_cache",
    ".ruff_cache", ".pytest_cache", "build", "dist",
)


MONITOR_INTERVAL_S = Settings.model_fields["monitor_interval_seconds"].default
INDEXED = ("policy_indexer_events_total", (("outcome", "indexed"),))
MAX_LAG = ("policy_indexer_max_lag_seconds", ())
Sample = tuple[str, tuple[tuple[str, str], ...]]


def samples(port: int, wanted: dict[Sample, float]) -> dict[Sample, float]:
    """The values of ``wanted``'s samples in the process's /metrics (KeyError if one is absent)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    found = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for family in text_string_to_metric_families(text) for s in family.samples}
    return {key: found[key] for key in wanted}


def readme_first_command(readme: str) -> str:
    block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert block, "README.md has no bash block"
    return block.group(1).splitlines()[0].split("#")[0].strip()


def readme_status_settings(readme: str) -> dict[str, str]:
    """The ``export POLICY_INDEXER_...`` line the README gives for the second terminal."""
    line = next(line for line in readme.splitlines() if line.startswith("export POLICY_INDEXER_"))
    return dict(pair.split("=", 1) for pair in line.removeprefix("export ").split())


def test_the_readmes_first_command_installs_and_indexes_the_sample_library(
    tmp_path: Path,
) -> None:
    clone = tmp_path / "policy-indexer"
    shutil.copytree(ROOT, clone, ignore=NOT_IN_A_CLONE)
    readme = (clone / "README.md").read_text()
    command = readme_first_command(readme)
    assert "policy-indexer run" in command
    port = free_port()
    env = clean_env(metrics_port=str(port))
    env.pop("VIRTUAL_ENV", None)  # a fresh shell: not inside this test run's virtualenv
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
    )
    process = Process(subprocess.Popen(
        ["bash", "-c", command], cwd=clone, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    ))
    try:
        within(600, lambda: process.said("indexed: 8 documents")
               or process.popen.poll() is not None, "install and first indexing")
        assert process.popen.poll() is None, process.output
        status_env = {**env, **readme_status_settings(readme)}
        cli = str(clone / ".venv" / "bin" / "policy-indexer")
        assert_library_indexed(status_json(clone, status_env, cli), clone / "examples" / "library")
        # The series exist at 0 from start-up: their values say the library got indexed,
        # one event per document, and that the freshness monitor sees no lag. Its first
        # cycle may have run before the indexing: the next one comes within the default
        # interval (60 s), so the wait allows that much and a half.
        library = MarkdownFolderSource(clone / "examples" / "library")
        wanted = {INDEXED: float(len(list(library.list_documents()))), MAX_LAG: 0.0}
        wait_until(lambda: samples(port, wanted), 1.5 * MONITOR_INTERVAL_S,
                   f"/metrics to say {wanted}", every_s=0.5,
                   accept=lambda seen: seen == wanted, retry_on=(KeyError,))
        os.killpg(process.popen.pid, signal.SIGTERM)  # bash and policy-indexer, as Ctrl-C would
        process.popen.wait(60)
        within(10, lambda: process.said('"event": "stopped"'), "a clean stop")
    finally:
        if process.popen.poll() is None:
            os.killpg(process.popen.pid, signal.SIGKILL)
        process.close()
