"""Each error of the project's tree leaves a command as one line and its exit status.

``policy_indexer.cli_errors`` is the one place: a command decorated with
``says_errors`` gets the rule, whatever it raises; no command catches these itself.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from pydantic import BaseModel, Field

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.dead_letters import DeadLetterError, DeadLetterNotFound
from policy_indexer.runtime.search import SearchNotConfigured
from policy_indexer.runtime.sources import SourceNotConfiguredError
from reindex.errors import LeaseError
from retrieval.citations import UnknownRun
from store.errors import StoreAccessError, StoreError
from transport.kafka_connection import KafkaConnectError
from transport.local_queue import QueueError

COMMANDS = Path(__file__).resolve().parents[3] / "policy_indexer" / "commands"


class Request(BaseModel):
    k: int = Field(ge=1)


def command(error: Exception, **options: object) -> click.Command:
    @click.command()
    @says_errors("search failed", **options)  # type: ignore[arg-type]
    def fails() -> None:
        if isinstance(error, ZeroDivisionError):
            Request(k=0)
        raise error
    return fails


@pytest.mark.parametrize(("error", "code", "line"), [
    (StoreError("HTTP 500"), 1, "Error: search failed: HTTP 500"),
    (StoreAccessError("refused (401)"), 1, "Error: search failed: refused (401)"),
    (QueueError("locked"), 1, "Error: search failed: locked"),
    (LeaseError("held"), 1, "Error: search failed: held"),
    (DeadLetterError("gone"), 1, "Error: search failed: gone"),
    (SearchNotConfigured("set POLICY_INDEXER_X"), 1, "Error: set POLICY_INDEXER_X"),
    (SourceNotConfiguredError("set SOURCE"), 1, "Error: set SOURCE"),
    (KafkaConnectError("no broker"), 1, "Error: no broker"),
    (ValueError("bad value"), 1, "Error: bad value"),
    (UnknownRun("no run 'r1'"), 2, "Error: no run 'r1'"),
    (DeadLetterNotFound("no letter 7"), 2, "Error: no letter 7"),
    (ZeroDivisionError(), 2, "Error: k: Input should be greater than or equal to 1"),
])
def test_each_error_class_is_one_line_and_its_exit_status(error: Exception, code: int,
                                                          line: str) -> None:
    result = CliRunner().invoke(command(error), [])
    assert result.exit_code == code, result.output
    assert result.output.strip().splitlines()[-1] == line
    assert "Traceback" not in result.output


def test_a_command_names_its_own_failures_and_exit_status() -> None:
    result = CliRunner().invoke(command(SearchNotConfigured("set X"), exit_code=3,
                                        also=(SearchNotConfigured,)), [])
    assert (result.exit_code, result.output.strip()) == (3, "Error: search failed: set X")


def test_a_bug_keeps_its_traceback() -> None:
    result = CliRunner().invoke(command(KeyError("k")), [])
    assert isinstance(result.exception, KeyError)


def test_no_command_translates_the_tree_itself() -> None:
    caught = re.compile(r"except .*\b(StoreError|QueueError|LeaseError|DeadLetterError|"
                        r"ValidationError|NotConfigured\w*|UnknownRun)\b")
    found = [f"{path.name}:{n}" for path in sorted(COMMANDS.glob("*.py"))
             for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if caught.search(text)]
    # replay says opening the embedded files apart from replaying them (left as it is)
    assert found == ["replay.py:56", "replay.py:60"]
