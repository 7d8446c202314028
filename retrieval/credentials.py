"""API keys, each mapped to the permission labels its holder may see (rule 8).

The labels a search runs with come from here and only from here: the request
models forbid extra fields, so a body that carries ``labels`` is refused, and
every interface resolves its caller's key through ``Credentials.resolve``.

Configuration is a JSON object (a string, a file, or an already parsed mapping)::

    {"support-bot": {"key": "<at least 16 bytes>", "labels": ["public", "agents"]},
     "ops-console": {"key": "<another secret>", "labels": ["public", "agents", "finance"],
                     "no_access": true, "no_access_per_minute": 10}}

``no_access`` (default ``false``): may this key be told ``no_access`` ("a document
you cannot see is about this") instead of ``no_document``? Off, a key cannot tell a
restricted document from none at all. On, the decision reads only titles and
heading paths (``retrieval.service``), at most ``no_access_per_minute`` times a
minute (a token bucket of that size; over it the answer is ``no_document``).

A lookup compares the presented key with every configured key, always all of
them, through ``hmac.compare_digest`` over SHA-256 digests (equal lengths), so
its time says nothing about which key, or how much of one, matched. Secrets are
``SecretStr``: they never appear in a repr, a log line or ``config`` output.

Errors: ``CredentialsError`` (bad configuration, names the key id and field) and
``UnknownKey`` (a presented key that matches none).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    SecretStr,
    ValidationError,
    field_validator,
)

from foundation.validation import one_line

MIN_KEY_BYTES = 16
DEFAULT_NO_ACCESS_PER_MINUTE = 10.0
MAX_NO_ACCESS_PER_MINUTE = 600.0
_KEY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
_LABEL = re.compile(r"^[^\s,\x00-\x1f]{1,128}$")


class CredentialsError(ValueError):
    """The credentials configuration cannot be used; the message names the field."""


class UnknownKey(LookupError):
    """A presented API key matches no configured key."""


class ApiKeyEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: SecretStr
    labels: list[str] = Field(default_factory=list)
    no_access: bool = Field(
        False, strict=True,
        description="May this key be told no_access (from titles and heading paths only)?",
    )
    no_access_per_minute: float = Field(
        DEFAULT_NO_ACCESS_PER_MINUTE, gt=0, le=MAX_NO_ACCESS_PER_MINUTE,
        description="At most this many no_access decisions a minute (token bucket).",
    )

    @field_validator("key")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        size = len(value.get_secret_value().encode("utf-8"))
        if size < MIN_KEY_BYTES:
            raise ValueError(f"key is {size} bytes; need at least {MIN_KEY_BYTES}")
        return value

    @field_validator("labels")
    @classmethod
    def _clean_labels(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _LABEL.match(value):
                raise ValueError(
                    f"label {value[:40]!r} is empty, too long or has whitespace, a comma "
                    "or a control character"
                )
        return values


class CredentialsConfig(RootModel[dict[str, ApiKeyEntry]]):
    """The configuration as parsed at the edge; ``Credentials.from_config`` checks the rest."""


@dataclass(frozen=True)
class Caller:
    """Who is asking: the key's id (for logs and metrics, never the secret) and its labels.

    ``no_access_per_minute`` is ``None`` unless the key may be told ``no_access``.
    """

    key_id: str
    labels: frozenset[str]
    no_access_per_minute: float | None = None


@dataclass(frozen=True)
class _Key:
    key_id: str
    digest: bytes
    labels: frozenset[str]
    no_access_per_minute: float | None

    def caller(self) -> Caller:
        return Caller(self.key_id, self.labels, self.no_access_per_minute)


class Credentials:
    """The configured keys; ``resolve(presented)`` gives the caller or raises ``UnknownKey``."""

    def __init__(self, keys: Mapping[str, ApiKeyEntry]) -> None:
        entries: list[_Key] = []
        by_digest: dict[bytes, str] = {}
        for key_id, entry in keys.items():
            if not _KEY_ID.match(key_id):
                raise CredentialsError(
                    f"credentials: key id {key_id[:70]!r} must be 1-64 characters of "
                    "letters, digits and . _ : -"
                )
            digest = _digest(entry.key.get_secret_value())
            if digest in by_digest:
                raise CredentialsError(
                    f"credentials: key ids {by_digest[digest]!r} and {key_id!r} have the same "
                    "key; each caller needs its own"
                )
            by_digest[digest] = key_id
            rate = entry.no_access_per_minute if entry.no_access else None
            entries.append(_Key(key_id, digest, frozenset(entry.labels), rate))
        if not entries:
            raise CredentialsError("credentials: no API key is configured")
        self._keys = tuple(entries)

    @classmethod
    def from_config(cls, config: CredentialsConfig) -> Credentials:
        return cls(config.root)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Credentials:
        try:
            return cls.from_config(CredentialsConfig.model_validate(dict(data)))
        except ValidationError as exc:
            raise CredentialsError(_describe(exc)) from exc

    @classmethod
    def from_json(cls, text: str) -> Credentials:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CredentialsError(f"credentials: not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise CredentialsError(
                f"credentials: expected a JSON object of key id -> {{key, labels}}, "
                f"got {type(data).__name__}"
            )
        return cls.from_mapping(data)

    @classmethod
    def from_file(cls, path: Path) -> Credentials:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CredentialsError(f"credentials file {str(path)!r}: {exc.strerror}") from exc
        try:
            return cls.from_json(text)
        except CredentialsError as exc:
            raise CredentialsError(f"{path}: {exc}") from exc

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(k.key_id for k in self._keys)

    def resolve(self, presented: str) -> Caller:
        """The caller whose key this is; every configured key is compared, always."""
        digest = _digest(presented)
        found: _Key | None = None
        for key in self._keys:
            if hmac.compare_digest(key.digest, digest):
                found = key
        if found is None:
            raise UnknownKey("the API key matches no configured key")
        return found.caller()

    def resolve_id(self, key_id: str) -> Caller:
        """The caller of a key id (not a secret: for eval profiles and reports)."""
        for key in self._keys:
            if key.key_id == key_id:
                return key.caller()
        raise UnknownKey(f"no API key with id {key_id!r}; configured: {list(self.key_ids)}")

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k.key_id}: key='**********' labels={sorted(k.labels)}"
            + ("" if k.no_access_per_minute is None
               else f" no_access={k.no_access_per_minute:g}/min")
            for k in self._keys)
        return f"Credentials({shown})"


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def _describe(exc: ValidationError) -> str:
    return "credentials: " + one_line(exc)
