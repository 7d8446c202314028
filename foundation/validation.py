"""A pydantic ``ValidationError`` said the project's way, written once.

Three forms: ``first_error`` for a message about one key; ``one_line`` for a
person (a command's usage error, a dead letter's reason, a log line):
``field.path: message; other: message``; and
``field_errors`` for an HTTP answer: each error's ``loc``, ``msg`` and ``type``,
without its input (a webhook's field may be document content), or with it,
shortened, for a caller whose input is its own (``shown_input=True``: a search
question), and then in one line by ``describe``. ``message`` drops pydantic's
``Value error, `` prefix from a validator's own text.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails


def message(error: ErrorDetails) -> str:
    """The error's text; a validator's ``ValueError`` without pydantic's prefix."""
    return str(error["msg"]).removeprefix("Value error, ")


def location(error: ErrorDetails, root: str = "") -> str:
    """``field.0.sub``; ``root`` for an error of the whole object."""
    return ".".join(str(part) for part in error["loc"]) or root


def first_error(exc: ValidationError) -> tuple[str, str]:
    """The first error's top-level field (``?`` for the whole object) and its message,
    for a rule that names one bad key of a mapping (front matter, ``<meta>`` tags)."""
    error = exc.errors(include_url=False)[0]
    return (str(error["loc"][0]) if error["loc"] else "?"), message(error)


def one_line(exc: ValidationError, *, root: str = "", locations: bool = True) -> str:
    """Every error, ``location: message`` joined by ``; `` (``locations=False``: the
    messages alone, for rules whose text names the fields)."""
    errors = exc.errors(include_url=False, include_input=False)
    if not locations:
        return "; ".join(message(e) for e in errors)
    return "; ".join(f"{location(e, root)}: {e['msg']}" for e in errors)


# How much of a caller's input a field error shows back.
MAX_SHOWN_INPUT = 120


def field_errors(exc: ValidationError, *, shown_input: bool = False) -> list[dict[str, Any]]:
    """Each error as ``{"loc", "msg", "type"}``, without its URL or context, and without
    its input unless ``shown_input`` (then ``"input"``, shortened, and names in ``loc``
    that UTF-8 can encode)."""
    errors = exc.errors(include_url=False, include_context=False, include_input=shown_input)
    if not shown_input:
        return [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in errors]
    return [{"loc": [p if isinstance(p, int) else printable(str(p)) for p in e["loc"]],
             "msg": e["msg"], "type": e["type"], "input": shorten(e.get("input"))}
            for e in errors]


def describe(errors: list[dict[str, Any]]) -> str:
    """Field errors with their input in one line: ``loc=<input as JSON>: msg; ...``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}={json.dumps(e['input'])}: {e['msg']}"
        for e in errors
    )


def shorten(value: Any) -> Any:
    """An input as JSON can carry it, at most ``MAX_SHOWN_INPUT`` characters."""
    if isinstance(value, str):
        value = printable(value)
    if isinstance(value, str) and len(value) > MAX_SHOWN_INPUT:
        return value[:MAX_SHOWN_INPUT] + "..."
    if isinstance(value, dict | list):
        text = json.dumps(value, default=str)
        return value if len(text) <= MAX_SHOWN_INPUT else text[:MAX_SHOWN_INPUT] + "..."
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # 1e400 parses as inf, which JSON cannot carry back
    if value is None or isinstance(value, bool | int | float):
        return value
    return printable(str(value))[:MAX_SHOWN_INPUT]


def printable(text: str) -> str:
    """``text`` with any lone surrogate as ``\\udXXX``: an answer must encode as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
