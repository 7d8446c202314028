"""Fixtures for the receiver's unit tests."""

from __future__ import annotations

import pytest
from support.webhook_helpers import MemoryPublisher


@pytest.fixture
def publisher() -> MemoryPublisher:
    return MemoryPublisher()
