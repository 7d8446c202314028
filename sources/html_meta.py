"""Document metadata from an HTML file's ``<meta>`` tags (HTML has no front matter).

``<meta name="access_labels" content="agents">``, ``scope``, ``keywords``
(comma-separated lists), ``valid_from``, ``valid_to``, ``effective_date``
(ISO dates). Names are matched like front matter keys: case-insensitive, ``-``
read as ``_``. Other ``<meta>`` tags (``description``, ``viewport``) are ignored;
the ``<title>`` is read by the chunker.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pydantic

from events.model import EventMetadata
from foundation.validation import first_error
from sources.errors import SourceDataError

_LISTS = frozenset({"scope", "access_labels", "keywords"})
_DATES = frozenset({"valid_from", "valid_to", "effective_date"})


class _MetaReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "meta":
            return
        values = dict(attrs)
        name = (values.get("name") or "").strip().lower().replace("-", "_")
        content = values.get("content")
        if name in _LISTS | _DATES and content is not None:
            self.found.setdefault(name, content)

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":  # the metadata is in <head>; the body is not read
            raise _HeadEnd


class _HeadEnd(Exception):
    pass


def html_metadata(text: str, where: str, source_path: str) -> EventMetadata:
    """The metadata the ``<meta>`` tags of ``text`` set; raises ``SourceDataError``."""
    reader = _MetaReader()
    try:
        reader.feed(text)
        reader.close()
    except _HeadEnd:
        pass
    fields: dict[str, object] = {"source_path": source_path}
    for name, content in reader.found.items():
        if name in _LISTS:
            fields[name] = [item.strip() for item in content.split(",") if item.strip()]
        else:
            fields[name] = content.strip()
    try:
        return EventMetadata.model_validate(fields)
    except pydantic.ValidationError as exc:
        key, why = first_error(exc)
        raise SourceDataError(
            f"{where}: <meta name={key!r}> has a bad value {fields.get(key)!r}: {why}"
        ) from exc
