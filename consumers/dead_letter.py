"""Dead letters: the original bytes of a poison event, with why and where it came from.

The record keeps the original key and value untouched; the reason, the error
and the source topic, partition and offset travel as headers, so the event can
be fixed and republished as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

HEADER_PREFIX = "policy-indexer."


@dataclass(frozen=True)
class DeadLetter:
    key: bytes | None
    value: bytes | None
    reason: str
    error: str
    topic: str
    partition: int
    offset: int

    def headers(self) -> list[tuple[str, bytes]]:
        fields = {
            "reason": self.reason,
            "error": self.error[:8000],
            "source-topic": self.topic,
            "source-partition": str(self.partition),
            "source-offset": str(self.offset),
        }
        return [(HEADER_PREFIX + k, v.encode("utf-8")) for k, v in fields.items()]

    @staticmethod
    def read_headers(headers: list[tuple[str, bytes]]) -> dict[str, str]:
        """The dead-letter headers of a record, without the prefix."""
        return {
            k.removeprefix(HEADER_PREFIX): v.decode("utf-8")
            for k, v in headers
            if k.startswith(HEADER_PREFIX)
        }


class DeadLetterSink(Protocol):
    def send(self, letter: DeadLetter) -> None:
        """Store the letter durably; raise ``TransientError`` if it could not be."""
