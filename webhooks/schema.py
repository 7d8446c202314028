"""The JSON Schema of the webhook payload, published as ``docs/webhook-payload.schema.json``.

Regenerate after changing ``webhooks.payload``: ``python -m webhooks.schema``;
a unit test fails while the file is out of date.
"""

from __future__ import annotations

from pathlib import Path

from events.schema import json_schema_text
from webhooks.payload import WebhookPayload

DOCS = Path(__file__).resolve().parents[1] / "docs"
SCHEMA_PATH = DOCS / "webhook-payload.schema.json"
EXAMPLE_PATH = DOCS / "webhook-payload.example.json"
SCHEMA_ID = "https://policy-indexer.invalid/schemas/webhook-payload/v1.json"


def schema_text() -> str:
    return json_schema_text(WebhookPayload, SCHEMA_ID)


def main() -> None:
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")


if __name__ == "__main__":
    main()
