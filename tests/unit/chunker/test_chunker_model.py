"""The chunk model: ``embed_text`` derived but in every dump, and build()'s shared fields-set."""

from __future__ import annotations

import copy
import json

import pytest
from pydantic import BaseModel, ValidationError

from chunker import chunk_document
from chunker.model import Chunk, Neighbours, build

TEXT = "# Refunds\n\nWithin 30 days.\n\n# Shipping\n\nFive days."


def chunks() -> list[Chunk]:
    return chunk_document("refund", 3, TEXT)


def test_embed_text_is_derived_not_stored_and_still_in_every_dump() -> None:
    chunk = chunks()[1]
    assert "embed_text" not in Chunk.model_fields
    assert chunk.embed_text == "refund > Shipping\n# Shipping\n\nFive days."
    assert chunk.model_dump()["embed_text"] == chunk.embed_text
    assert json.loads(chunk.model_dump_json())["embed_text"] == chunk.embed_text
    assert Chunk.model_validate_json(chunk.model_dump_json()) == chunk
    assert Chunk.model_validate(chunk.model_dump(mode="json")) == chunk


def test_a_stored_embed_text_that_disagrees_is_an_error() -> None:
    stored = json.loads(chunks()[1].model_dump_json())
    stored["embed_text"] = "refund > Shipping\nsomething else"
    with pytest.raises(ValidationError, match="embed_text of 'refund@v3#shipping'"):
        Chunk.model_validate_json(json.dumps(stored))
    with pytest.raises(ValidationError, match="embed_text"):
        Chunk.model_validate(stored)


def test_other_extra_keys_are_still_refused() -> None:
    stored = json.loads(chunks()[1].model_dump_json())
    with pytest.raises(ValidationError, match="extra"):
        Chunk.model_validate({**stored, "embed_txt": "typo"})


def test_copies_get_their_own_fields_set_and_assignment_is_refused() -> None:
    """build() gives every chunk one shared fields-set: pydantic must never add to it in place."""
    first, second = chunks()
    shared = first.model_fields_set
    assert second.model_fields_set is shared and shared == set(Chunk.model_fields)
    changed = first.model_copy(update={"text": "Within 60 days."})  # adds to the fields-set
    assert changed.embed_text == "refund > Refunds\nWithin 60 days."
    for other in (changed, copy.copy(first), copy.deepcopy(first), first.model_copy(deep=True)):
        assert other == first or other is changed
        assert other.model_fields_set is not shared
    with pytest.raises(ValidationError, match="frozen"):
        first.text = "x"  # type: ignore[misc]
    assert shared == set(Chunk.model_fields)


def test_build_refuses_a_model_that_allows_assignment() -> None:
    class Open(BaseModel):
        name: str

    with pytest.raises(TypeError, match="frozen models, not Open"):
        build(Open, {"name": "x"})
    assert build(Neighbours, {"previous": None, "next": "a", "related": []}) == Neighbours(next="a")
