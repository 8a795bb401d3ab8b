"""The consumer-protocol member's facts, shared by its polling thread and its IO thread, and the
state machine they move through.

Why Java's states: :class:`MemberState` is the Java client's (``MemberState`` of
``AbstractMembershipManager``), with its table of valid transitions checked in one place
(:meth:`MemberFacts.transition`): a member that joins (JOINING), reconciles a new assignment on the
polling thread (RECONCILING: revoke first, then assign), acknowledges it on the next heartbeat
(ACKNOWLEDGING), then is STABLE; FENCED when the coordinator no longer knows its epoch (its
partitions are lost, it rejoins with epoch 0), STALE after it left because its polling thread did not
poll within ``max_poll_interval_ms``, PREPARE_LEAVING / LEAVING while it closes, FATAL for good.

:class:`LocalAssignment` is what an assignment is to the member: partitions by topic id with a local
epoch, bumped with every new target, so that the same partitions received twice are still two
assignments to acknowledge. Every attribute of :class:`MemberFacts` is read and written with
``cond`` held.
"""

from __future__ import annotations

import base64
import enum
import uuid
from collections.abc import Mapping

import attrs

from ..state import CoordinatedState

__all__ = ["NONE", "LocalAssignment", "MemberFacts", "MemberState", "new_member_id"]


class MemberState(enum.Enum):
    """Java's ``MemberState`` (consumer protocol)."""

    UNSUBSCRIBED = "unsubscribed"  # not in the group and not trying to be
    JOINING = "joining"  # the next heartbeat joins (epoch 0, every field)
    RECONCILING = "reconciling"  # a target assignment differs from the current one
    ACKNOWLEDGING = "acknowledging"  # reconciled: the next heartbeat (at once) lists the partitions owned
    STABLE = "stable"  # in the group, assignment reconciled and acknowledged
    FENCED = "fenced"  # the coordinator fenced the epoch: partitions lost, then JOINING
    PREPARE_LEAVING = "prepare_leaving"  # closing: the revoke hook runs
    LEAVING = "leaving"  # the next heartbeat leaves (epoch -1 or -2)
    FATAL = "fatal"  # an error no retry can fix
    STALE = "stale"  # left after max_poll_interval_ms without poll; rejoins at the next poll

    @property
    def in_group(self) -> bool:
        """Java's ``!isNotInGroup()``: the coordinator may count this member."""
        return self not in _NOT_IN_GROUP

    @property
    def can_take_assignment(self) -> bool:
        """Java's ``canHandleNewAssignment``."""
        return self in (MemberState.JOINING, MemberState.RECONCILING, MemberState.ACKNOWLEDGING,
                        MemberState.STABLE)


_NOT_IN_GROUP = frozenset({MemberState.UNSUBSCRIBED, MemberState.FENCED, MemberState.FATAL,
                           MemberState.STALE})
_S = MemberState
#: next state -> the states it may be entered from (Java's ``MemberState.getPreviousValidStates``)
_VALID_FROM: dict[MemberState, frozenset[MemberState]] = {
    _S.STABLE: frozenset({_S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
    _S.RECONCILING: frozenset({_S.STABLE, _S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
    _S.ACKNOWLEDGING: frozenset({_S.RECONCILING}),
    _S.FATAL: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.PREPARE_LEAVING,
                         _S.LEAVING, _S.UNSUBSCRIBED, _S.FENCED, _S.STALE}),
    _S.FENCED: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING}),
    _S.JOINING: frozenset({_S.FENCED, _S.UNSUBSCRIBED, _S.STALE}),
    _S.PREPARE_LEAVING: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.UNSUBSCRIBED}),
    _S.LEAVING: frozenset({_S.PREPARE_LEAVING}),
    _S.UNSUBSCRIBED: frozenset({_S.PREPARE_LEAVING, _S.LEAVING, _S.FENCED}),
    _S.STALE: frozenset({_S.LEAVING}),
}


def new_member_id() -> str:
    """A member id as the Java client makes it at startup (``Uuid.randomUuid().toString()``: 22
    URL-safe base64 characters), kept for the member's lifetime (KIP-1082)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@attrs.frozen
class LocalAssignment:
    """Partitions by topic id, with the local epoch that tells two assignments apart (-1: none)."""

    local_epoch: int
    partitions: Mapping[uuid.UUID, frozenset[int]]

    @property
    def is_none(self) -> bool:
        return self.local_epoch == -1

    def updated_with(self, partitions: Mapping[uuid.UUID, frozenset[int]]) -> LocalAssignment | None:
        """The next target when ``partitions`` arrive (None: the same as this one, nothing new)."""
        if not self.is_none and dict(partitions) == dict(self.partitions):
            return None
        return LocalAssignment(self.local_epoch + 1, dict(partitions))


NONE = LocalAssignment(-1, {})


class MemberFacts(CoordinatedState):
    """See the module docstring."""

    def __init__(self, member_id: str) -> None:
        super().__init__()
        self.member_id = member_id
        self.epoch = 0
        self.state = MemberState.UNSUBSCRIBED
        self.current = NONE  # reconciled (and acknowledged, or about to be)
        self.target = NONE  # the coordinator's last assignment
        self.heartbeat_interval_s = 0.0  # the coordinator's (0 until its first answer)
        self.poll_expired = False  # Java's isPollTimerExpired: LEAVING leads to STALE
        self.leave_first = False  # a join was fenced: the member is still in the group, leave it first
        self.leaves_answered = 0  # leave heartbeats answered or failed (close waits for one)
        self.names: dict[uuid.UUID, str] = {}  # topic names by id, from Metadata and past assignments
        self.unresolved: frozenset[uuid.UUID] = frozenset()  # ids of the target nobody named yet
        self.reconciling = False  # the polling thread is running a reconciliation's hooks
        self.rejoined_while_reconciling = False

    def transition(self, state: MemberState) -> None:
        """Move to ``state``; a transition Java does not allow is a bug (RuntimeError)."""
        if state is not self.state and self.state not in _VALID_FROM[state]:
            raise RuntimeError(f"invalid member state transition from {self.state.name} to {state.name}")
        self.state = state
        self.changed()

    def to_joining(self) -> None:
        """Java's ``transitionToJoining``: epoch 0, no pending target, the next heartbeat joins."""
        if self.state is MemberState.FATAL:
            return
        if self.reconciling:
            self.rejoined_while_reconciling = True
        self.epoch = 0
        self.transition(MemberState.JOINING)
        self.target = NONE
        self.unresolved = frozenset()

    def assignment_received(self, partitions: Mapping[uuid.UUID, frozenset[int]]) -> None:
        """Java's ``processAssignmentReceived``: a new target reconciles; the same one settles."""
        updated = self.target.updated_with(partitions)
        if updated is not None:
            self.target = updated
        if self.target != self.current:
            self.transition(MemberState.RECONCILING)
        elif self.state in (MemberState.RECONCILING, MemberState.JOINING):
            self.transition(MemberState.STABLE)

    @property
    def target_reconciled(self) -> bool:
        return self.current == self.target
