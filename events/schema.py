"""The JSON Schema of ``ChangeEvent``, published as ``events/change-event.schema.json``.

Regenerate after changing the model: ``python -m events.schema``; a unit test
fails while the file is out of date.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from events.model import ChangeEvent

SCHEMA_PATH = Path(__file__).with_name("change-event.schema.json")
SCHEMA_ID = "https://policy-indexer.invalid/schemas/change-event/v1.json"


def json_schema_text(model: type[BaseModel], schema_id: str) -> str:
    """A model's validation schema as a stable, published JSON Schema 2020-12 document."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
        **model.model_json_schema(mode="validation"),
    }
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def schema_text() -> str:
    return json_schema_text(ChangeEvent, SCHEMA_ID)


def main() -> None:
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")


if __name__ == "__main__":
    main()
