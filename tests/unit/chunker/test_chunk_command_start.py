"""``policy-indexer chunk`` starts without the settings or structlog, and reads the one
setting it needs, the language model's cache place, as the settings would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from policy_indexer.cli import language_model_cache_dir
from policy_indexer.settings import Settings

VARIABLE = "POLICY_INDEXER_LANGUAGE_MODEL_CACHE_DIR"
PROBE = """
import sys
from policy_indexer.cli import main
sys.argv = ["policy-indexer", "chunk", sys.argv[1]]
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
heavy = ("pydantic_settings", "structlog", "policy_indexer.settings", "policy_indexer.logs")
print(",".join(m for m in heavy if m in sys.modules), file=sys.stderr)
"""
BLAS_PROBE = """
import os, sys
import policy_indexer.commands.chunk
assert "numpy" in sys.modules
print(len(os.listdir("/proc/self/task")), os.environ.get("OPENBLAS_NUM_THREADS"))
"""


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {VARIABLE: "/srv/cache"},
        {VARIABLE: ""},
        {VARIABLE: "  "},
        {VARIABLE.lower(): "/lower/case"},
        {"XDG_CACHE_HOME": "/xdg"},
        {"XDG_CACHE_HOME": "/xdg", VARIABLE: "/wins"},
    ],
)
def test_the_cache_place_is_the_settings_one(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env file
    for name in (VARIABLE, VARIABLE.lower(), "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert language_model_cache_dir(os.environ) == Settings().language_model_cache_dir


def _run(tmp_path: Path, cwd: Path) -> tuple[str, str]:
    doc = tmp_path / "doc.md"
    doc.write_text("# Refunds\n\nWithin thirty days of the purchase, for any reason.\n")
    done = subprocess.run([sys.executable, "-c", PROBE, str(doc)], capture_output=True,
                          text=True, cwd=cwd, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def test_chunk_loads_neither_settings_nor_structlog(tmp_path: Path) -> None:
    out, loaded = _run(tmp_path, tmp_path)
    assert '"chunk_id":"doc@v1#refunds"' in out
    assert loaded == ""


def test_a_dotenv_file_makes_chunk_read_the_settings(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"{VARIABLE}=\n")
    out, loaded = _run(tmp_path, tmp_path)
    assert '"chunk_id":"doc@v1#refunds"' in out
    assert "policy_indexer.settings" in loaded


def test_chunk_in_place_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    """The command turns the garbage collector off while it chunks, and back on."""
    import gc

    from click.testing import CliRunner

    from policy_indexer.cli import main

    doc = tmp_path / "doc.md"
    doc.write_text("# Refunds\n\nWithin thirty days.\n")
    assert gc.isenabled()
    assert CliRunner().invoke(main, ["chunk", str(doc)]).exit_code == 0
    assert gc.isenabled()
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"# a\n\xff")  # refused by the chunker, inside the command
    result = CliRunner().invoke(main, ["chunk", str(bad)])
    assert result.exit_code == 1 and "not valid UTF-8" in result.output
    assert gc.isenabled()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_chunk_loads_numpy_without_a_pool_of_blas_threads() -> None:
    """One BLAS thread for the command (its pool costs start-up), the variable put back."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", BLAS_PROBE], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "None"]
