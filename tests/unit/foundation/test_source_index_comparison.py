"""The one comparison of the source with the index (``foundation.comparison``).

Each row of its table, the owner rule, the order of the checks, and the inputs it
must not guess at: a side without a version, a listing that names an id twice, a
document another source owns, a tombstoned document that comes back. Last, every
verdict means something to each reader: a lag (``metrics.lag``) and a reconcile
action (``reindex.plan``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

import reindex.plan as plan_module
from foundation.comparison import Comparison, Verdict, compare, owned_elsewhere, verdict
from metrics.lag import LagStatus, document_lag, verdict_lag
from reindex.model import Decision, IndexedDocument
from reindex.plan import decide
from sources.base import SourceEntry, Unreadable, UnreadableKind
from store.model import DocumentState

T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BAD_FILE = Unreadable(UnreadableKind.PERMISSION, "/lib/d.md: cannot open it")


def live(version: int, doc: str = "d") -> SourceEntry:
    return SourceEntry(doc, version, T)


def gone(version: int, doc: str = "d") -> SourceEntry:
    return SourceEntry(doc, version, T, deleted=True)


def unreadable(doc: str = "d") -> SourceEntry:
    return SourceEntry(doc, 0, T, unreadable=BAD_FILE)


def held(version: int, *, deleted: bool = False, owner: str | None = None,
         doc: str = "d") -> DocumentState:
    return DocumentState(doc, version, T - timedelta(hours=1), T, deleted=deleted, owner=owner)


@pytest.mark.parametrize(
    ("entry", "state", "expected"),
    [
        (live(2), None, Verdict.MISSING),
        (live(2), held(1), Verdict.BEHIND),
        (live(3), held(2, deleted=True), Verdict.RECREATED),
        (live(2), held(2), Verdict.CURRENT),
        (live(2), held(2, deleted=True), Verdict.TOMBSTONE_AT_LIVE_VERSION),
        (live(2), held(5), Verdict.INDEX_NEWER),
        (live(2), held(5, deleted=True), Verdict.INDEX_NEWER),
        (gone(4), held(6, deleted=True), Verdict.INDEX_NEWER),
        (gone(4), held(6), Verdict.INDEX_NEWER),
        (gone(4), None, Verdict.NEVER_INDEXED),
        (gone(4), held(3), Verdict.DELETED_AT_SOURCE),
        (gone(4), held(4), Verdict.LIVE_AT_TOMBSTONE_VERSION),
        (gone(4), held(4, deleted=True), Verdict.DELETED),
        (gone(4), held(2, deleted=True), Verdict.DELETED),
        (None, held(3, deleted=True), Verdict.DELETED),
        (None, held(3), Verdict.GONE_FROM_SOURCE),
        (None, None, Verdict.ABSENT),
        (unreadable(), held(3), Verdict.UNREADABLE),
        (unreadable(), None, Verdict.UNREADABLE),
    ],
)
def test_each_row_of_the_table(
    entry: SourceEntry | None, state: DocumentState | None, expected: Verdict
) -> None:
    assert verdict("d", entry, state) is expected


def test_the_owner_rule() -> None:
    assert owned_elsewhere("cms", "folder")
    assert not owned_elsewhere("folder", "folder")
    assert not owned_elsewhere(None, "folder")  # unowned (old state, or a tombstone)
    assert not owned_elsewhere("cms", None)  # no source named: every document compared
    assert not owned_elsewhere(None, None)


def test_another_sources_document_is_its_own_verdict_before_anything_else() -> None:
    for entry in (live(9), gone(9), unreadable(), None):
        assert verdict("d", entry, held(2, owner="cms"), source="folder",
                       refused={("d", 9)}) is Verdict.OTHER_OWNER
    assert verdict("d", live(9), held(2, owner="folder"), source="folder") is Verdict.BEHIND
    assert verdict("d", live(9), held(2, owner="cms")) is Verdict.BEHIND  # no source named
    assert verdict("d", live(9), held(2), source="folder") is Verdict.BEHIND  # unowned


def test_a_refused_version_is_refused_only_while_the_index_lacks_it() -> None:
    refused = {("d", 3)}
    assert verdict("d", live(3), None, refused=refused) is Verdict.REFUSED
    assert verdict("d", live(3), held(2), refused=refused) is Verdict.REFUSED
    assert verdict("d", live(3), held(2, deleted=True), refused=refused) is Verdict.REFUSED
    assert verdict("d", live(3), held(3), refused=refused) is Verdict.CURRENT
    assert verdict("d", live(4), held(2), refused=refused) is Verdict.BEHIND  # a newer edit
    assert verdict("d", gone(3), held(2), refused=refused) is Verdict.DELETED_AT_SOURCE
    assert verdict("d", unreadable(), None, refused={("d", 0)}) is Verdict.UNREADABLE
    assert verdict("other", live(3), None, refused=refused) is Verdict.MISSING


def test_a_tombstoned_document_that_reappears() -> None:
    tombstone = held(3, deleted=True)  # a tombstone frees the id: no owner
    assert verdict("d", live(4), tombstone, source="cms") is Verdict.RECREATED
    assert verdict("d", live(4), tombstone, source="folder") is Verdict.RECREATED
    assert verdict("d", live(3), tombstone) is Verdict.TOMBSTONE_AT_LIVE_VERSION
    assert verdict("d", live(2), tombstone) is Verdict.INDEX_NEWER  # never back in time
    assert verdict("d", live(4), tombstone, refused={("d", 4)}) is Verdict.REFUSED
    lag = document_lag("d", live(4), tombstone)
    assert lag is not None and (lag.status, lag.since) == (LagStatus.MISSING_FROM_INDEX, T)
    assert decide("d", live(4), IndexedDocument(3, True, 0)).reason == "recreated"


@dataclass(frozen=True)
class LooseState:
    """A state as a corrupt row could give it: nothing holds ``version`` to an int."""

    version: object
    deleted: bool = False
    owner: str | None = None


@dataclass(frozen=True)
class LooseEntry:
    document_id: str
    version: object
    deleted: bool = False
    unreadable: object | None = None


@pytest.mark.parametrize("version", [None, "3", 3.0, True])
def test_a_state_with_no_version_is_refused_not_guessed(version: object) -> None:
    state = LooseState(version)
    with pytest.raises(ValueError, match=r"'d': the index's state has no version"):
        verdict("d", live(3), state)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has no version"):
        verdict("d", None, state)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has no version"):
        list(compare([], {"d": state}))  # type: ignore[type-var]


def test_an_entry_with_no_version_is_refused_unless_it_is_unreadable() -> None:
    with pytest.raises(ValueError, match=r"'d': the source's entry has no version \(None\)"):
        verdict("d", LooseEntry("d", None), held(3))  # type: ignore[arg-type]
    entry = LooseEntry("d", None, unreadable=BAD_FILE)  # the source cannot say its version
    assert verdict("d", entry, held(3)) is Verdict.UNREADABLE  # type: ignore[arg-type]


def test_every_document_of_either_side_once_listed_first() -> None:
    listing = [live(2, "b"), gone(1, "a"), live(1, "new")]
    index = {"z": held(1, doc="z"), "a": held(1, doc="a"), "b": held(1, doc="b")}
    found = list(compare(listing, index))
    assert [(c.document_id, c.verdict) for c in found] == [
        ("b", Verdict.BEHIND), ("a", Verdict.LIVE_AT_TOMBSTONE_VERSION),
        ("new", Verdict.MISSING), ("z", Verdict.GONE_FROM_SOURCE)]
    assert found[0] == Comparison("b", Verdict.BEHIND, listing[0], index["b"])
    assert found[3].entry is None and found[2].state is None
    assert list(compare([], {})) == []


def test_an_id_listed_twice_is_one_document_its_last_entry_at_its_first_place() -> None:
    listing = [live(2, "a"), live(1, "b"), live(5, "a")]
    found = list(compare(listing, {"a": held(5, doc="a")}))
    assert [(c.document_id, c.verdict) for c in found] == [
        ("a", Verdict.CURRENT), ("b", Verdict.MISSING)]
    assert found[0].entry is listing[2]


def test_compare_passes_the_owner_and_the_refused_versions_on() -> None:
    listing = [live(3, "mine"), live(3, "theirs"), live(3, "bad")]
    index = {"theirs": held(1, owner="cms", doc="theirs"),
             "webhook-only": held(1, owner="cms", doc="webhook-only")}
    found = {c.document_id: c.verdict for c in compare(
        listing, index, source="folder", refused={("bad", 3)})}
    assert found == {"mine": Verdict.MISSING, "theirs": Verdict.OTHER_OWNER,
                     "bad": Verdict.REFUSED, "webhook-only": Verdict.OTHER_OWNER}


def test_every_verdict_means_something_to_each_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lag status for each but the three the readers say their own way, and a
    reconcile action for each but ``refused`` (the reconcile passes no refused versions)."""
    no_lag = {Verdict.ABSENT, Verdict.OTHER_OWNER, Verdict.REFUSED}
    for found in Verdict:
        lag = verdict_lag("d", found, live(1))
        assert (lag is None) == (found in no_lag), found
    indexed = IndexedDocument(1, False, 0)
    decisions = {}
    for found in Verdict:
        monkeypatch.setattr(plan_module, "verdict", lambda *_a, _v=found, **_k: _v)
        if found is Verdict.REFUSED:
            with pytest.raises(ValueError, match="no reconcile action"):
                plan_module.decide("d", live(1), indexed)
        else:
            decisions[found] = plan_module.decide("d", live(1), indexed).decision
    assert decisions[Verdict.ABSENT] is Decision.UP_TO_DATE
    assert decisions[Verdict.GONE_FROM_SOURCE] is Decision.DELETE
