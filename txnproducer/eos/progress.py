"""What the open transaction of a consume-transform-produce loop has consumed.

Why it is tracked: the offsets committed with the transaction are the *next* offsets after the
last record of each partition it consumed, and when the transaction aborts the consumer must be
put back where the transaction started on each partition (otherwise those records would be
skipped: lost) - at the group's committed offset, or, where the group has none, at the first
offset this transaction consumed, which is remembered here. Records arrive by partition
(``TransactionalConsumer.poll_by_partition``), so the work here is per partition, not per record.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from kafka.structs import OffsetAndMetadata, TopicPartition

__all__ = ["METRIC_NAMES", "TxnProgress"]

#: the counters TransactionalProcessor.metrics() reports
METRIC_NAMES = (
    "transactions_committed",
    "transactions_aborted",
    "aborts_on_revocation",
    "aborts_on_error",
    "commits_on_revocation",
    "records_polled",
    "records_in",
    "records_out",
    "rebalances",
)


class TxnProgress:
    """Per-partition start and next offsets of one transaction, plus its size and age."""

    def __init__(self) -> None:
        self.start: dict[TopicPartition, int] = {}
        self._next: dict[TopicPartition, tuple[int, int]] = {}  # tp -> (next offset, leader epoch)
        self.records_in = 0
        self.records_out = 0
        self.started_at: float | None = None

    @property
    def open(self) -> bool:
        """A transaction was begun and has not ended (committed or aborted) yet."""
        return self.started_at is not None

    def begin(self) -> None:
        self.reset()
        self.started_at = time.monotonic()

    def reset(self) -> None:
        """Forget everything (after commit or abort)."""
        self.start.clear()
        self._next.clear()
        self.records_in = 0
        self.records_out = 0
        self.started_at = None

    def age_ms(self) -> float:
        return 0.0 if self.started_at is None else (time.monotonic() - self.started_at) * 1000

    def consumed(self, polled: Mapping[TopicPartition, Sequence[Any]]) -> int:
        """Note a poll's records (partition -> its records in offset order); returns how many."""
        count = 0
        start, nxt = self.start, self._next
        for tp, records in polled.items():
            if not records:
                continue
            if tp not in start:
                start[tp] = int(records[0].offset)
            last = records[-1]
            epoch = getattr(last, "leader_epoch", None)
            nxt[tp] = (int(last.offset) + 1, -1 if epoch is None else int(epoch))
            count += len(records)
        self.records_in += count
        return count

    def consumed_batches(self, batches: Sequence[Any]) -> int:
        """Note a ``poll_batch``'s PartitionBatches (one partition chunk each); returns how many records."""
        count = 0
        start, nxt = self.start, self._next
        for batch in batches:
            n = len(batch)
            if not n:
                continue
            tp = TopicPartition(batch.topic, batch.partition)
            if tp not in start:
                start[tp] = int(batch.offsets[0])
            nxt[tp] = (int(batch.offsets[n - 1]) + 1, int(batch.leader_epochs[n - 1]))
            count += n
        self.records_in += count
        return count

    def next_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offsets to commit with the transaction: one past the last consumed record."""
        return {tp: OffsetAndMetadata(offset, "", epoch) for tp, (offset, epoch) in self._next.items()}

    def partitions(self) -> set[TopicPartition]:
        return set(self.start)
