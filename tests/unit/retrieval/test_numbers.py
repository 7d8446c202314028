"""The numbers of a claim, compared with a clause's as values (``retrieval.numbers``)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from retrieval.numbers import missing_numbers, numbers_in


@pytest.mark.parametrize(("text", "values"), [
    ("within 14 days", ["14"]),
    ("within fourteen days", ["14"]),
    ("twenty-one or twenty one", ["21", "21"]),
    ("one hundred", ["100"]),
    ("a hundred and five euros", ["105"]),
    ("two thousand and ten", ["2010"]),
    ("ninety-nine percent", ["99"]),
    ("$1,000.50 and 50%", ["1000.5", "50"]),
    ("20.00 EUR", ["20"]),
    ("one and two", ["1", "2"]),
    ("codes MT103 and v8, section 4.2a", []),
    ("on 1 March 2027", ["1", "2027"]),
    ("no number here", []),
])
def test_numbers_as_values(text: str, values: list[str]) -> None:
    assert [n.value for n in numbers_in(text)] == [Decimal(v) for v in values]


@pytest.mark.parametrize(("claim", "clause", "missing"), [
    ("within 30 days", "Refunds within 14 days.", ["30"]),
    ("within fourteen days", "Refunds within 14 days.", []),
    ("within 14 days", "Refunds within fourteen days.", []),
    ("within two weeks", "Refunds within 14 days.", []),
    ("within 14 days", "Refunds within 2 weeks.", []),
    ("50 percent off", "a discount of 50%", []),
    ("$20 fee", "a fee of 20.00 USD", []),
    ("1,000 points", "1000 points", []),
    ("3 days", "a week", ["3"]),
])
def test_missing_numbers(claim: str, clause: str, missing: list[str]) -> None:
    assert [n.text for n in missing_numbers(claim, clause)] == missing
