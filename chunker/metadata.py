"""Document metadata from YAML front matter, overridden by the change event's.

Front matter keys are matched to ``DocumentMetadata`` fields by name, with
``-`` read as ``_`` (``valid-from`` is ``valid_from``); keys of other
meaning (``layout``, ``description``...) are ignored. A single string where
a list is expected (``keywords: refunds, billing``) is split at commas.
Keys present in the caller's mapping win, including an explicit ``None``.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping

import yaml
from pydantic import ValidationError

from chunker.errors import InvalidFrontMatter, InvalidMetadata
from chunker.model import DocumentMetadata

FIELDS = frozenset(DocumentMetadata.model_fields)
# libyaml's parser when PyYAML has it (its wheels do): the same safe loading, five
# times faster than the pure-Python parser
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TOO_DEEP = "front matter nests collections too deeply to read"
_LISTS = frozenset({"scope", "access_labels", "keywords"})


def parse_front_matter(source: str) -> dict[str, object]:
    """The metadata fields that the YAML front matter ``source`` sets."""
    try:
        data = yaml.load(source, Loader=_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml stops at 1,000 levels
            raise InvalidFrontMatter(_TOO_DEEP) from exc
        raise InvalidFrontMatter(f"front matter is not valid YAML: {exc}") from exc
    except RecursionError as exc:  # PyYAML builds nested collections recursively
        raise InvalidFrontMatter(_TOO_DEEP) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidFrontMatter(
            f"front matter must be a mapping of keys to values, got {type(data).__name__}: "
            f"{_short(data)}"
        )
    fields: dict[str, object] = {}
    for key, value in data.items():
        name = str(key).strip().lower().replace("-", "_")
        if name in FIELDS and value is not None:
            fields[name] = _listify(name, value)
    try:
        DocumentMetadata.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else "?"
        raise InvalidFrontMatter(
            f"front matter key {key!r} has a bad value {_short(fields.get(key))}: {error['msg']}"
        ) from exc
    return fields


def merge_metadata(
    front_matter: Mapping[str, object], overrides: Mapping[str, object] | None
) -> DocumentMetadata:
    merged = dict(front_matter)
    for key, value in (overrides or {}).items():
        if key not in FIELDS:
            raise InvalidMetadata(
                f"metadata key {key!r} is not a DocumentMetadata field "
                f"({', '.join(sorted(FIELDS))})"
            )
        merged[key] = _listify(key, value) if value is not None else None
    merged = {key: value for key, value in merged.items() if value is not None}
    try:
        return DocumentMetadata.model_validate(merged)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else "?"
        raise InvalidMetadata(
            f"metadata key {key!r} has a bad value {_short(merged.get(key))}: {error['msg']}"
        ) from exc


def _listify(name: str, value: object) -> object:
    if name in _LISTS and isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def _short(value: object) -> str:
    """A bounded repr: a value built from YAML aliases can be huge."""
    bounded = reprlib.Repr()
    bounded.maxlevel, bounded.maxlist, bounded.maxdict = 2, 4, 4
    bounded.maxstring = bounded.maxother = 60
    text = bounded.repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
