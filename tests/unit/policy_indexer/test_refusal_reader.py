"""The monitor's refusals: a failed read of the dead letters keeps the last answer."""

from __future__ import annotations

from dataclasses import dataclass

from policy_indexer.runtime.dead_letters import DeadLetterError, DeadLetterView, RefusalReader


def letter(document_id: str, version: int) -> DeadLetterView:
    return DeadLetterView("0:1", document_id, "chunker", "'valid_to' is not a date", "t/0/1",
                          None, document_id.encode(), f'{{"version": {version}}}'.encode())


@dataclass
class Letters:
    """Backends whose dead letters are read from a list of answers, one a call."""

    answers: list[list[DeadLetterView] | Exception]

    def list_dead_letters(self) -> list[DeadLetterView]:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_a_failed_read_keeps_the_refusals_read_last() -> None:
    backends = Letters([
        [letter("banana", 2)],
        DeadLetterError("reading 'dlq' did not reach its end offsets within 20.0s"),
        [],
    ])
    reader = RefusalReader(backends)  # type: ignore[arg-type]  # only its dead letters
    assert reader() == {("banana", 2)}
    assert reader() == {("banana", 2)}  # the topic unreadable: as last read, no exception
    assert reader() == set()  # read again: the letters are gone
