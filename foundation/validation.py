"""A pydantic ``ValidationError`` said the project's way, written once.

Two forms: ``one_line`` for a person (a command's usage error, a dead letter's
reason, a log line): ``field.path: message; other: message``; and
``field_errors`` for an HTTP answer: each error's ``loc``, ``msg`` and ``type``,
never its input (a webhook's field may be document content). ``message`` drops
pydantic's ``Value error, `` prefix from a validator's own text.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails


def message(error: ErrorDetails) -> str:
    """The error's text; a validator's ``ValueError`` without pydantic's prefix."""
    return str(error["msg"]).removeprefix("Value error, ")


def location(error: ErrorDetails, root: str = "") -> str:
    """``field.0.sub``; ``root`` for an error of the whole object."""
    return ".".join(str(part) for part in error["loc"]) or root


def one_line(exc: ValidationError, *, root: str = "", locations: bool = True) -> str:
    """Every error, ``location: message`` joined by ``; `` (``locations=False``: the
    messages alone, for rules whose text names the fields)."""
    errors = exc.errors(include_url=False, include_input=False)
    if not locations:
        return "; ".join(message(e) for e in errors)
    return "; ".join(f"{location(e, root)}: {e['msg']}" for e in errors)


def field_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Each error as ``{"loc", "msg", "type"}``, without its input, URL or context."""
    return [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False, include_context=False, include_input=False)]
