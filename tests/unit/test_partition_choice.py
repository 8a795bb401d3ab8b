"""Partition membership: O(1) for Kafka's 0..n-1 ids, still right for any other id list."""

from __future__ import annotations

from txnproducer.producer import _known_partition


def test_contiguous_ids() -> None:
    parts = list(range(1000))
    assert _known_partition(parts, 0) and _known_partition(parts, 999)
    assert not _known_partition(parts, 1000)
    assert not _known_partition(parts, -1)  # a negative index must not wrap around


def test_ids_with_gaps_fall_back_to_membership() -> None:
    parts = [0, 2, 5]
    assert _known_partition(parts, 2) and _known_partition(parts, 5)
    assert not _known_partition(parts, 1)
    assert not _known_partition(parts, 3)
