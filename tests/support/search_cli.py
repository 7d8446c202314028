"""The sample library searched through the CLI: its environment, the command, the answer.

Shared by the integration tests of the search commands (one library, two API keys).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from support.workers import CLI

LIBRARY = Path(__file__).resolve().parents[2] / "examples" / "library"
RIDER_KEY = "rider-key-0123456789abcdef"
AGENT_KEY = "agent-key-0123456789abcdef"
KEYS = {"rider": {"key": RIDER_KEY, "labels": ["public"]},
        "agent": {"key": AGENT_KEY, "labels": ["public", "agents"]}}
# Asked on a date where the seasonal rules and the promotion are not valid (2027 ones).
AS_OF = "2026-12-01"
HANDBOOK_QUESTION = "goodwill credit limits for agents"


def environment(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env.update({
        "POLICY_INDEXER_SOURCE_KIND": "folder",
        "POLICY_INDEXER_SOURCE_PATH": str(LIBRARY),
        "POLICY_INDEXER_SEARCH_API_KEYS": json.dumps(KEYS),
        "POLICY_INDEXER_LOG_LEVEL": "WARNING",
        **{f"POLICY_INDEXER_{k.upper()}": v for k, v in settings.items()},
    })
    return env


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def search(env: dict[str, str], question: str, *args: str) -> dict[str, Any]:
    done = cli(env, "search", question, "--as-of", AS_OF, "--json", *args)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer
