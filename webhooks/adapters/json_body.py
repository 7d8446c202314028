"""A webhook body as a JSON object, for adapters that read it field by field.

``base.parse_json`` validates against a pydantic model; the CMS adapters read
documents whose fields the content model (and the field mapping) decides, so
they only need "a JSON object" first: 400 otherwise, as for every adapter
(``foundation.http.edge.json_object``, the search API's parser too).
"""

from __future__ import annotations

from typing import Any

from foundation.http.edge import InvalidJson
from foundation.http.edge import json_object as parse_object
from webhooks.adapters.base import MalformedBody


def json_object(body: bytes) -> dict[str, Any]:
    try:
        return parse_object(body)
    except InvalidJson as exc:
        raise MalformedBody(str(exc)) from exc
