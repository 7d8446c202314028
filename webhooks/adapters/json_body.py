"""A webhook body as a JSON object, for adapters that read it field by field.

``base.parse_json`` validates against a pydantic model; the CMS adapters read
documents whose fields the content model (and the field mapping) decides, so
they only need "a JSON object" first: 400 otherwise, as for every adapter.
"""

from __future__ import annotations

import json
from typing import Any

from webhooks.adapters.base import MalformedBody


def json_object(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedBody(f"body is not valid JSON: {exc}") from exc
    except RecursionError as exc:  # nesting deeper than the decoder's stack: a 400, not a 500
        raise MalformedBody("body is not valid JSON: nested too deeply") from exc
    if not isinstance(value, dict):
        raise MalformedBody(f"body is JSON but not an object (a {type(value).__name__})")
    return value
