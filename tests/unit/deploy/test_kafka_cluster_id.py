"""The local Kafka's cluster id: never one the storage tool's parser reads as an option."""

from __future__ import annotations

import re

from devservices.services import new_cluster_id


def test_cluster_ids_are_url_safe_base64_uuids_that_never_start_with_a_dash() -> None:
    # One URL-safe base64 UUID in 64 starts with "-": without the guard, 2,000 draws
    # all passing would happen about once in 10**13.
    ids = [new_cluster_id() for _ in range(2_000)]
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", cluster_id) for cluster_id in ids)
    assert len(set(ids)) == len(ids)
