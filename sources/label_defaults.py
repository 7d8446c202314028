"""Default ``access_labels`` per folder of a library: for files that set none.

A library often keeps its restricted documents in a folder of their own
(``hr/``, ``internal/``) and writes no labels in each file. The setting
``POLICY_INDEXER_SOURCE_DEFAULT_ACCESS_LABELS`` names, per glob of the file's path
relative to the library (the folder root; for Git, below ``git_path_prefix``), the
labels a document gets when its own front matter (or an HTML file's ``<meta>``)
has no ``access_labels`` key::

    hr/**=staff,hr; internal/**=staff; **=public

Rules are separated by ``;`` (or new lines), tried in order, the first match wins;
a path no rule matches gets no default. In a pattern ``*`` and ``?`` stay inside
one path segment, ``**`` is any number of segments (none included), and a pattern
ending in ``/`` means everything below that folder.

Only a missing key is defaulted. The fail-closed rules of the front matter stay:
an empty, null or wrong-typed ``access_labels`` and a near-miss key
(``access_label:``) still keep the document out of the index (``chunker.metadata``),
whatever the default says. The default travels in the change event's
``metadata.access_labels``, so every store and the search filter see it as any
other label.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pydantic

from chunker.errors import quote
from events.model import EventMetadata

_RULE_SPLIT = re.compile(r"[;\n]")


@dataclass(frozen=True, slots=True)
class LabelRule:
    pattern: str
    labels: tuple[str, ...]
    regex: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class LabelDefaults:
    """The rules, in order; ``labels_for`` gives the first match's labels or None."""

    rules: tuple[LabelRule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.rules)

    def labels_for(self, relative: str) -> list[str] | None:
        """The default labels for the file at ``relative`` (``/``-separated), or None."""
        for rule in self.rules:
            if rule.regex.fullmatch(relative):
                return list(rule.labels)
        return None

    def describe(self) -> str:
        return "; ".join(f"{r.pattern}={','.join(r.labels)}" for r in self.rules)


NO_DEFAULTS = LabelDefaults()

RawDefaults = str | Mapping[str, Sequence[str] | str] | LabelDefaults | None


def parse_label_defaults(value: RawDefaults) -> LabelDefaults:
    """``"hr/**=staff,hr; **=public"`` (or a mapping pattern -> labels) as rules.

    Raises ``ValueError`` naming the bad rule: no ``=``, an empty pattern, an absolute
    one or one with a ``.``/``..`` segment, no labels, or a label the change event
    refuses (the same check as every label).
    """
    if isinstance(value, LabelDefaults):
        return value
    if value is None:
        return NO_DEFAULTS
    pairs: list[tuple[str, Sequence[str] | str]] = []
    if isinstance(value, str):
        for raw in _RULE_SPLIT.split(value):
            rule = raw.strip()
            if not rule:
                continue
            pattern, sep, labels = rule.partition("=")
            if not sep:
                raise ValueError(f"default access_labels rule {quote(rule)} is not "
                                 "'<glob>=<label>,<label>'")
            pairs.append((pattern, labels))
    else:
        pairs = list(value.items())
    return LabelDefaults(tuple(_rule(pattern, labels) for pattern, labels in pairs))


def _rule(pattern: str, raw_labels: Sequence[str] | str) -> LabelRule:
    pattern = pattern.strip()
    where = f"default access_labels rule for {quote(pattern)}"
    if not pattern:
        raise ValueError("a default access_labels rule has an empty pattern")
    if pattern.startswith("/"):
        raise ValueError(f"{where}: the pattern is relative to the library (no leading '/')")
    if pattern.endswith("/"):
        pattern += "**"
    if any(part in (".", "..", "") for part in pattern.split("/")):
        raise ValueError(f"{where}: the pattern has an empty, '.' or '..' segment")
    items: Iterable[str] = raw_labels.split(",") if isinstance(raw_labels, str) else raw_labels
    labels = [item.strip() if isinstance(item, str) else item for item in items]
    labels = [label for label in labels if label != ""]
    if not labels:
        raise ValueError(f"{where}: no labels (write the labels; 'public' for everyone)")
    try:
        checked = EventMetadata(access_labels=labels).access_labels or []
    except pydantic.ValidationError as exc:
        raise ValueError(f"{where}: {exc.errors()[0]['msg']}") from None
    return LabelRule(pattern, tuple(checked), _compile(pattern))


def _compile(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    parts = pattern.split("/")
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        piece = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
                        for c in part)
        out.append(piece if last else piece + "/")
    return re.compile("".join(out))


def declares_access_labels(front_matter: Iterable[object]) -> bool:
    """Does a front matter mapping have an ``access_labels`` key (as the chunker reads keys:
    case folded, ``-`` as ``_``), whatever its value? An empty or null one counts: the
    chunker refuses it, and a default must never stand in for it."""
    return any(str(key).strip().lower().replace("-", "_") == "access_labels"
               for key in front_matter)


def with_default_labels(
    metadata: EventMetadata, defaults: LabelDefaults, relative: str, declared: bool
) -> EventMetadata:
    """``metadata`` with the default labels of ``relative`` when neither it nor the document
    (``declared``) sets ``access_labels``."""
    if declared or metadata.access_labels is not None or not defaults:
        return metadata
    labels = defaults.labels_for(relative)
    if labels is None:
        return metadata
    return metadata.model_copy(update={"access_labels": labels})
