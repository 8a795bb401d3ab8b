"""The membership facts both of a member's threads read and change, under one condition.

Why one object: the polling thread (joins, hooks, offsets) and the IO thread (answers, heartbeats)
decide from the same few facts - the member's state, its generation and member id, whether it must
rejoin, where the coordinator is, a fatal error - and the Java client's rules for them
(``AbstractCoordinator``: ``resetStateAndGeneration``, ``requestRejoin``, ``markCoordinatorUnknown``)
are easiest to keep right in one place. Every method is called with :attr:`GroupState.cond` held
(it is re-entrant); waiting threads are woken by :meth:`GroupState.changed`.

:class:`CoordinatedState` holds what every member shares whichever protocol it speaks - the
condition, the coordinator, a fatal error, closing - and is what the coordinator link
(``coordinator.py``) and the waits (``waits.py``) work on; :class:`GroupState` adds the classic
protocol's facts, ``kip848/state.py`` the consumer protocol's.
"""

from __future__ import annotations

import enum
import threading

import attrs

__all__ = ["NO_GENERATION", "CoordinatedState", "Coordinator", "Generation", "GroupState", "MemberState"]


class MemberState(enum.Enum):
    """Java's ``AbstractCoordinator.MemberState``."""

    UNJOINED = "unjoined"  # not part of a group generation
    PREPARING_REBALANCE = "preparing_rebalance"  # JoinGroup sent, no answer yet
    COMPLETING_REBALANCE = "completing_rebalance"  # joined, waiting for the assignment (SyncGroup)
    STABLE = "stable"  # joined and heartbeating

    @property
    def has_not_joined(self) -> bool:
        return self in (MemberState.UNJOINED, MemberState.PREPARING_REBALANCE)


@attrs.frozen
class Generation:
    """The generation this member joined: the fencing identity of its offset commits (KIP-447)."""

    generation_id: int
    member_id: str
    protocol_name: str | None

    @property
    def has_member_id(self) -> bool:
        return bool(self.member_id)

    @property
    def is_reset(self) -> bool:
        """Java's ``hasGenerationReset``: the member id may survive ILLEGAL_GENERATION."""
        return self.generation_id == -1 and self.protocol_name is None

    @property
    def is_lost(self) -> bool:
        """No generation or no member id: whatever was owned is lost, not revoked."""
        return self.generation_id == -1 or not self.member_id


NO_GENERATION = Generation(-1, "", None)


@attrs.frozen
class Coordinator:
    node_id: int
    host: str
    port: int


class CoordinatedState:
    """What a member of either protocol shares between its threads: the condition every wait waits
    on, the coordinator, a fatal error and closing. Attributes are read and written with ``cond``
    held (it is re-entrant)."""

    def __init__(self) -> None:
        self.cond = threading.Condition(threading.RLock())
        self.coordinator: Coordinator | None = None
        self.fatal: BaseException | None = None
        self.closed = False
        self.version = 0  # bumped by every change a waiting thread may be waiting for

    def changed(self) -> None:
        self.version += 1
        self.cond.notify_all()

    def mark_coordinator_unknown(self) -> Coordinator | None:
        """Forget the coordinator; returns the one forgotten (its connection should be dropped, so
        that nothing more waits on it)."""
        old, self.coordinator = self.coordinator, None
        if old is not None:
            self.changed()
        return old

    def fail(self, exc: BaseException) -> None:
        """A fatal error: the polling thread raises it from its next call."""
        if self.fatal is None:
            self.fatal = exc
        self.changed()


class GroupState(CoordinatedState):
    """The classic protocol's facts (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.rejoin_needed = True
        self.rejoin_reason = ""
        # the revoke/lost hook must run before the next JoinGroup (Java's needsJoinPrepare)
        self.needs_join_prepare = True

    def request_rejoin(self, reason: str) -> None:
        self.rejoin_reason = reason
        self.rejoin_needed = True
        self.changed()

    def reset_state_and_generation(self, reset_member_id: bool) -> None:
        """Out of the group: UNJOINED, no generation. ILLEGAL_GENERATION keeps the member id (it is
        still valid: rejoining with it spares the group waiting for the old id to time out)."""
        self.state = MemberState.UNJOINED
        if reset_member_id:
            self.generation = NO_GENERATION
        else:
            self.generation = Generation(-1, self.generation.member_id, None)
        self.changed()

    def reset_state_and_rejoin(self, reason: str, reset_member_id: bool) -> None:
        self.reset_state_and_generation(reset_member_id)
        self.request_rejoin(reason)
        self.needs_join_prepare = True

    def generation_unchanged(self, sent: Generation) -> bool:
        return self.generation == sent
