"""The Policy-Signature header: who may send, and for how long a signature holds."""

from __future__ import annotations

import pytest

from webhooks import signature

SECRET = b"whsec_0123456789abcdef"
OTHER = b"whsec_fedcba9876543210"
BODY = b'{"a":1}'


def test_signature_matches_an_independent_hmac_sha256() -> None:
    # printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac 'whsec_0123456789abcdef'
    expected = "9f5e37cdc7ea587c7c02062d93283cad000d66a831b2a1676418696db47ed6c2"
    assert signature.compute(SECRET, 1_700_000_000, BODY) == expected
    assert signature.sign([SECRET], 1_700_000_000, BODY) == f"t=1700000000,v1={expected}"


def test_either_of_two_secrets_verifies_and_the_matching_one_is_named() -> None:
    for index, secret in enumerate((SECRET, OTHER)):
        parsed = signature.parse(signature.sign([secret], 1_700_000_000, BODY))
        assert signature.verify(parsed, BODY, (SECRET, OTHER)) == index


def test_a_header_signed_with_both_secrets_verifies_against_either() -> None:
    parsed = signature.parse(signature.sign([OTHER, SECRET], 1_700_000_000, BODY))
    assert signature.verify(parsed, BODY, (SECRET,)) == 0


@pytest.mark.parametrize(
    ("secrets", "body", "timestamp"),
    [
        ((OTHER,), BODY, 1_700_000_000),  # unknown secret
        ((SECRET,), b'{"a":2}', 1_700_000_000),  # body changed after signing
        ((SECRET,), BODY + b" ", 1_700_000_000),  # one byte added
        ((SECRET,), BODY, 1_700_000_001),  # timestamp changed after signing
    ],
)
def test_anything_changed_after_signing_is_a_mismatch(
    secrets: tuple[bytes, ...], body: bytes, timestamp: int
) -> None:
    header = signature.sign([SECRET], 1_700_000_000, BODY)
    parsed = signature.parse(header.replace("t=1700000000", f"t={timestamp}"))
    with pytest.raises(signature.SignatureMismatch):
        signature.verify(parsed, body, secrets)


@pytest.mark.parametrize("header", [None, "", "   "])
def test_no_header_is_missing(header: str | None) -> None:
    with pytest.raises(signature.MissingSignature):
        signature.parse(header)


HEX = "a" * 64


@pytest.mark.parametrize(
    "header",
    [
        f"v1={HEX}",  # no timestamp
        "t=1700000000",  # no signature
        f"t=1700000000,t=1700000001,v1={HEX}",  # two timestamps
        f"t=-5,v1={HEX}",
        f"t=soon,v1={HEX}",
        f"t=1700000000,v1={HEX[:-1]}",  # too short
        f"t=1700000000,v1={HEX.upper()}",
        f"t=1700000000,v1={HEX},garbage",
        f"t=1700000000,v0={HEX}",  # only an unknown scheme
        "t=1," + ",".join([f"v1={HEX}"] * 40),  # absurdly long
    ],
)
def test_malformed_headers_are_refused_before_any_hmac(header: str) -> None:
    with pytest.raises(signature.MalformedSignature):
        signature.parse(header)


def test_unknown_schemes_beside_v1_are_ignored() -> None:
    header = signature.sign([SECRET], 1_700_000_000, BODY) + f",v0={HEX}"
    parsed = signature.parse(header)
    assert signature.verify(parsed, BODY, (SECRET,)) == 0


@pytest.mark.parametrize("offset", [-301, 301, -86_400])
def test_timestamps_outside_the_tolerance_are_stale(offset: int) -> None:
    parsed = signature.parse(signature.sign([SECRET], 1_700_000_000, BODY))
    with pytest.raises(signature.StaleTimestamp, match="tolerance is 300s"):
        signature.check_timestamp(parsed, 1_700_000_000 - offset, 300)


@pytest.mark.parametrize("offset", [-300, 0, 300])
def test_timestamps_within_the_tolerance_pass(offset: int) -> None:
    parsed = signature.parse(signature.sign([SECRET], 1_700_000_000, BODY))
    signature.check_timestamp(parsed, 1_700_000_000 + offset, 300)
