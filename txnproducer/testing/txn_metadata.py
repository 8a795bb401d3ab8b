"""Per-transactional-id state kept by the MockCluster's transaction coordinator.

This mirrors the broker's ``TransactionMetadata``: the producer id and epoch the coordinator handed
out, the previous epoch (so that a retried request whose answer was lost can be recognised), the
previous producer id (for retries across an epoch-overflow rotation), the transaction state machine
and the partitions of the ongoing transaction. The coordinator (``txn_coordinator.py``) decides the
transitions; this module only holds the data and the few rules every transition shares.
"""

from __future__ import annotations

import enum

import attrs

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# Kafka never hands out Short.MAX_VALUE to a client: the coordinator keeps that last epoch to be able
# to fence (TV1) or to write the final marker of an overflowing TV2 transaction.
MAX_EPOCH = 32767

# The internal topic that holds committed offsets; AddOffsetsToTxn / TxnOffsetCommit add one of its
# partitions to the transaction, exactly as the broker does (DescribeTransactions shows it).
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_TOPIC_PARTITIONS = 50  # offsets.topic.num.partitions default


class TxnState(enum.Enum):
    """The broker's transaction states; ``value`` is the name DescribeTransactions/ListTransactions show."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    DEAD = "Dead"

    @classmethod
    def by_name(cls, name: str) -> TxnState | None:
        for state in cls:
            if state.value == name:
                return state
        return None


COMPLETE_STATES = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
PREPARE_STATES = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka's rule: epochs >= Short.MAX_VALUE - 1 cannot be bumped for the client any more."""
    return epoch >= MAX_EPOCH - 1


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` of the JVM (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def offsets_partition_for(group_id: str) -> int:
    """The ``__consumer_offsets`` partition of a group (``Utils.abs(hashCode) % 50``, like the broker)."""
    return (java_string_hash(group_id) & 0x7FFFFFFF) % OFFSETS_TOPIC_PARTITIONS


@attrs.define
class TransactionMetadata:
    """What the coordinator knows about one transactional id (see the module docstring)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    prev_producer_id: int = NO_PRODUCER_ID
    timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    # partitions of the ongoing transaction in the order they were added (DescribeTransactions order)
    partitions: dict[tuple[str, int], None] = attrs.field(factory=dict)
    # consumer groups whose offsets are part of the ongoing transaction (their __consumer_offsets
    # partition is in ``partitions`` too); the markers complete their staged offsets
    groups: dict[str, None] = attrs.field(factory=dict)
    start_time_ms: int = -1
    last_update_ms: int = -1
    # 2 when the transaction was started through a TV2 path (Produce v12+ / TxnOffsetCommit v5 implicit
    # add); decides how a coordinator-side timeout abort treats the epoch, as the broker does
    client_tv: int = 0
    # what the held/pending markers must carry: the producer id and epoch of the transaction being
    # completed (differs from producer_id/producer_epoch after an epoch-overflow rotation)
    marker_producer_id: int = NO_PRODUCER_ID
    marker_producer_epoch: int = NO_PRODUCER_EPOCH
    # TV2 overflow: the producer id the transaction continues under once its markers are written
    next_producer_id: int = NO_PRODUCER_ID
    # hold this transaction's markers (fault injection): EndTxn stops in PrepareCommit/PrepareAbort
    markers_held: bool = False
    # KIP-939: the producer registered with enable_2pc - its transactions never time out
    two_phase: bool = False

    def add_partitions(self, parts: list[tuple[str, int]]) -> None:
        for tp in parts:
            self.partitions.setdefault(tp, None)

    def topics_view(self) -> list[tuple[str, list[int]]]:
        """The partitions grouped by topic, in first-added order (DescribeTransactions' shape)."""
        grouped: dict[str, list[int]] = {}
        for topic, partition in self.partitions:
            grouped.setdefault(topic, []).append(partition)
        return list(grouped.items())

    def begin_if_idle(self, now_ms: int, client_tv: int) -> None:
        """An add to an idle transactional id starts a new transaction (state Ongoing, start time now)."""
        if self.state in COMPLETE_STATES:
            self.state = TxnState.ONGOING
            self.start_time_ms = now_ms
            self.partitions.clear()
            self.groups.clear()
            self.client_tv = client_tv
        self.last_update_ms = now_ms
