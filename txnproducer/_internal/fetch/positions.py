"""Each assigned partition's position, leader epoch and fetch state (the Java ``SubscriptionState``).

A partition is in one of four states:

- ``INITIALIZING``: assigned, no position yet; the consumer looks up its committed offset (when it
  has a group) or resets it by ``auto_offset_reset``;
- ``AWAIT_RESET``: a ListOffsets (earliest or latest) will give it a position;
- ``AWAIT_VALIDATION``: its leader epoch changed (or it was positioned at a committed offset with an
  epoch); an OffsetForLeaderEpoch must confirm the position is still in the log (KIP-320) before it is
  fetched again;
- ``FETCHING``: it has a position and may be fetched.

The position carries the leader epoch of the record before it (``offset_epoch``: what KIP-320
validation asks about) and the partition the leader epoch the consumer believes current
(``leader_epoch``: sent as ``current_leader_epoch`` so a stale leader or a stale consumer is refused).
An error found for the partition (out of range with no reset policy, a truncated log, a corrupt batch,
an ACL refusal) is kept in ``error`` and raised by ``poll()`` until the application seeks.

Thread rule: the polling thread only.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from typing import Any

from kafka.structs import TopicPartition

__all__ = ["Assignment", "FetchState", "PartitionState", "committed_position"]


class FetchState(enum.Enum):
    INITIALIZING = "initializing"
    AWAIT_RESET = "await_reset"
    AWAIT_VALIDATION = "await_validation"
    FETCHING = "fetching"


class PartitionState:
    """One assigned partition (see the module docstring)."""

    __slots__ = (
        "error",
        "in_flight",
        "leader_epoch",
        "next_try",
        "offset_epoch",
        "paused",
        "position",
        "reset_to",
        "retries",
        "state",
        "tp",
    )

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.state = FetchState.INITIALIZING
        self.position: int | None = None
        self.offset_epoch = -1
        self.leader_epoch = -1
        self.paused = False
        self.reset_to: str | None = None  # "earliest" / "latest" while AWAIT_RESET
        self.error: Exception | None = None
        self.in_flight = False  # a ListOffsets / OffsetForLeaderEpoch is out for it
        self.next_try = 0.0  # monotonic time before which a failed lookup is not retried
        self.retries = 0

    @property
    def fetchable(self) -> bool:
        return self.state is FetchState.FETCHING and not self.paused and self.error is None

    def seek(self, offset: int, offset_epoch: int = -1, *, validate: bool = False) -> None:
        """Move the position; ``validate``: confirm it with OffsetForLeaderEpoch first (an offset from
        a commit carries the epoch of the record before it)."""
        self.position = offset
        self.offset_epoch = offset_epoch
        self.state = FetchState.AWAIT_VALIDATION if validate and offset_epoch >= 0 else FetchState.FETCHING
        self.reset_to = None
        self.error = None
        self.in_flight = False
        self.next_try = 0.0
        self.retries = 0

    def request_reset(self, strategy: str) -> None:
        self.state = FetchState.AWAIT_RESET
        self.reset_to = strategy
        self.error = None
        self.in_flight = False
        self.next_try = 0.0
        self.retries = 0

    def advance(self, offset: int, offset_epoch: int) -> None:
        """Records up to ``offset`` were handed out (or skipped: control batches, aborted data)."""
        self.position = offset
        if offset_epoch >= 0:
            self.offset_epoch = offset_epoch

    def __repr__(self) -> str:
        return (
            f"PartitionState({self.tp.topic}-{self.tp.partition}, {self.state.value}, "
            f"position={self.position}, "
            f"offset_epoch={self.offset_epoch}, leader_epoch={self.leader_epoch}, paused={self.paused})"
        )


class Assignment:
    """The assigned partitions, in assignment order."""

    def __init__(self) -> None:
        self._parts: dict[TopicPartition, PartitionState] = {}

    def assign(
        self, partitions: Iterable[TopicPartition]
    ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """Make ``partitions`` the assignment (kept ones keep their state); (added, removed)."""
        wanted = list(dict.fromkeys(partitions))
        removed = [tp for tp in self._parts if tp not in wanted]
        added = [tp for tp in wanted if tp not in self._parts]
        self._parts = {tp: self._parts.get(tp) or PartitionState(tp) for tp in wanted}
        return added, removed

    def add(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        added = [tp for tp in partitions if tp not in self._parts]
        for tp in added:
            self._parts[tp] = PartitionState(tp)
        return added

    def remove(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        return [tp for tp in partitions if self._parts.pop(tp, None) is not None]

    def get(self, tp: TopicPartition) -> PartitionState | None:
        return self._parts.get(tp)

    def __contains__(self, tp: object) -> bool:
        return tp in self._parts

    def __iter__(self) -> Iterator[PartitionState]:
        return iter(list(self._parts.values()))

    def __len__(self) -> int:
        return len(self._parts)

    def partitions(self) -> list[TopicPartition]:
        return list(self._parts)

    def topics(self) -> set[str]:
        return {tp.topic for tp in self._parts}

    def in_state(self, state: FetchState) -> list[PartitionState]:
        return [p for p in self._parts.values() if p.state is state]


def committed_position(value: Any) -> tuple[int, int] | None:
    """(offset, leader epoch) of a committed offset (OffsetAndMetadata-like, an int, or None)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, -1) if value >= 0 else None
    offset = getattr(value, "offset", -1)
    epoch = getattr(value, "leader_epoch", -1)
    if offset is None or offset < 0:
        return None
    return int(offset), int(epoch if epoch is not None else -1)
