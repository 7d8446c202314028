"""The ``Policy-Signature`` header: HMAC-SHA256 over the timestamp and the raw body.

The header has the form payment and CMS webhooks use::

    Policy-Signature: t=1764446400,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff...

``v1`` is ``hex(HMAC-SHA256(secret, f"{t}.".encode() + raw_body))``. A header may
carry several ``v1`` entries (one per secret the sender holds during a
rotation); the request is authentic when any of them matches any configured
secret. Comparisons are constant-time (``hmac.compare_digest``). A timestamp
further than the tolerance from now, in either direction, is refused so that a
captured request cannot be replayed later.

Errors::

    SignatureError
    ├── MissingSignature      no header
    ├── MalformedSignature    header present but not t=<int>,v1=<64 hex>
    ├── StaleTimestamp        timestamp outside the tolerance
    └── SignatureMismatch     no v1 matches any secret
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass

HEADER = "Policy-Signature"
SCHEME = "v1"
_HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# A header is a short list; anything longer is not a signature we sent.
_MAX_HEADER_CHARS = 2048


class SignatureError(Exception):
    """The request is not proven to come from a holder of a configured secret."""

    reason = "invalid"


class MissingSignature(SignatureError):
    reason = "missing"


class MalformedSignature(SignatureError):
    reason = "malformed"


class StaleTimestamp(SignatureError):
    reason = "stale"


class SignatureMismatch(SignatureError):
    reason = "mismatch"


@dataclass(frozen=True)
class ParsedSignature:
    timestamp: int
    signatures: tuple[str, ...]


def compute(secret: bytes, timestamp: int, body: bytes) -> str:
    """The hex ``v1`` signature of ``body`` sent at ``timestamp`` (unix seconds)."""
    mac = hmac.new(secret, f"{timestamp}.".encode("ascii"), hashlib.sha256)
    mac.update(body)
    return mac.hexdigest()


def sign(secrets: Sequence[bytes], timestamp: int, body: bytes) -> str:
    """The full header value, with one ``v1`` per secret (what the CMS sends)."""
    parts = [f"t={timestamp}"] + [f"{SCHEME}={compute(s, timestamp, body)}" for s in secrets]
    return ",".join(parts)


def parse(header: str | None) -> ParsedSignature:
    """Split the header into its timestamp and ``v1`` signatures; unknown schemes are ignored."""
    if header is None or not header.strip():
        raise MissingSignature(f"no {HEADER} header")
    if len(header) > _MAX_HEADER_CHARS:
        raise MalformedSignature(f"{HEADER} header is {len(header)} characters long")
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            raise MalformedSignature(f"{HEADER} item {key[:20]!r} has no '='")
        if key == "t":
            if timestamp is not None or not value.isascii() or not value.isdigit():
                raise MalformedSignature(
                    f"{HEADER} needs exactly one integer t=, got {value[:20]!r}"
                )
            timestamp = int(value)
        elif key == SCHEME:
            if not _HEX_SHA256.match(value):
                raise MalformedSignature(f"{HEADER} {SCHEME}= is not 64 lowercase hex characters")
            signatures.append(value)
    if timestamp is None:
        raise MalformedSignature(f"{HEADER} has no t= timestamp")
    if not signatures:
        raise MalformedSignature(f"{HEADER} has no {SCHEME}= signature")
    return ParsedSignature(timestamp, tuple(signatures))


def check_timestamp(parsed: ParsedSignature, now: float, tolerance_seconds: float) -> None:
    """Refuse a timestamp further than the tolerance from ``now``: a replay, or a bad clock."""
    age = now - parsed.timestamp
    if abs(age) > tolerance_seconds:
        raise StaleTimestamp(
            f"{HEADER} timestamp t={parsed.timestamp} is {age:.0f}s from now; "
            f"the tolerance is {tolerance_seconds:.0f}s"
        )


def verify(parsed: ParsedSignature, body: bytes, secrets: Sequence[bytes]) -> int:
    """Return the index of the secret that signed ``body``; raise ``SignatureMismatch``.

    Every (secret, signature) pair is compared, so the time taken does not tell
    which secret or which position matched.
    """
    matched = -1
    for index, secret in enumerate(secrets):
        expected = compute(secret, parsed.timestamp, body)
        for candidate in parsed.signatures:
            if hmac.compare_digest(expected, candidate) and matched < 0:
                matched = index
    if matched < 0:
        raise SignatureMismatch(f"no {SCHEME} signature in {HEADER} matches a configured secret")
    return matched
