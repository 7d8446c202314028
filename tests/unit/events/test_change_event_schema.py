from __future__ import annotations

from events.schema import SCHEMA_PATH, schema_text


def test_the_published_json_schema_is_up_to_date() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "events/change-event.schema.json is stale: run `python -m events.schema`"
    )
