"""CI must run the very test command the README gives a new user."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_test_command_named_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert block, "README.md has no bash block with the set-up commands"
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2, commands
    test_command = commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"exec {test_command}" in ci.splitlines(), (test_command, ci)
