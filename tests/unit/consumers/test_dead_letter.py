from __future__ import annotations

from consumers.dead_letter import DeadLetter


def test_a_dead_letter_keeps_the_bytes_and_says_why_and_where() -> None:
    letter = DeadLetter(
        b"doc", b"\xff not json", "not_json", "not JSON: bad byte", "changes", 2, 41
    )
    headers = DeadLetter.read_headers(letter.headers())
    assert headers == {
        "reason": "not_json",
        "error": "not JSON: bad byte",
        "source-topic": "changes",
        "source-partition": "2",
        "source-offset": "41",
    }
    assert letter.value == b"\xff not json"
