"""Hidden names: which path components the folder and Git sources never read.

A name starting with ``.`` (``.git``, ``.env``, ``.github``, an editor's
``.x.md.swp``) is not part of the library, whether it is in a file's listed
path or in the resolved target of a symbolic link. An allow-list
(``POLICY_INDEXER_FOLDER_HIDDEN_ALLOW``) names the hidden names that are part of
it anyway. Light on imports: ``policy_indexer.settings`` checks the setting with it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable


def parse_hidden_allow(value: str | Collection[str]) -> frozenset[str]:
    """The allow-list of hidden names: ``".well-known, .policies"`` or a collection.

    Each is one path component starting with ``.`` (not ``.`` or ``..``, no ``/``);
    raises ``ValueError`` naming a bad one.
    """
    names = value.split(",") if isinstance(value, str) else list(value)
    allowed = set()
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        if not name.startswith(".") or name in (".", "..") or "/" in name or "\0" in name:
            raise ValueError(f"hidden name {name!r} to allow must be one name starting with '.' "
                             "(not '.' or '..', no '/')")
        allowed.add(name)
    return frozenset(allowed)


def hidden_component(parts: Iterable[str], allowed: Collection[str] = ()) -> str | None:
    """The first name in ``parts`` that starts with ``.`` and is not ``allowed``, or None."""
    return next((p for p in parts if p.startswith(".") and p not in allowed), None)
