"""Committed and pending (transactional) consumer-group offsets of the MockCluster.

Separate from the membership logic because offsets outlive members and are written by two
parties: OffsetCommit (immediately visible) and the transaction coordinator (TxnOffsetCommit
stages offsets per producer id; the EndTxn marker makes them visible or drops them), exactly the
split Kafka keeps between a group's committed offsets and its pending transactional offsets.
"""

from __future__ import annotations

import attrs

TopicPartitionKey = tuple[str, int]


@attrs.frozen
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@attrs.define
class GroupOffsets:
    """All offsets of one group."""

    committed: dict[TopicPartitionKey, CommittedOffset] = attrs.Factory(dict)
    # producer id -> staged offsets of its ongoing transaction
    pending: dict[int, dict[TopicPartitionKey, CommittedOffset]] = attrs.Factory(dict)

    def commit(self, tp: TopicPartitionKey, value: CommittedOffset) -> None:
        self.committed[tp] = value

    def stage(self, producer_id: int, tp: TopicPartitionKey, value: CommittedOffset) -> None:
        self.pending.setdefault(producer_id, {})[tp] = value

    def complete(self, producer_id: int, commit: bool) -> None:
        staged = self.pending.pop(producer_id, {})
        if commit:
            self.committed.update(staged)

    def has_pending(self, tp: TopicPartitionKey) -> bool:
        return any(tp in staged for staged in self.pending.values())
