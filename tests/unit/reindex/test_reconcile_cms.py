"""The 23,748-documents story, against the CMS API source over real loopback HTTP.

A full sync cut short by a 503 must not be read as "everything after page 1 is gone".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.cms import FakeCms, serve_cms

from reindex.model import Outcome
from reindex.reconcile import Reconciler
from sources.cms import CmsApiSource
from store.memory import InMemoryStore


def record(doc: str, version: int, deleted: bool = False) -> dict[str, object]:
    out: dict[str, object] = {"id": doc, "version": version,
                              "changed_at": "2026-03-01T12:00:00+01:00", "deleted": deleted}
    if not deleted:
        out["content"] = f"# {doc}\n\nVersion {version}.\n"
    return out


class FlakyCms(FakeCms):
    """Serves the first listing page, then answers 503 to everything."""

    fail_after_first_page: bool = False

    def page(self, limit: int, cursor: str | None) -> dict[str, Any]:
        served = super().page(limit, cursor)
        if self.fail_after_first_page:
            self.fail_with = 503
        return served


@pytest.fixture
def cms() -> Iterator[FlakyCms]:
    fake = FlakyCms({f"doc/{i:02d}": record(f"doc/{i:02d}", 1) for i in range(30)})
    with serve_cms(fake) as served:
        yield served


def source(cms: FakeCms) -> CmsApiSource:
    return CmsApiSource(cms.url, page_size=10, backoff_seconds=0.01, attempts=2)


def test_a_503_after_the_first_page_deletes_nothing(cms: FlakyCms) -> None:
    store = InMemoryStore()
    assert Reconciler(source(cms), store).run().outcome is Outcome.SUCCESS
    assert len(store.states) == 30

    cms.fail_after_first_page = True
    report = Reconciler(source(cms), store).run()
    assert report.outcome is Outcome.FAILED
    assert report.error is not None and "after 10 entries" in report.error
    assert "503" in report.error
    assert not any(s.deleted for s in store.states.values())
    assert {c.split("@")[0] for c in store.chunks} == set(cms.documents)

    cms.fail_after_first_page, cms.fail_with = False, None  # the CMS is back
    cms.documents["doc/07"] = record("doc/07", 2, deleted=True)
    cms.documents["doc/08"] = record("doc/08", 3)
    report = Reconciler(source(cms), store).run()
    assert report.outcome is Outcome.SUCCESS
    assert report.decided == {"up_to_date": 28, "delete": 1, "reindex": 1}
    assert store.states["doc/07"].deleted and store.states["doc/08"].version == 3
