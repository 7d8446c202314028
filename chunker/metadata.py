"""Document metadata from YAML front matter, overridden by the change event's.

Front matter keys are matched to ``DocumentMetadata`` fields by name, with
``-`` read as ``_`` (``valid-from`` is ``valid_from``). ``lang`` and
``language`` set the document's language. Every other key (a CMS code such
as ``code: POL-RET-004``, ``pricing: {percent: 50}``, ``layout``...) travels
with the chunks in ``attributes``, as JSON (dates as ISO strings), so a
reply can cite the CMS's own identifier and code can compute an amount; more
than ``MAX_ATTRIBUTES_BYTES`` of them is an error naming the largest key. A
single string where a list is expected (``keywords: refunds, billing``) is
split at commas. Keys present in the caller's mapping win, including an
explicit ``None``.

When neither front matter nor the event declares a language, it is the
path's locale segment (``legal/de/terms.md``, ``privacy/fr.md``), else what
``py3langid`` detects in the text, else None (analysed without stemming).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import yaml
from pydantic import ValidationError

from analysis.languages import LanguageError, detect, from_path, normalise
from chunker.errors import InvalidFrontMatter, InvalidMetadata, quote
from chunker.model import DocumentMetadata
from foundation.validation import first_error

FIELDS = frozenset(DocumentMetadata.model_fields)
# Every chunk carries the attributes: bounded so a front matter cannot multiply the index.
MAX_ATTRIBUTES_BYTES = 8192
_LANGUAGE_KEYS = frozenset({"lang", "language"})
# Keys that name what the chunk already has (its version comes from the event).
_NOT_ATTRIBUTES = frozenset({"version"})
# The YAML keys of a front matter are English whatever the document's language.
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n.*?\r?\n---[ \t]*\r?\n", re.S)
# Below this probability the detector's guess is not used.
MIN_DETECT_PROBABILITY = 0.8
# libyaml's parser when PyYAML has it (its wheels do): the same safe loading, five
# times faster than the pure-Python parser
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TOO_DEEP = "front matter nests collections too deeply to read"
_LISTS = frozenset({"scope", "access_labels", "keywords"})
# A front matter may hold this many YAML nodes, every alias counted again where it is
# used: far above anything the limits accept (64 labels, 8 KiB of attributes), far
# below what a billion-laughs alias bomb of a few hundred bytes expands to.
MAX_YAML_NODES = 10_000
# Keys that mean a known field under another name; a key whose normalised form
# (case, '-', '_', ' ' dropped) equals a field's or one of these is a slip, refused.
_ALIASES: dict[str, str] = {
    "accesslabel": "access_labels", "labels": "access_labels", "label": "access_labels",
    "permissions": "access_labels", "permission": "access_labels",
    "acl": "access_labels", "accesslabelss": "access_labels",
    "validuntil": "valid_to", "validto": "valid_to", "expires": "valid_to",
    "expiry": "valid_to", "validtill": "valid_to",
    "validfrom": "valid_from", "validsince": "valid_from",
    "effective": "effective_date", "effectivedate": "effective_date",
    "effectivefrom": "effective_date", "effectiveon": "effective_date",
    "scopes": "scope", "keyword": "keywords",
}


def _squash(key: str) -> str:
    return re.sub(r"[\s_\-.]+", "", key).lower()


_SQUASHED_FIELDS = {_squash(f): f for f in FIELDS if f != "attributes"}


def near_field(key: str) -> str | None:
    """The metadata field an unknown key ``key`` looks like a slip for, or None."""
    squashed = _squash(key)
    return _SQUASHED_FIELDS.get(squashed) or _ALIASES.get(squashed)


def load_yaml(source: str) -> object:
    """YAML text to Python values, refusing more than ``MAX_YAML_NODES`` nodes.

    The nodes are counted, aliases expanded, before any value is built, so an
    alias bomb is refused in microseconds and never expanded. Raises
    ``InvalidFrontMatter`` (a ``ValueError``) with a short message.
    """
    loader = _LOADER(source)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _count_nodes(node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml stops at 1,000 levels
            raise InvalidFrontMatter(_TOO_DEEP) from exc
        raise InvalidFrontMatter(f"front matter is not valid YAML: {quote(str(exc))}") from exc
    except RecursionError as exc:  # PyYAML builds nested collections recursively
        raise InvalidFrontMatter(_TOO_DEEP) from exc
    finally:
        loader.dispose()


def _count_nodes(root: yaml.Node) -> None:
    left = MAX_YAML_NODES
    key = None
    stack: list[tuple[yaml.Node, object]] = [(root, None)]
    while stack:
        node, top = stack.pop()
        left -= 1
        if left < 0:
            where = f" (at key {quote(str(top), 60)})" if top is not None else ""
            raise InvalidFrontMatter(
                f"front matter is larger than {MAX_YAML_NODES} YAML values with its "
                f"aliases expanded{where}: refused unread (an alias bomb?)")
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = k.value if node is root and isinstance(k, yaml.ScalarNode) else top
                stack.append((k, key))
                stack.append((v, key))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, top) for child in node.value)


def _labels(key: str, value: object) -> list[str]:
    """``access_labels`` as written, refused when it could read as "no labels"."""
    if isinstance(value, str):
        items = [item.strip() for item in value.split(",") if item.strip()]
        if not items:
            raise InvalidFrontMatter(
                f"front matter key {key!r} is an empty string: write the labels "
                "(access_labels: [public] for everyone), never nothing")
        return items
    if isinstance(value, list):
        if not value:
            raise InvalidFrontMatter(
                f"front matter key {key!r} is an empty list: write the labels "
                "(access_labels: [public] for everyone), never nothing")
        bad = [v for v in value if not isinstance(v, str) or not v.strip()]
        if bad:
            raise InvalidFrontMatter(
                f"front matter key {key!r} holds {quote(bad[0])}, not a label: each "
                "label is a non-empty string")
        return [v.strip() for v in value]
    raise InvalidFrontMatter(
        f"front matter key {key!r} has a bad value {quote(value)}: must be a list of "
        "labels (or one comma-separated string)")


def parse_front_matter(source: str) -> dict[str, object]:
    """The metadata fields that the YAML front matter ``source`` sets.

    Fails closed on permission labels: an ``access_labels`` that is empty, null or
    holds a non-string, and an unknown key that looks like a field (``access_label``,
    ``labels``, ``valid_until``: see ``near_field``), raise ``InvalidFrontMatter``
    naming the key, so the document never reaches the index unlabelled.
    """
    data = load_yaml(source)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidFrontMatter(
            f"front matter must be a mapping of keys to values, got {type(data).__name__}: "
            f"{_short(data)}"
        )
    fields: dict[str, object] = {}
    attributes: dict[str, Any] = {}
    for key, value in data.items():
        name = str(key).strip().lower().replace("-", "_")
        if name == "access_labels":
            fields[name] = _labels(str(key), value)
            continue
        if name not in FIELDS and name not in _LANGUAGE_KEYS and name not in _NOT_ATTRIBUTES:
            near = near_field(str(key))
            if near is not None:
                raise InvalidFrontMatter(
                    f"front matter key {quote(str(key), 80)} is not a metadata field; did "
                    f"you mean {near!r}? (refused: a misspelt field would be ignored)")
        if value is None:
            continue
        if name in _LANGUAGE_KEYS:
            fields["language"] = _language(f"front matter key {key!r}", value, InvalidFrontMatter)
        elif name in FIELDS and name != "attributes":
            fields[name] = _listify(name, value)
        elif name not in _NOT_ATTRIBUTES:
            attributes[str(key)] = value
    try:
        DocumentMetadata.model_validate(fields)
    except ValidationError as exc:
        key, why = first_error(exc)
        raise InvalidFrontMatter(
            f"front matter key {key!r} has a bad value {_short(fields.get(key))}: {why}"
        ) from exc
    if attributes:
        fields["attributes"] = _bounded(attributes, InvalidFrontMatter)
    return fields


def merge_metadata(
    front_matter: Mapping[str, object],
    overrides: Mapping[str, object] | None,
    *,
    text: str | None = None,
    path: str | None = None,
) -> DocumentMetadata:
    """Front matter, then the event's metadata; the language filled in when neither set it.

    ``path`` is a hint for the locale segment when there is no ``source_path``
    (the document id); ``text`` is what the detector reads.
    """
    merged = dict(front_matter)
    for key, value in (overrides or {}).items():
        if key not in FIELDS:
            raise InvalidMetadata(
                f"metadata key {key!r} is not a DocumentMetadata field "
                f"({', '.join(sorted(FIELDS))})"
            )
        merged[key] = _listify(key, value) if value is not None else None
    merged = {key: value for key, value in merged.items() if value is not None}
    if "language" in merged:
        merged["language"] = _language(
            "metadata key 'language'", merged["language"], InvalidMetadata
        )
    else:
        found = _inferred_language(merged.get("source_path"), path, text)
        if found is not None:
            merged["language"] = found
    if "attributes" in merged:
        merged["attributes"] = _bounded(merged["attributes"], InvalidMetadata)
    try:
        return DocumentMetadata.model_validate(merged)
    except ValidationError as exc:
        key, why = first_error(exc)
        raise InvalidMetadata(
            f"metadata key {key!r} has a bad value {_short(merged.get(key))}: {why}"
        ) from exc


def _inferred_language(
    source_path: object, path: str | None, text: str | None
) -> str | None:
    for candidate in (source_path, path):
        if isinstance(candidate, str):
            found = from_path(candidate)
            if found is not None:
                return found
    if text:
        code, probability = detect(_FRONT_MATTER.sub("", text[:20_000], count=1))
        if code is not None and probability >= MIN_DETECT_PROBABILITY:
            return code
    return None


def _language(
    what: str, value: object, error: type[InvalidFrontMatter] | type[InvalidMetadata]
) -> str:
    if not isinstance(value, str):
        raise error(f"{what} has a bad value {_short(value)}: must be a language tag")
    try:
        return normalise(value)
    except LanguageError as exc:
        raise error(f"{what}: {exc}") from exc


class _TooBig(Exception):
    pass


def _json_value(value: object, budget: list[int]) -> Any:
    """YAML values as JSON: dates as ISO strings, keys as strings, the rest as they are.

    ``budget`` counts the values still allowed: YAML aliases can make a small
    front matter expand to gigabytes, so the copy stops as soon as it is larger
    than any accepted attributes could be.
    """
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _json_value(v, budget) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_json_value(v, budget) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _bounded(
    attributes: object, error: type[InvalidFrontMatter] | type[InvalidMetadata]
) -> dict[str, Any]:
    if not isinstance(attributes, Mapping):
        raise error(f"attributes has a bad value {_short(attributes)}: must be a mapping")
    values: dict[str, Any] = {}
    budget = [MAX_ATTRIBUTES_BYTES]
    for key, value in attributes.items():
        try:
            values[str(key)] = _json_value(value, budget)
        except _TooBig:
            raise error(
                f"attributes are larger than {MAX_ATTRIBUTES_BYTES} bytes as JSON "
                f"(at key {str(key)[:60]!r})"
            ) from None
    try:
        size = len(json.dumps(values, ensure_ascii=False, allow_nan=False).encode())
    except (TypeError, ValueError) as exc:
        raise error(f"attributes are not JSON values: {exc}") from exc
    if size > MAX_ATTRIBUTES_BYTES:
        largest = max(values, key=lambda k: len(json.dumps(values[k], ensure_ascii=False)))
        raise error(
            f"attributes take {size} bytes as JSON, more than {MAX_ATTRIBUTES_BYTES}; "
            f"the largest is {largest[:60]!r}"
        )
    return values


def _listify(name: str, value: object) -> object:
    if name in _LISTS and isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def _short(value: object) -> str:
    """A bounded repr: a value built from YAML aliases can be huge."""
    return quote(value)
