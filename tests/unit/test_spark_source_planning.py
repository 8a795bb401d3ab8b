"""The txnkafka source's planning (txnproducer/spark/source/planning.py): ranges, their split,
maxOffsetsPerTrigger's share, minOffsetsPerTrigger's wait and what is data loss - Spark's arithmetic,
checked on its own examples where Spark's suite has them."""

from __future__ import annotations

import itertools

import pytest
from kafka.structs import TopicPartition

from txnproducer.spark.source.data_loss import DataLossReport, SourceDataLossError
from txnproducer.spark.source.planning import (
    OffsetRange,
    delay_batch,
    rate_limit,
    split_ranges,
    stream_ranges,
)

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def r(tp: TopicPartition, start: int, end: int) -> OffsetRange:
    return OffsetRange(tp.topic, tp.partition, start, end)


def spans(ranges: list[OffsetRange]) -> list[tuple[str, int, int, int]]:
    return [(x.topic, x.partition, x.start, x.end) for x in ranges]


def test_without_minpartitions_one_task_per_partition_and_empty_ranges_dropped() -> None:
    assert spans(split_ranges([r(A0, 1, 2), r(A1, 5, 5), r(B0, 1, 3)], None, None)) == [
        ("a", 0, 1, 2),
        ("b", 0, 1, 3),
    ]
    assert spans(split_ranges([r(A0, 1, 2), r(B0, 1, 3)], 2, None)) == [("a", 0, 1, 2), ("b", 0, 1, 3)]


def test_minpartitions_splits_large_ranges_in_proportion() -> None:
    # Spark's KafkaOffsetRangeCalculatorSuite: one range of 10,000 offsets, minPartitions 3
    assert spans(split_ranges([r(A0, 1, 10_001)], 3, None)) == [
        ("a", 0, 1, 3334),
        ("a", 0, 3334, 6667),
        ("a", 0, 6667, 10_001),
    ]
    # a small range keeps one task, the large one takes the rest of minPartitions
    assert spans(split_ranges([r(A0, 1, 5), r(A1, 1, 10_001)], 4, None)) == [
        ("a", 0, 1, 5),
        ("a", 1, 1, 3334),
        ("a", 1, 3334, 6667),
        ("a", 1, 6667, 10_001),
    ]


def test_maxrecordsperpartition_cuts_first_then_minpartitions() -> None:
    assert spans(split_ranges([r(A0, 0, 10), r(B0, 0, 3)], None, 4)) == [
        ("a", 0, 0, 3),
        ("a", 0, 3, 6),
        ("a", 0, 6, 10),
        ("b", 0, 0, 3),
    ]
    assert len(split_ranges([r(A0, 0, 10)], 6, 5)) == 6
    one_each = split_ranges([r(A0, 7, 12)], None, 1)
    assert spans(one_each) == [("a", 0, o, o + 1) for o in range(7, 12)], (
        "a range per offset, markers included"
    )


def test_a_split_covers_every_offset_exactly_once() -> None:
    ranges = [r(A0, 3, 1000), r(A1, 0, 17), r(B0, 50, 51)]
    for min_parts in (1, 2, 5, 13, 64):
        for max_records in (None, 1, 7, 400):
            out = split_ranges(ranges, min_parts, max_records)
            for tp, start, end in ((A0, 3, 1000), (A1, 0, 17), (B0, 50, 51)):
                pieces = sorted((x.start, x.end) for x in out if x.tp == tp)
                assert pieces[0][0] == start and pieces[-1][1] == end
                assert all(a[1] == b[0] for a, b in itertools.pairwise(pieces))


def test_rate_limit_shares_in_proportion_and_never_starves_a_small_partition() -> None:
    start = {A0: 0, A1: 0, B0: 100}
    latest = {A0: 1000, A1: 1, B0: 100}
    assert rate_limit(100, start, latest) == {A0: 99, A1: 1, B0: 100}
    assert rate_limit(5000, start, latest) == latest, "more than waiting: everything"
    assert rate_limit(10, {A0: 5}, {A0: 5}) == {A0: 5}


def test_min_offsets_wait_until_the_delay_passed() -> None:
    start, latest = {A0: 0}, {A0: 5}
    assert delay_batch(10, start, latest, now_ms=1000, last_trigger_ms=900, max_delay_ms=60_000)
    assert not delay_batch(5, start, latest, now_ms=1000, last_trigger_ms=900, max_delay_ms=60_000)
    assert not delay_batch(10, start, latest, now_ms=70_000, last_trigger_ms=900, max_delay_ms=60_000)


def test_stream_ranges_read_new_partitions_from_their_start() -> None:
    seen: list[str] = []
    ranges = stream_ranges({A0: 5}, {A0: 9, A1: 4}, {A1: 0}, seen.append)
    assert spans(ranges) == [("a", 0, 5, 9), ("a", 1, 0, 4)] and seen == []


@pytest.mark.parametrize(
    ("start", "end", "new", "words"),
    [
        ({A0: 5, B0: 3}, {A0: 9}, {}, "b-0 no longer exist"),
        ({A0: 5}, {A0: 9, A1: 4}, {A1: 2}, "new partition a-1 starts at offset 2, not 0"),
        ({A0: 5}, {A0: 2}, {}, "the offset of a-0 went back from 5 to 2"),
    ],
)
def test_data_loss_fails_or_is_logged_and_skipped(
    start: dict[TopicPartition, int],
    end: dict[TopicPartition, int],
    new: dict[TopicPartition, int],
    words: str,
) -> None:
    with pytest.raises(SourceDataLossError, match=words) as caught:
        stream_ranges(start, end, new, DataLossReport(fail=True))
    assert "failOnDataLoss to false" in str(caught.value)
    ranges = stream_ranges(start, end, new, DataLossReport(fail=False))
    assert all(x.start < x.end for x in ranges)
    if A0 in end and end[A0] < start.get(A0, 0):
        assert not [x for x in ranges if x.tp == A0], "a partition whose offset went back is not read"


def test_equal_offsets_make_no_task_and_are_no_loss() -> None:
    assert stream_ranges({A0: 5}, {A0: 5}, {}, DataLossReport(fail=True)) == []
