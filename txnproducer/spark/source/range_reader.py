"""One Spark task's read: the records of an offset range, from a consumer positioned by assign + seek.

Why the position decides, not the records: a range ``[start, end)`` ends where the driver saw the
partition end - under read_committed its last stable offset, often the offset right after a commit
marker - and on a transactional topic the last offsets before ``end`` may hold no record at all (a
marker, aborted records). A reader that waited for the record at ``end - 1`` would wait forever
(Spark needed SPARK-25005 for this; Hudi and Pinot failed on it). So the task polls until the
consumer's *position* reaches ``end``: the consumer moves it past markers and aborted records itself
(and ``poll`` returns at once when that is all an answer held), so a range of markers only, or of
aborted records only, ends as soon as the consumer has read past them. Records at or past ``end`` -
fetched along with the last ones - are cut off; the next micro-batch reads them.

Bounds and errors:

* no progress (the position does not move) for ``kafkaConsumer.pollTimeoutMs`` (120 s): a
  :class:`~txnproducer.TimeoutError` naming the partition, the position and the end - an open
  transaction below ``end`` (only with endingOffsets past the last stable offset), a leader that
  does not answer, or a log truncated below ``end``;
* the start below the partition's log start (records deleted by retention or DeleteRecords), or
  past its end (the topic re-created): data loss, reported as ``failOnDataLoss`` says
  (:mod:`.data_loss`); without failing, the read goes on from the log start, or ends;
* what the consumer raises for the partition passes through, typed: no READ permission
  (:class:`~txnproducer.TopicAuthorizationError`), a corrupt batch, an authentication failure.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterator

from ...consumer import PartitionBatch, TransactionalConsumer
from ...errors import OffsetOutOfRangeError, TimeoutError, TxnProducerError
from .data_loss import DataLossReport
from .planning import OffsetRange

__all__ = ["read_range"]

_POLL_S = 1.0  # one poll's wait; progress is checked between polls
_MAX_RECORDS = 1_000_000  # records of one poll: a fetch answer's worth is what comes


def _seek(consumer: TransactionalConsumer, r: OffsetRange) -> None:
    """Assign the range's partition alone and put the position at its start - unless it is there
    already (a kept consumer that read the previous range of the partition: its fetched-ahead
    records are still good)."""
    tp = r.tp
    kept = tp in consumer.assignment()
    consumer.assign([tp])
    if kept:
        try:
            if consumer.position(tp, timeout=0) == r.start:
                return
        except TxnProducerError:
            pass  # no usable position (an error kept for the partition): seek
    consumer.seek(tp, r.start)


def _out_of_range(consumer: TransactionalConsumer, r: OffsetRange, position: int, report: DataLossReport,
                  timeout_s: float) -> int:
    """OFFSET_OUT_OF_RANGE at ``position``: find where the log is now, report the loss, and return
    the position to go on from (``r.end``: nothing left of the range)."""
    tp = r.tp
    consumer.seek_to_beginning([tp])
    log_start = consumer.position(tp, timeout_s)
    if log_start > position:
        lost_to = min(log_start, r.end)
        report(f"offsets {position} to {lost_to - 1} of {r} were deleted (the log of"
               f" {tp.topic}-{tp.partition}"
               f" starts at {log_start}) before the query read them")
        if log_start >= r.end:
            return r.end
        return log_start
    consumer.seek_to_end([tp])
    log_end = consumer.position(tp, timeout_s)
    report(f"offset {position} of {r} is past the end of the log of {tp.topic}-{tp.partition} ({log_end}):"
           f" its topic was re-created or its log truncated; offsets {position} to {r.end - 1} are lost")
    return r.end


def read_range(consumer: TransactionalConsumer, r: OffsetRange, report: DataLossReport,
               poll_timeout_s: float) -> Iterator[PartitionBatch]:
    """The records of ``r`` as column batches, in offset order (module docstring)."""
    tp = r.tp
    _seek(consumer, r)
    position = r.start
    progress_at = time.monotonic()
    while position < r.end:
        try:
            chunks = consumer.poll_batch(min(_POLL_S, poll_timeout_s),
                                         max_records=min(r.end - position, _MAX_RECORDS))
        except OffsetOutOfRangeError:
            position = _out_of_range(consumer, r, position, report, poll_timeout_s)
            if position < r.end:
                consumer.seek(tp, position)
            progress_at = time.monotonic()
            continue
        for chunk in chunks:
            n = bisect.bisect_left(chunk.offsets, r.end)
            if n:
                yield chunk if n == len(chunk) else chunk.slice(0, n)
        now = time.monotonic()
        moved = consumer.position(tp, poll_timeout_s)
        if moved > position:
            position, progress_at = moved, now
        elif now - progress_at >= poll_timeout_s:
            raise TimeoutError(
                f"txnkafka source: reading {r}, the position of {tp.topic}-{tp.partition} stayed at"
                f" {position}"
                f" for {poll_timeout_s:g} s (kafkaConsumer.pollTimeoutMs) short of the range's end {r.end}:"
                " an open transaction holds the partition there (read_committed reads up to the last stable"
                " offset), its leader did not answer, or its log was truncated below the end"
            )
