"""The crash hook: armed only by ``faults.install``, never by a setting; bad specs named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from policy_indexer.runtime import faults
from policy_indexer.settings import Settings


@pytest.mark.parametrize(("spec", "why"), [
    ("", "names no step"), (":2", "names no step"), ("after-commit:x", "not a whole number"),
    ("after-commit:0", "at least 1"),
])
def test_a_bad_spec_is_refused_with_the_reason(spec: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        faults.parse(spec)


def test_the_checkpoint_is_a_no_op_unless_installed() -> None:
    faults.install(None)
    checkpoint = faults.checkpoint()
    for _ in range(3):
        checkpoint("after-state-write")  # would SIGKILL this test process if armed


def test_an_installed_hook_kills_at_the_nth_step_only() -> None:
    code = (
        "from policy_indexer.runtime import faults\n"
        "faults.install('after-state-write:2')\n"
        "c = faults.checkpoint()\n"
        "c('after-chunk-write'); c('after-state-write'); print('survived the first', flush=True)\n"
        "c('after-state-write'); print('not reached', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == -9, done.stderr
    assert "survived the first" in done.stdout and "not reached" not in done.stdout


def test_no_setting_can_arm_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The old settings are gone: the environment cannot switch a production process into it."""
    assert not {"worker_kill_at", "reindex_kill_at"} & set(Settings.model_fields)
    monkeypatch.setenv("POLICY_INDEXER_WORKER_KILL_AT", "after-commit:1")
    monkeypatch.setenv("TEST_FAULT_KILL_AT", "after-commit:1")
    faults.install(None)
    Settings()  # an unknown POLICY_INDEXER_ variable does not arm anything
    assert faults.installed_spec() is None
