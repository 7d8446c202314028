"""The monitor's refusals: a failed read of the dead letters keeps the last answer."""

from __future__ import annotations

import pytest

from policy_indexer.runtime import dead_letters
from policy_indexer.runtime.dead_letters import DeadLetterError, RefusalReader
from policy_indexer.settings import Settings


def test_a_failed_read_keeps_the_refusals_read_last(monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[dict[tuple[str, int], str] | Exception] = [
        {("banana", 2): "chunker: 'valid_to' is not a date"},
        DeadLetterError("reading 'dlq' did not reach its end offsets within 20.0s"),
        {},
    ]

    def read(_settings: Settings) -> dict[tuple[str, int], str]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(dead_letters, "content_refusals", read)
    reader = RefusalReader(Settings(pipeline="kafka"))
    assert reader() == {("banana", 2)}
    assert reader() == {("banana", 2)}  # the topic unreadable: as last read, no exception
    assert reader() == set()  # read again: the letters are gone
