"""One contract, both pipelines: embedded (SQLite + local queue) and Kafka + Elasticsearch.

The same assertions on each: the corpus with every event twice and out of
order ends equal to the library; the version guard; tombstones; the delete
step; poison to the dead letters; the sweep finds nothing left over.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from support.index_equality import ExpectedIndex, assert_index_equals
from support.pipelines import PIPELINE_FACTORIES, PipelineFactory, PipelineUnderTest

from deleter.sweep import sweep
from events.model import Action, ChangeEvent


@pytest.fixture(params=PIPELINE_FACTORIES)
def pipeline(request: pytest.FixtureRequest) -> Iterator[PipelineUnderTest]:
    factory: PipelineFactory = request.param
    with factory(request) as p:
        yield p


def upsert(doc: str, version: int, body: str) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=datetime(2024, 1, version, tzinfo=UTC), content_type="text/markdown",
        content=f"# {doc.title()}\n\n## Rule\n\n{body}\n\n## Exceptions\n\nNone for {body}.\n",
    )


def delete(doc: str, version: int) -> ChangeEvent:
    return ChangeEvent(event_id=f"{doc}-{version}-d", document_id=doc, action=Action.DELETE,
                       version=version, changed_at=datetime(2024, 1, version, tzinfo=UTC))


def chunk_versions(pipeline: PipelineUnderTest) -> dict[str, set[int]]:
    pipeline.store.refresh()
    found: dict[str, set[int]] = {}
    for ref in pipeline.store.iter_chunks():
        found.setdefault(ref.document_id, set()).add(ref.version)
    return found


@pytest.mark.corpus
@pytest.mark.slow
def test_basecamp_twice_and_out_of_order_equals_the_library(
    pipeline: PipelineUnderTest, basecamp_events: list[ChangeEvent],
    basecamp_expected: ExpectedIndex,
) -> None:
    stream = basecamp_events * 2
    random.Random(11).shuffle(stream)
    pipeline.publish(stream)
    pipeline.wait_caught_up()
    assert_index_equals(pipeline.store, basecamp_expected)
    assert pipeline.dead_letter_reasons(0) == []


def test_guard_tombstones_and_delete_step(pipeline: PipelineUnderTest) -> None:
    pipeline.publish([
        upsert("refund", 2, "thirty days"), upsert("refund", 1, "ten days"),  # older: skipped
        delete("promo", 3), upsert("promo", 2, "half price"),  # a late upsert stays deleted
        upsert("terms", 1, "first"), upsert("terms", 2, "second"),  # v1 chunks deleted
    ])
    pipeline.wait_caught_up()
    assert chunk_versions(pipeline) == {"refund": {2}, "terms": {2}}
    promo = pipeline.store.get_state("promo")
    assert promo is not None and promo.deleted and promo.version == 3
    refund = pipeline.store.get_state("refund")
    assert refund is not None and refund.version == 2 and not refund.deleted
    report = sweep(pipeline.store, grace=timedelta(0), dry_run=True)
    assert report.total_leftovers == 0


def test_poison_goes_to_the_dead_letters_and_the_rest_is_indexed(
    pipeline: PipelineUnderTest,
) -> None:
    pipeline.publish([(b"broken", b"{not json"), upsert("refund", 1, "thirty days")])
    pipeline.wait_caught_up()
    assert pipeline.dead_letter_reasons(1) == [(b"broken", "not_json")]
    assert chunk_versions(pipeline) == {"refund": {1}}
