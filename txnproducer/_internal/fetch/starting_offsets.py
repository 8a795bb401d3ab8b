"""Where an assigned partition without a position starts: its committed offset, else ``auto_offset_reset``.

Why apart from the consumer facade: the rule has three parts that must agree wherever a position is
found (``poll``, ``position``, ``seek_to_committed``) - the committed offset comes with the leader epoch
to validate it by (KIP-320), a partition without one is reset by the policy, and ``"none"`` keeps an
OffsetOutOfRangeError on the partition until the application seeks.

And one rule of its own: the lookup must not stall the partitions already being read. A newly
assigned partition's committed offset may be unreadable for a while - the previous owner's
transaction has not completed (UNSTABLE_OFFSET_COMMIT, KIP-447), the coordinator moved - and, with the
consumer group protocol, partitions are assigned one at a time while the others flow. So while some
partition is being fetched, the lookup only asks (``timeout`` 0: the answer, or its retry, is taken by
a later poll); only a consumer with nothing else to read waits for it, within its poll's timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kafka.structs import TopicPartition

from txnproducer import errors

from .positions import Assignment, FetchState, PartitionState, committed_position

__all__ = ["CommittedSource", "StartingOffsets"]

#: (partitions, timeout s) -> {tp: committed offset (an OffsetAndMetadata, a CommittedOffset, an int)}
CommittedSource = Callable[[list[TopicPartition], float], Mapping[TopicPartition, Any]]


class StartingOffsets:
    """See the module docstring (polling thread only)."""

    def __init__(self, assignment: Assignment, auto_offset_reset: str, committed: CommittedSource) -> None:
        self._assignment = assignment
        self._reset = auto_offset_reset
        self._committed = committed

    def initialize(self, deadline: float) -> None:
        """Give the INITIALIZING partitions a position, or leave them waiting for their committed
        offsets (blocking until ``deadline`` only while no other partition is being fetched)."""
        initializing = self._assignment.in_state(FetchState.INITIALIZING)
        if not initializing:
            return
        flowing = any(s.state is FetchState.FETCHING for s in self._assignment)
        timeout = 0.0 if flowing else max(0.0, deadline - time.monotonic())
        try:
            committed = self._committed([s.tp for s in initializing], timeout)
        except errors.TimeoutError:
            # not known yet (no coordinator, a pending transaction's offsets, a slow answer): the
            # partitions wait, unfetched, and the lookup goes on at the next poll
            return
        self.place(initializing, committed)

    def place(self, states: list[PartitionState], committed: Mapping[TopicPartition, Any]) -> None:
        """Position ``states`` at their committed offsets (validated against the leader's epoch), or
        by the reset policy where nothing is committed."""
        for state in states:
            found = committed_position(committed.get(state.tp))
            if found is not None:
                state.seek(found[0], found[1], validate=True)
            else:
                self.reset_or_keep(state)

    def reset_or_keep(self, state: PartitionState) -> None:
        """``auto_offset_reset``: earliest or latest is looked up; "none" keeps an error on the
        partition until the application seeks it."""
        if self._reset == "none":
            tp = state.tp
            state.error = errors.OffsetOutOfRangeError(
                f"{tp.topic}-{tp.partition} has no committed offset and auto_offset_reset is 'none': "
                "seek() it (or seek_to_beginning / seek_to_end) and poll again", offsets={tp: -1})
            state.state = FetchState.AWAIT_RESET
            return
        state.request_reset(self._reset)
