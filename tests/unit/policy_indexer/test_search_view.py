"""The readable view of `policy-indexer search`: a passage's dates as a person reads them."""

from datetime import date

import pytest

from policy_indexer.commands.search import validity


@pytest.mark.parametrize(
    ("valid_from", "valid_to", "shown"),
    [
        (None, None, "valid on any date"),
        (date(2026, 3, 1), None, "valid from 2026-03-01"),
        (None, date(2026, 3, 31), "valid until 2026-03-31"),
        (date(2026, 3, 1), date(2026, 3, 31), "valid 2026-03-01 to 2026-03-31"),
    ],
)
def test_validity_names_each_end_that_exists(
    valid_from: date | None, valid_to: date | None, shown: str
) -> None:
    assert validity(valid_from, valid_to) == shown
