"""From offsets to Spark tasks: offset ranges, their split, the stream's admission control, data loss.

Pure functions over offsets (no I/O), as Spark's ``KafkaOffsetRangeCalculator`` and the parts of
``KafkaMicroBatchStream`` that decide a micro-batch's end, so that their arithmetic is tested alone.

**Offsets are positions, not record counts.** On a transactional topic a range ``[start, end)``
holds fewer records than ``end - start``: commit and abort markers take an offset each, and under
read_committed the records of aborted transactions are not returned. Those gaps are normal and
never data loss (the reader stops once its position reaches ``end``, whatever the last offsets
hold). So a range's ``size`` is only an estimate of its records - what Spark uses to split ranges
and to share ``maxOffsetsPerTrigger`` between partitions, and what we use the same way.

**Data loss** is an offset the query needed that Kafka no longer has, or can no longer tell:

* a partition new since the last micro-batch whose log does not start at 0 (records were deleted
  before the query saw them);
* a partition that disappeared (its topic was deleted) - the error names it;
* a partition whose offset went backwards (its topic was deleted and created again);
* at read time, a range starting below the partition's log start (retention, DeleteRecords).

Each goes to ``report``: with ``failOnDataLoss=true`` (the default) it raises
:class:`~txnproducer.spark.SourceDataLossError` naming topic, partition and offsets; with false it
is logged (``txn.spark_source_data_loss``) and the query goes on with what Kafka still has, as
Spark's source does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

import attrs
from kafka.structs import TopicPartition

from .offsets import PartitionOffsets, describe

__all__ = ["OffsetRange", "delay_batch", "rate_limit", "split_ranges", "stream_ranges"]

Report = Callable[[str], None]


@attrs.frozen
class OffsetRange:
    """Offsets ``start`` (included) to ``end`` (excluded) of one partition: one Spark task."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        """Offsets in the range (an upper bound of its records: module docstring)."""
        return self.end - self.start

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} [{self.start}, {self.end})"


def ranges_of(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """The non-empty ranges of the partitions both name, in partition order."""
    return [OffsetRange(tp.topic, tp.partition, start[tp], end[tp])
            for tp in sorted(end) if tp in start and end[tp] > start[tp]]


def _pieces(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` in ``parts`` consecutive ranges of (nearly) equal size; the last takes the remainder."""
    out, begin, remaining = [], r.start, r.size
    for part in range(parts):
        size = remaining // (parts - part)
        remaining -= size
        out.append(OffsetRange(r.topic, r.partition, begin, begin + size))
        begin += size
    return [p for p in out if p.size > 0]


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None,
                 max_records_per_partition: int | None) -> list[OffsetRange]:
    """Spark's split: ranges over ``maxRecordsPerPartition`` offsets are cut to that size first;
    then, while there are fewer ranges than ``minPartitions``, the large ranges are cut in
    proportion to their size (a range whose share rounds to one task stays whole) - about
    ``minPartitions`` tasks in all. Empty ranges are dropped."""
    out = [r for r in ranges if r.size > 0]
    if max_records_per_partition is not None:
        out = [p for r in out for p in _pieces(r, math.ceil(r.size / max_records_per_partition))]
    if min_partitions is None or len(out) >= min_partitions:
        return out
    total = sum(r.size for r in out)

    def share(size: int, of: int, parts: int) -> int:
        return max(int(size / of * parts + 0.5), 1)  # Java's Math.round: halves up

    whole = [r for r in out if share(r.size, total, min_partitions) == 1]
    split_total = total - sum(r.size for r in whole)
    split_parts = max(min_partitions - len(whole), 1)
    return [p for r in out
            for p in ([r] if r in whole else _pieces(r, share(r.size, split_total, split_parts)))]


def rate_limit(limit: int, start: Mapping[TopicPartition, int],
               latest: Mapping[TopicPartition, int]) -> PartitionOffsets:
    """``maxOffsetsPerTrigger``: at most ``limit`` offsets in all, shared among the partitions in
    proportion to what each has waiting (Spark's ``rateLimit``: a partition's share rounded down,
    but at least 1 when it has anything waiting, so a small partition is not starved). ``start``
    must hold every partition of ``latest`` (a new partition: its earliest offset)."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if end - start[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = end
            continue
        prorate = limit * (size / total)
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end, start[tp] + step)
    return out


def delay_batch(min_rows: int, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                now_ms: int, last_trigger_ms: int, max_delay_ms: int) -> bool:
    """``minOffsetsPerTrigger``: whether to wait for more (fewer than ``min_rows`` offsets waiting,
    and ``maxTriggerDelay`` not yet passed since the last micro-batch)."""
    if now_ms - last_trigger_ms >= max_delay_ms:
        return False
    waiting = sum(end - start.get(tp, 0) for tp, end in latest.items())
    return waiting < min_rows


def stream_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                  new_starts: Mapping[TopicPartition, int], report: Report) -> list[OffsetRange]:
    """A micro-batch's ranges from its start and end offsets (Spark's
    ``getOffsetRangesFromResolvedOffsets``). ``new_starts``: the earliest offset of each partition
    of ``end`` that ``start`` lacks. Data loss (module docstring) goes to ``report``."""
    gone = sorted(set(start) - set(end))
    if gone:
        report(f"partition(s) {describe(gone)} no longer exist (their topic was deleted?): records of them"
               " the query had not read are lost")
    begin = dict(start)
    for tp in sorted(set(end) - set(start)):
        first = new_starts.get(tp)
        if first is None:
            report(f"new partition {tp.topic}-{tp.partition} disappeared before it could be read")
            continue
        if first != 0:
            report(f"new partition {tp.topic}-{tp.partition} starts at offset {first}, not 0: records below"
                   " it were deleted before the query saw them")
        begin[tp] = first
    for tp in sorted(end):
        if tp in begin and end[tp] < begin[tp]:
            report(f"the offset of {tp.topic}-{tp.partition} went back from {begin[tp]} to {end[tp]}: its"
                   " topic was deleted and created again, or its log truncated; records may be lost")
    return ranges_of(begin, end)
