"""The rules each apply follows: the version guard, the state transition, the take-back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support.chunks import fake_chunker

from events.model import Action, ChangeEvent
from indexing.model import Outcome
from indexing.rules import guard, state_after, take_back
from store.model import DocumentState

WHEN = datetime(2024, 1, 1, tzinfo=UTC)


def state(version: int, chunk_ids: tuple[str, ...] = (), superseded: tuple[str, ...] = (),
          *, deleted: bool = False) -> DocumentState:
    return DocumentState("d", version, WHEN, WHEN, chunk_ids, None, deleted, superseded)


def upsert(version: int, content: str = "alpha") -> ChangeEvent:
    return ChangeEvent(event_id=f"d-{version}", document_id="d", action=Action.UPSERT,
                       version=version, changed_at=WHEN, content_type="text/markdown",
                       content=content)


@pytest.mark.parametrize(
    ("version", "indexed", "expected"),
    [
        (1, None, None),
        (3, state(2), None),
        (2, state(2), Outcome.SKIPPED_DUPLICATE),
        (1, state(2), Outcome.SKIPPED_STALE),
        (2, state(2, deleted=True), Outcome.SKIPPED_DUPLICATE),  # a tombstone guards too
        (1, state(2, deleted=True), Outcome.SKIPPED_STALE),
    ],
)
def test_only_a_newer_version_passes_the_guard(
    version: int, indexed: DocumentState | None, expected: Outcome | None
) -> None:
    assert guard(upsert(version), indexed) is expected


def test_a_new_version_makes_the_previous_chunks_the_delete_steps_work_list() -> None:
    event = upsert(3, "alpha\n\nbeta")
    after = state_after(event, state(2, ("d@v2#alpha",), ("d@v1#alpha",)),
                        fake_chunker("d", 3, event.content or ""))
    assert (after.version, after.chunk_ids) == (3, ("d@v3#alpha", "d@v3#beta"))
    assert after.superseded_chunk_ids == ("d@v2#alpha",)
    assert after.content_hash is not None and not after.deleted


def test_a_same_version_rewrite_keeps_the_previous_work_list() -> None:
    """The indexed version's own ids are not older; what was superseded still is."""
    after = state_after(upsert(2), state(2, ("d@v2#alpha",), ("d@v1#alpha",)))
    assert after.superseded_chunk_ids == ("d@v1#alpha",)


def test_a_delete_is_a_tombstone_with_no_chunks_and_no_hash() -> None:
    event = ChangeEvent(event_id="d-4", document_id="d", action=Action.DELETE, version=4,
                        changed_at=WHEN)
    after = state_after(event, state(3, ("d@v3#alpha",)))
    assert after.deleted and after.chunk_ids == () and after.content_hash is None
    assert after.superseded_chunk_ids == ("d@v3#alpha",)


def test_losing_to_a_newer_version_takes_back_below_the_newer_version_only() -> None:
    assert take_back(state(5), ["d@v4#alpha"]) == (5, ("d@v4#alpha",))
    assert take_back(None, ["d@v4#alpha"]) is None
