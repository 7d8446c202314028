from __future__ import annotations

from store.es_requests import batches


def test_bulk_batches_are_cut_by_count_and_by_bytes_and_keep_order() -> None:
    lines = [(str(i), b"x" * size) for i, size in enumerate([10, 10, 10, 50, 10, 10, 10, 10])]
    cut = [[i for i, _ in batch] for batch in batches(lines, max_actions=3, max_bytes=60)]
    assert cut == [["0", "1", "2"], ["3", "4"], ["5", "6", "7"]]
    one_too_big = list(batches([("big", b"y" * 100)], max_actions=3, max_bytes=60))
    assert one_too_big == [[("big", b"y" * 100)]]  # sent alone rather than never
