"""What the admin calls return: immutable, typed values (attrs, frozen), one per answer shape.

Why values and not the protocol objects: a caller - a script, a monitoring job, the CLI's ``--json`` -
should not need to know request versions or kafka-python's classes, and a value that cannot change can
be passed around and compared in tests. ``to_dict()`` gives the JSON shape the CLI prints (field names as
here; ``None`` where Kafka has no value, e.g. the start offset of a producer with no open transaction).
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

__all__ = [
    "HangingTransaction",
    "PartitionProducers",
    "ProducerState",
    "TopicPartition",
    "TransactionDescription",
    "TransactionListing",
    "to_jsonable",
]

#: the transaction states a coordinator reports (ListTransactions / DescribeTransactions names)
STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "PrepareEpochFence",
    "Dead",
)
#: states in which a transaction is open (its partitions' last stable offset can be held)
OPEN_STATES = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})


@functools.total_ordering
@attrs.frozen
class TopicPartition:
    """A partition of a topic; ``str()`` is Kafka's ``topic-partition`` spelling."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return (self.topic, self.partition) < (other.topic, other.partition)

    @classmethod
    def parse(cls, text: str) -> TopicPartition:
        """``orders-3`` -> TopicPartition("orders", 3) (topic names may contain ``-``)."""
        topic, sep, number = text.rpartition("-")
        if not sep or not topic or not number.isdigit():
            raise ValueError(f"not a topic-partition: {text!r} (expected e.g. orders-3)")
        return cls(topic, int(number))


@attrs.frozen
class TransactionListing:
    """One transactional id as ListTransactions lists it, with the broker that coordinates it."""

    transactional_id: str
    coordinator_id: int
    producer_id: int
    state: str


@attrs.frozen
class TransactionDescription:
    """A transactional id as its coordinator describes it (DescribeTransactions). ``start_time_ms``
    is None outside a transaction (Kafka answers -1); ``partitions`` are those of the open
    transaction, or those whose markers are still being written while it is being ended (only topics
    the principal may describe are shown)."""

    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int | None
    partitions: tuple[TopicPartition, ...]

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    def duration_ms(self, now_ms: int) -> int | None:
        """How long the current transaction has been running at ``now_ms`` (None outside one)."""
        return None if self.start_time_ms is None else max(0, now_ms - self.start_time_ms)


@attrs.frozen
class ProducerState:
    """A producer's state on one partition, from a replica (DescribeProducers). ``coordinator_epoch``
    is None until a marker was written for it; ``txn_start_offset`` is the first offset of its open
    transaction, None when it has none."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    txn_start_offset: int | None


@attrs.frozen
class PartitionProducers:
    """The active producers of a partition as broker ``broker_id`` (its leader, unless asked otherwise)
    knows them, with the partition's last stable offset and high watermark when they were read
    (ListOffsets on the leader; None when not asked)."""

    partition: TopicPartition
    broker_id: int
    producers: tuple[ProducerState, ...]
    last_stable_offset: int | None = None
    high_watermark: int | None = None

    @property
    def open_transactions(self) -> tuple[ProducerState, ...]:
        return tuple(p for p in self.producers if p.txn_start_offset is not None)

    @property
    def lso_holder(self) -> ProducerState | None:
        """The producer whose open transaction holds the last stable offset below the high watermark:
        its first offset is the LSO (None when nothing holds it back, or the offsets were not read)."""
        lso, hw = self.last_stable_offset, self.high_watermark
        if lso is None or hw is None or lso >= hw:
            return None
        return next((p for p in self.producers if p.txn_start_offset == lso), None)


@attrs.frozen
class HangingTransaction:
    """An open transaction on a partition that its coordinator no longer tracks (``find-hanging``).

    ``reason`` says how that was decided: no transactional id maps to the producer id any more; its
    transactional id is unknown to the coordinator; or the coordinator tracks the id for other
    partitions (or none) - then ``transactional_id`` and ``coordinator_state`` say what it tracks.
    ``duration_ms`` is measured from the producer's last write (its last timestamp) to ``now``."""

    partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int | None
    start_offset: int
    last_timestamp: int
    duration_ms: int
    reason: str
    transactional_id: str | None = None
    coordinator_state: str | None = None


def to_jsonable(value: Any) -> Any:
    """A result (or a list, tuple or dict of them) as plain JSON types; a partition becomes
    ``{"topic": ..., "partition": ...}``."""
    if attrs.has(type(value)):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in attrs.fields(type(value))}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value
