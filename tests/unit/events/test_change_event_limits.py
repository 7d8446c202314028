"""A change event holds only values every store can hold, with room to grow.

Each refusal is a pydantic field error at the field's place (the webhook answers 422 with
it, the worker dead-letters with it); the largest accepted value of each bound is stored.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pydantic
import pytest

from events.model import (
    MAX_CONTENT_BYTES,
    MAX_DOCUMENT_ID_BYTES,
    MAX_LABEL_CHARS,
    MAX_LABELS,
    MAX_VERSION,
    ChangeEvent,
)


def event(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": "e1", "document_id": "refund", "action": "upsert", "version": 1,
        "changed_at": datetime(2024, 1, 1, tzinfo=UTC), "content_type": "text/markdown",
        "content": "# Refunds\n\nWithin 30 days.", "metadata": {},
    }
    meta = changes.pop("metadata", {})
    base.update(changes)
    base["metadata"] = meta
    return base


BAD: list[tuple[str, dict[str, Any], tuple[str | int, ...]]] = [
    ("version 10^20", event(version=99999999999999999999), ("version",)),
    ("version 2^63", event(version=2**63), ("version",)),
    ("version 2^63-1, no room", event(version=2**63 - 1), ("version",)),
    ("version 0", event(version=0), ("version",)),
    ("id over 256 bytes", event(document_id="é" * 129), ("document_id",)),
    ("id 600 ASCII", event(document_id="a" * 600), ("document_id",)),
    ("content with NUL", event(content="# A\n\nbad\x00byte"), ("content",)),
    ("content too large", event(content="x" * (MAX_CONTENT_BYTES + 1)), ("content",)),
    ("lone surrogate", event(content="a\ud800b"), ("content",)),
    ("label None", event(metadata={"access_labels": [None]}), ("metadata", "access_labels", 0)),
    ("label empty", event(metadata={"access_labels": [""]}), ("metadata", "access_labels", 0)),
    ("label with NUL", event(metadata={"access_labels": ["public\x00agents"]}),
     ("metadata", "access_labels", 0)),
    ("label with newline", event(metadata={"access_labels": ["a\nb"]}),
     ("metadata", "access_labels", 0)),
    ("label too long", event(metadata={"access_labels": ["L" * (MAX_LABEL_CHARS + 1)]}),
     ("metadata", "access_labels", 0)),
    ("too many labels", event(metadata={"access_labels": [f"l{i}" for i in range(MAX_LABELS + 1)]}),
     ("metadata", "access_labels")),
    ("keyword too long", event(metadata={"keywords": ["k" * 40_000]}), ("metadata", "keywords", 0)),
    ("scope with DEL", event(metadata={"scope": ["paris\x7f"]}), ("metadata", "scope", 0)),
    ("title with NUL", event(metadata={"title": "a\x00"}), ("metadata", "title")),
]


@pytest.mark.parametrize(("case", "fields", "loc"), BAD, ids=[b[0] for b in BAD])
def test_a_value_no_store_can_hold_is_a_field_error_at_its_place(
    case: str, fields: dict[str, Any], loc: tuple[str | int, ...]
) -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        ChangeEvent.model_validate(fields)
    assert [tuple(e["loc"])[: len(loc)] for e in caught.value.errors()] == [loc], case


def test_the_largest_accepted_values_pass() -> None:
    ChangeEvent.model_validate(event(
        version=MAX_VERSION,
        document_id="é" * (MAX_DOCUMENT_ID_BYTES // 2),
        content="x" * MAX_CONTENT_BYTES,
        metadata={"access_labels": ["L" * MAX_LABEL_CHARS] * MAX_LABELS,
                  "keywords": ["Rückerstattung", "返金"]},
    ))


def test_the_bound_leaves_room_for_every_store_to_grow_a_version() -> None:
    """The next version of the largest one still fits a signed 64-bit integer, exactly in
    a float64 too (JSON readers of JavaScript CMSs, metric values)."""
    assert MAX_VERSION + 1 < 2**63 - 1
    assert float(MAX_VERSION) == MAX_VERSION
