"""The MockCluster's classic consumer-group coordinator.

Third-party consumers (kafka-python's KafkaConsumer, confluent-kafka's Consumer with the classic
protocol) and our exactly-once loop need a real group coordinator: join/sync rebalances that elect
a leader and hand out its assignment, heartbeats that keep members alive, committed offsets, and
the transactional offsets a producer stages with TxnOffsetCommit. This module implements that
protocol the way Kafka's ``GroupMetadataManager`` does for classic groups (states Empty,
PreparingRebalance, CompletingRebalance, Stable, Dead; MEMBER_ID_REQUIRED for JoinGroup v4+;
static membership; generation-fenced offset commits), on plain Python values. The wire handlers
(``handlers/join_group.py`` and its siblings) call it; it never imports them.

Threading: every public method is called with ``state.lock`` held (handlers run under it; the
cluster timer calls :meth:`GroupCoordinator.tick` under it). A JoinGroup or SyncGroup that has to
wait for other members parks on ``state.cond`` (which releases the lock) until its outcome is
filled in by whoever completes the round: another member's request, or a timer that expired.
Timers are plain deadlines checked by :meth:`tick` and by the parked threads themselves, so a round
completes on time even between two timer ticks. Every wait is bounded.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Protocol

import attrs

from txnproducer._internal.protocol import error_codes as ec

from .classic_group import (
    ClassicGroup,
    GroupState,
    JoinOutcome,
    JoinWaiter,
    Member,
    SyncOutcome,
    SyncWaiter,
)
from .group_offsets import CommittedOffset, GroupOffsets, TopicPartitionKey

__all__ = [
    "CommittedOffset",
    "GroupCoordinator",
    "GroupDescription",
    "GroupState",
    "MemberDescription",
]

# ``state.settings`` keys read at construction -> attribute.
_SETTINGS = {
    "group_initial_rebalance_delay_ms": "initial_rebalance_delay_ms",
    "group_min_session_timeout_ms": "min_session_timeout_ms",
    "group_max_session_timeout_ms": "max_session_timeout_ms",
}


class _StateView(Protocol):
    """What the coordinator needs from ``ClusterState`` (a small fake satisfies it in unit tests)."""

    @property
    def cond(self) -> threading.Condition: ...

    def now_ms(self) -> int: ...

    def notify_all(self) -> None: ...


@attrs.frozen
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@attrs.frozen
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    generation_id: int
    leader: str | None
    members: tuple[MemberDescription, ...]


class GroupCoordinator:
    """Classic consumer groups and their offsets for the whole mock cluster.

    Attributes are Kafka's group-coordinator settings, chosen for fast tests:
    ``initial_rebalance_delay_ms`` (Kafka: group.initial.rebalance.delay.ms = 3000) is 0, and
    ``min_session_timeout_ms`` (Kafka: group.min.session.timeout.ms = 6000) is 1 so tests can use
    short session timeouts. Change them on the instance before clients connect.
    """

    initial_rebalance_delay_ms: int = 0
    min_session_timeout_ms: int = 1
    max_session_timeout_ms: int = 1_800_000
    new_member_join_timeout_ms: int = 300_000
    offset_metadata_max_bytes: int = 4096
    client_host: str = "/127.0.0.1"
    # A parked JoinGroup/SyncGroup never waits longer than its rebalance timeout plus this margin
    # (a backstop: the protocol's own timers normally complete it much earlier).
    wait_margin_ms: int = 30_000

    def __init__(self, state: _StateView) -> None:
        self._state = state
        self._groups: dict[str, ClassicGroup] = {}
        self._offsets: dict[str, GroupOffsets] = {}
        # MockCluster may pass Kafka-style overrides through ``state.settings``.
        settings: Mapping[str, object] = getattr(state, "settings", None) or {}
        for key, attr in _SETTINGS.items():
            value = settings.get(key)
            if isinstance(value, int):
                setattr(self, attr, value)

    # ------------------------------------------------------------------ inspection / test API
    def group_ids(self) -> list[str]:
        return [g.group_id for g in self._groups.values() if g.state is not GroupState.DEAD]

    def group(self, group_id: str) -> ClassicGroup | None:
        """The live group model (for assertions in tests; do not mutate)."""
        return self._groups.get(group_id)

    def describe(self, group_id: str) -> GroupDescription | None:
        """The group as DescribeGroups shows it, or None if it does not exist."""
        group = self._groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return None
        stable = group.state is GroupState.STABLE
        protocol = group.protocol_name or ""
        members = tuple(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                # Kafka shows the protocol metadata only once the group is Stable.
                metadata=m.metadata_for(protocol) if stable else b"",
                assignment=m.assignment,
            )
            for m in group.members.values()
        )
        return GroupDescription(
            group_id=group.group_id,
            state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_name=protocol if stable else "",
            generation_id=group.generation_id,
            leader=group.leader_id,
            members=members,
        )

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """Committed (visible) offsets of a group: {(topic, partition): offset}."""
        offsets = self._offsets.get(group_id)
        if offsets is None:
            return {}
        return {tp: c.offset for tp, c in offsets.committed.items()}

    def pending_txn_offsets(self, group_id: str) -> dict[int, dict[tuple[str, int], int]]:
        """Staged transactional offsets per producer id (not yet visible)."""
        offsets = self._offsets.get(group_id)
        if offsets is None:
            return {}
        return {pid: {tp: c.offset for tp, c in staged.items()} for pid, staged in offsets.pending.items()}

    # ------------------------------------------------------------------ fault injection
    def force_rebalance(self, group_id: str) -> None:
        """Start a rebalance now, as a metadata change would: members learn it from Heartbeat."""
        group = self._groups.get(group_id)
        if group is None or not group.members:
            return
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, self._now())
            self._notify()

    def remove_member(self, group_id: str, member_id: str) -> bool:
        """Remove a member as if its session had timed out; returns False if it was not a member."""
        group = self._groups.get(group_id)
        if group is None:
            return False
        member = group.members.get(member_id)
        if member is None:
            return group.pending_members.pop(member_id, None) is not None
        self._remove_member_and_update(group, member, self._now())
        self._notify()
        return True

    # ------------------------------------------------------------------ timers
    def tick(self, now_ms: int) -> None:
        """Run every timer due at ``now_ms``: join/sync phase timeouts, member session expiry."""
        if self._run_timers(now_ms):
            self._notify()

    def _run_timers(self, now: int) -> bool:
        changed = False
        for group in list(self._groups.values()):
            if (
                group.join_deadline_ms is not None
                and now >= group.join_deadline_ms
                and group.state is GroupState.PREPARING_REBALANCE
            ):
                changed = True
                self._on_join_deadline(group, now)
            if group.sync_deadline_ms is not None and now >= group.sync_deadline_ms:
                changed = True
                self._expire_pending_sync(group, now)
            for pending_id, expiry in list(group.pending_members.items()):
                if now >= expiry:
                    changed = True
                    del group.pending_members[pending_id]
                    if group.state is GroupState.PREPARING_REBALANCE and group.has_all_members_joined():
                        self._complete_join(group, now)
            for member in list(group.members.values()):
                if member.member_id not in group.members or now < member.heartbeat_deadline_ms:
                    continue
                changed = True
                if member.has_satisfied_heartbeat():
                    member.heartbeat_deadline_ms = now + member.session_timeout_ms
                else:
                    self._remove_member_and_update(group, member, now)
        return changed

    def _next_deadline(self) -> int | None:
        deadlines: list[int] = []
        for group in self._groups.values():
            if group.join_deadline_ms is not None:
                deadlines.append(group.join_deadline_ms)
            if group.sync_deadline_ms is not None:
                deadlines.append(group.sync_deadline_ms)
            deadlines.extend(group.pending_members.values())
            deadlines.extend(m.heartbeat_deadline_ms for m in group.members.values())
        return min(deadlines, default=None)

    def _on_join_deadline(self, group: ClassicGroup, now: int) -> None:
        if group.initial_join and group.new_member_added and group.initial_remaining_ms > 0:
            # Kafka's InitialDelayedJoin: each newcomer during the initial delay extends it,
            # within the rebalance timeout, so that a starting fleet lands in one generation.
            group.new_member_added = False
            delay = min(self.initial_rebalance_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
            group.initial_delay_ms = delay
            group.join_deadline_ms = now + delay
        else:
            self._complete_join(group, now)

    # ------------------------------------------------------------------ JoinGroup
    def join(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
    ) -> JoinOutcome:
        """Handle a JoinGroup; blocks (releasing the lock) until this member's round completes."""
        now = self._now()
        self._run_timers(now)
        if not group_id:
            return JoinOutcome(ec.INVALID_GROUP_ID, member_id=member_id)
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            return JoinOutcome(ec.INVALID_SESSION_TIMEOUT, member_id=member_id)
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms  # JoinGroup v0 has no rebalance timeout
        group = self._groups.get(group_id)
        if group is None:
            if member_id:
                return JoinOutcome(ec.UNKNOWN_MEMBER_ID, member_id=member_id)
            group = self._create_group(group_id)
        if group.state is GroupState.DEAD:
            return JoinOutcome(ec.COORDINATOR_NOT_AVAILABLE, member_id=member_id)
        if not group.supports_protocols(protocol_type, protocols):
            return JoinOutcome(ec.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)

        waiter = JoinWaiter()
        candidate = Member(
            member_id=member_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            client_host=self.client_host,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=protocol_type,
            protocols=list(protocols),
        )
        if not member_id:
            immediate = self._join_new_member(group, candidate, waiter, require_known_member_id, now)
        else:
            immediate = self._join_existing_member(group, candidate, waiter, now)
        self._notify()
        if immediate is not None:
            return immediate
        return self._wait_join(waiter, rebalance_timeout_ms)

    def _join_new_member(
        self,
        group: ClassicGroup,
        candidate: Member,
        waiter: JoinWaiter,
        require_known_member_id: bool,
        now: int,
    ) -> JoinOutcome | None:
        candidate.member_id = f"{candidate.client_id}-{uuid.uuid4()}"
        if candidate.group_instance_id is not None:
            existing = group.static_members.get(candidate.group_instance_id)
            if existing is None:
                self._add_member_and_rebalance(group, candidate, waiter, now)
                return None
            return self._replace_static_member(group, existing, candidate, waiter, now)
        if require_known_member_id:
            # KIP-394: hand out the id first; the member rejoins with it. Until then it is pending
            # and expires after its session timeout.
            group.pending_members[candidate.member_id] = now + candidate.session_timeout_ms
            return JoinOutcome(ec.MEMBER_ID_REQUIRED, member_id=candidate.member_id)
        self._add_member_and_rebalance(group, candidate, waiter, now)
        return None

    def _join_existing_member(
        self, group: ClassicGroup, candidate: Member, waiter: JoinWaiter, now: int
    ) -> JoinOutcome | None:
        member_id = candidate.member_id
        if member_id in group.pending_members:
            self._add_member_and_rebalance(group, candidate, waiter, now)
            return None
        error = self._validate_member(group, member_id, candidate.group_instance_id)
        if error != ec.NONE:
            return JoinOutcome(error, member_id=member_id)
        member = group.members[member_id]
        if group.state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, candidate, waiter, now)
            return None
        if group.state is GroupState.COMPLETING_REBALANCE:
            if member.matches(candidate.protocols):
                # A retried join of this generation: answer with what the round produced.
                return self._current_join_outcome(group, member_id, group.is_leader(member_id))
            self._update_member_and_rebalance(group, member, candidate, waiter, now)
            return None
        if group.state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(candidate.protocols):
                # The leader rejoining (e.g. metadata change it noticed) or new subscriptions: rebalance.
                self._update_member_and_rebalance(group, member, candidate, waiter, now)
                return None
            return self._current_join_outcome(group, member_id, False)
        return JoinOutcome(ec.UNKNOWN_MEMBER_ID, member_id=member_id)

    def _current_join_outcome(self, group: ClassicGroup, member_id: str, with_members: bool) -> JoinOutcome:
        return JoinOutcome(
            ec.NONE,
            member_id=member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            members=group.current_member_list() if with_members else (),
        )

    def _add_member_and_rebalance(
        self, group: ClassicGroup, member: Member, waiter: JoinWaiter, now: int
    ) -> None:
        member.is_new = True
        member.join_waiter = waiter
        member.heartbeat_deadline_ms = now + self.new_member_join_timeout_ms
        if group.state is GroupState.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._maybe_prepare_rebalance_or_complete_join(group, now)

    def _update_member_and_rebalance(
        self, group: ClassicGroup, member: Member, candidate: Member, waiter: JoinWaiter, now: int
    ) -> None:
        member.protocols = candidate.protocols
        member.session_timeout_ms = candidate.session_timeout_ms
        member.rebalance_timeout_ms = candidate.rebalance_timeout_ms
        member.client_id = candidate.client_id
        if member.join_waiter is not None:
            # A duplicate join from the same member (its earlier request was given up on).
            member.complete_join(JoinOutcome(ec.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        member.join_waiter = waiter
        self._maybe_prepare_rebalance_or_complete_join(group, now)

    def _replace_static_member(
        self, group: ClassicGroup, old_id: str, candidate: Member, waiter: JoinWaiter, now: int
    ) -> JoinOutcome | None:
        """A static member restarted with the same group.instance.id: it takes over the old id's place."""
        assert candidate.group_instance_id is not None
        old = group.members[old_id]
        old.complete_join(JoinOutcome(ec.FENCED_INSTANCE_ID, member_id=old_id))
        old.complete_sync(SyncOutcome(ec.FENCED_INSTANCE_ID))
        member = group.replace_static_member(candidate.group_instance_id, old_id, candidate.member_id)
        old_protocols = member.protocols
        member.protocols = candidate.protocols
        member.session_timeout_ms = candidate.session_timeout_ms
        member.rebalance_timeout_ms = candidate.rebalance_timeout_ms
        member.client_id = candidate.client_id
        member.heartbeat_deadline_ms = now + member.session_timeout_ms
        if group.state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol() and old_protocols == candidate.protocols:
                # KIP-345: a static member coming back unchanged does not cause a rebalance.
                leader = group.is_leader(member.member_id)
                outcome = self._current_join_outcome(group, member.member_id, leader)
                return attrs.evolve(outcome, skip_assignment=leader)
            member.join_waiter = waiter
            self._maybe_prepare_rebalance_or_complete_join(group, now)
            return None
        member.join_waiter = waiter
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._prepare_rebalance(group, now)
        elif group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join_phase(group, now)
        else:
            self._maybe_prepare_rebalance_or_complete_join(group, now)
        return None

    def _wait_join(self, waiter: JoinWaiter, rebalance_timeout_ms: int) -> JoinOutcome:
        bound = rebalance_timeout_ms + self.initial_rebalance_delay_ms + self.wait_margin_ms
        self._park(lambda: waiter.result is not None, bound)
        if waiter.result is None:
            self._detach_join_waiter(waiter)
            return JoinOutcome(ec.REBALANCE_IN_PROGRESS)
        return waiter.result

    def _detach_join_waiter(self, waiter: JoinWaiter) -> None:
        for group in self._groups.values():
            for member in group.members.values():
                if member.join_waiter is waiter:
                    member.join_waiter = None

    # ------------------------------------------------------------------ rebalance core
    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, now: int) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now)
        else:
            self._maybe_complete_join_phase(group, now)

    def _prepare_rebalance(self, group: ClassicGroup, now: int) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment_error(group, ec.REBALANCE_IN_PROGRESS)
        group.sync_deadline_ms = None
        initial = group.state is GroupState.EMPTY
        group.transition_to(GroupState.PREPARING_REBALANCE)
        if initial:
            delay = self.initial_rebalance_delay_ms
            group.initial_join = True
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.join_deadline_ms = now + delay
        else:
            group.initial_join = False
            if group.has_all_members_joined():
                self._complete_join(group, now)
            else:
                group.join_deadline_ms = now + group.rebalance_timeout_ms()

    def _maybe_complete_join_phase(self, group: ClassicGroup, now: int) -> None:
        if (
            group.state is GroupState.PREPARING_REBALANCE
            and group.has_all_members_joined()
            and group.previous_state is not GroupState.EMPTY
        ):
            self._complete_join(group, now)

    def _complete_join(self, group: ClassicGroup, now: int) -> None:
        """End the join phase: drop members that did not rejoin, start the next generation."""
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        group.join_deadline_ms = None
        group.initial_join = False
        for member in group.not_yet_rejoined():
            if not member.is_static:
                group.remove(member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members remain and none rejoined: wait for them (or their session expiry).
            group.join_deadline_ms = now + group.rebalance_timeout_ms()
            return
        group.init_next_generation()
        if group.is_in(GroupState.EMPTY):
            return
        for member in group.members.values():
            leader = group.is_leader(member.member_id)
            member.complete_join(self._current_join_outcome(group, member.member_id, leader))
            member.heartbeat_deadline_ms = now + member.session_timeout_ms
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        group.sync_deadline_ms = now + group.rebalance_timeout_ms()
        group.sync_generation = group.generation_id

    def _expire_pending_sync(self, group: ClassicGroup, now: int) -> None:
        group.sync_deadline_ms = None
        if group.sync_generation != group.generation_id:
            return
        if not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if not group.pending_sync_members:
            return
        for member_id in list(group.pending_sync_members):
            member = group.remove(member_id)
            if member is not None:
                member.complete_join(JoinOutcome(ec.UNKNOWN_MEMBER_ID))
        self._prepare_rebalance(group, now)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.complete_sync(SyncOutcome(error))

    def _remove_member_and_update(self, group: ClassicGroup, member: Member, now: int) -> None:
        # A parked join of the removed member answers UNKNOWN_MEMBER_ID so a live client rejoins.
        member.complete_join(JoinOutcome(ec.UNKNOWN_MEMBER_ID))
        member.complete_sync(SyncOutcome(ec.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, now)
        elif group.state is GroupState.PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join(group, now)

    # ------------------------------------------------------------------ SyncGroup
    def sync(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
    ) -> SyncOutcome:
        """Handle a SyncGroup; a follower blocks until the leader's assignment arrives."""
        now = self._now()
        self._run_timers(now)
        group = self._groups.get(group_id)
        if group is None:
            return SyncOutcome(ec.UNKNOWN_MEMBER_ID)
        if group.state is GroupState.DEAD:
            return SyncOutcome(ec.COORDINATOR_NOT_AVAILABLE)
        error = self._validate_member(group, member_id, group_instance_id)
        if error != ec.NONE:
            return SyncOutcome(error)
        if generation_id != group.generation_id:
            return SyncOutcome(ec.ILLEGAL_GENERATION)
        if _inconsistent(protocol_type, group.protocol_type) or _inconsistent(
            protocol_name, group.protocol_name
        ):
            return SyncOutcome(ec.INCONSISTENT_GROUP_PROTOCOL)
        if group.state is GroupState.EMPTY:
            return SyncOutcome(ec.UNKNOWN_MEMBER_ID)
        if group.state is GroupState.PREPARING_REBALANCE:
            return SyncOutcome(ec.REBALANCE_IN_PROGRESS)
        member = group.members[member_id]
        if group.state is GroupState.STABLE:
            self._sync_received(group, member_id)
            return SyncOutcome(ec.NONE, group.protocol_type, group.protocol_name, member.assignment)
        # CompletingRebalance: park until the leader's SyncGroup carries the assignment.
        waiter = SyncWaiter()
        if member.sync_waiter is not None:
            member.complete_sync(SyncOutcome(ec.REBALANCE_IN_PROGRESS))
        member.sync_waiter = waiter
        self._sync_received(group, member_id)
        if group.is_leader(member_id):
            for m in group.members.values():
                m.assignment = bytes(assignments.get(m.member_id, b""))
                if m.sync_waiter is not None:
                    outcome = SyncOutcome(ec.NONE, group.protocol_type, group.protocol_name, m.assignment)
                    m.complete_sync(outcome)
                    m.heartbeat_deadline_ms = now + m.session_timeout_ms
            group.transition_to(GroupState.STABLE)
        self._notify()
        bound = group.rebalance_timeout_ms() + self.wait_margin_ms
        self._park(lambda: waiter.result is not None, bound)
        if waiter.result is None:
            if member.sync_waiter is waiter:
                member.sync_waiter = None
            return SyncOutcome(ec.REBALANCE_IN_PROGRESS)
        return waiter.result

    def _sync_received(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            group.sync_deadline_ms = None

    # ------------------------------------------------------------------ Heartbeat / LeaveGroup
    def heartbeat(
        self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        now = self._now()
        self._run_timers(now)
        group = self._groups.get(group_id)
        if group is None:
            return ec.UNKNOWN_MEMBER_ID
        if group.state is GroupState.DEAD:
            return ec.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(group, member_id, group_instance_id)
        if error != ec.NONE:
            return error
        if generation_id != group.generation_id:
            return ec.ILLEGAL_GENERATION
        if group.state is GroupState.EMPTY:
            return ec.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        member.heartbeat_deadline_ms = now + member.session_timeout_ms
        if group.state is GroupState.PREPARING_REBALANCE:
            return ec.REBALANCE_IN_PROGRESS
        return ec.NONE

    def leave(
        self, *, group_id: str, members: Iterable[tuple[str, str | None]]
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """Handle LeaveGroup: (top-level error, [(member_id, group_instance_id, error)])."""
        now = self._now()
        self._run_timers(now)
        group = self._groups.get(group_id)
        if group is None:
            return ec.UNKNOWN_MEMBER_ID, []
        if group.state is GroupState.DEAD:
            return ec.COORDINATOR_NOT_AVAILABLE, []
        results: list[tuple[str, str | None, int]] = []
        left = 0
        for member_id, instance_id in members:
            if not member_id:
                # Administrative removal by group.instance.id (KIP-345).
                existing = group.static_members.get(instance_id) if instance_id is not None else None
                if existing is None:
                    results.append((member_id, instance_id, ec.UNKNOWN_MEMBER_ID))
                    continue
                self._remove_current_member(group, existing)
            elif member_id in group.pending_members:
                del group.pending_members[member_id]
            else:
                error = self._validate_member(group, member_id, instance_id)
                if error != ec.NONE:
                    results.append((member_id, instance_id, error))
                    continue
                self._remove_current_member(group, member_id)
            results.append((member_id, instance_id, ec.NONE))
            left += 1
        if left:
            if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group, now)
            elif group.state is GroupState.PREPARING_REBALANCE:
                self._maybe_complete_join_phase(group, now)
            self._notify()
        return ec.NONE, results

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members[member_id]
        member.complete_join(JoinOutcome(ec.UNKNOWN_MEMBER_ID))
        member.complete_sync(SyncOutcome(ec.UNKNOWN_MEMBER_ID))
        group.remove(member_id)

    # ------------------------------------------------------------------ offsets
    def commit_offsets(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        api_version: int,
        offsets: Mapping[TopicPartitionKey, CommittedOffset],
        known_topics: Iterable[str] | None = None,
    ) -> dict[TopicPartitionKey, int]:
        """Handle an OffsetCommit; returns the error code per partition.

        ``known_topics`` (when given) makes partitions of unknown topics answer
        UNKNOWN_TOPIC_OR_PARTITION, as Kafka's request handler does before the coordinator.
        """
        topics = None if known_topics is None else set(known_topics)
        group = self._groups.get(group_id)
        error = ec.NONE
        if group is None:
            if generation_id < 0:
                group = self._create_group(group_id)  # a "simple" group: offsets only
            else:
                error = ec.GROUP_ID_NOT_FOUND if api_version >= 9 else ec.ILLEGAL_GENERATION
        if group is not None:
            error = self._validate_offset_commit(
                group, member_id, group_instance_id, generation_id, transactional=False
            )
        results: dict[TopicPartitionKey, int] = {}
        store = self._offsets.setdefault(group_id, GroupOffsets())
        for tp, value in offsets.items():
            if topics is not None and tp[0] not in topics:
                results[tp] = ec.UNKNOWN_TOPIC_OR_PARTITION
            elif error != ec.NONE:
                results[tp] = error
            elif len((value.metadata or "").encode()) > self.offset_metadata_max_bytes:
                results[tp] = ec.OFFSET_METADATA_TOO_LARGE
            else:
                store.commit(tp, attrs.evolve(value, metadata=value.metadata or ""))
                results[tp] = ec.NONE
        return results

    def fetch_offsets(
        self, *, group_id: str, partitions: Iterable[TopicPartitionKey] | None, require_stable: bool
    ) -> list[tuple[TopicPartitionKey, CommittedOffset | None, int]]:
        """Handle one group of an OffsetFetch: [(tp, committed or None, error)].

        ``partitions`` None means every partition with a committed offset. With ``require_stable``
        a partition that has a pending transactional offset answers UNSTABLE_OFFSET_COMMIT.
        """
        store = self._offsets.get(group_id, GroupOffsets())
        wanted = list(store.committed) if partitions is None else list(partitions)
        results: list[tuple[TopicPartitionKey, CommittedOffset | None, int]] = []
        for tp in wanted:
            if require_stable and store.has_pending(tp):
                results.append((tp, None, ec.UNSTABLE_OFFSET_COMMIT))
            else:
                results.append((tp, store.committed.get(tp), ec.NONE))
        return results

    # -- used by the transaction coordinator (contract A) ---------------------------------------
    def validate_txn_offset_commit(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        """Kafka's checks for TxnOffsetCommit (KIP-447): generation -1 always passes; otherwise the
        group must exist (ILLEGAL_GENERATION) and the member belong to this generation."""
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return ec.ILLEGAL_GENERATION
            group = self._create_group(group_id)
        return self._validate_offset_commit(
            group, member_id, group_instance_id, generation_id, transactional=True
        )

    def stage_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        offsets: dict[tuple[str, int], tuple[int, int, str | None]],
    ) -> None:
        """Keep a transaction's offsets aside until its marker (complete_txn_offsets)."""
        if group_id not in self._groups:
            self._create_group(group_id)
        store = self._offsets.setdefault(group_id, GroupOffsets())
        for tp, (offset, leader_epoch, metadata) in offsets.items():
            store.stage(producer_id, tp, CommittedOffset(offset, leader_epoch, metadata or ""))

    def complete_txn_offsets(self, group_id: str, producer_id: int, commit: bool) -> None:
        """The transaction's COMMIT/ABORT marker reached the offsets: publish or drop them."""
        store = self._offsets.get(group_id)
        if store is not None:
            store.complete(producer_id, commit)
            self._notify()

    # ------------------------------------------------------------------ DescribeGroups / ListGroups
    def list_groups(self) -> list[tuple[str, str, str]]:
        """[(group_id, protocol_type, state)] of every live group."""
        listed = []
        for group in self._groups.values():
            if group.state is GroupState.DEAD:
                continue
            listed.append((group.group_id, group.protocol_type or "", group.state.value))
        return listed

    # ------------------------------------------------------------------ helpers
    def _validate_offset_commit(
        self,
        group: ClassicGroup,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        *,
        transactional: bool,
    ) -> int:
        if group.state is GroupState.DEAD:
            return ec.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.state is GroupState.EMPTY:
            return ec.NONE  # a simple commit (admin client / manual assignment)
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self._validate_member(group, member_id, group_instance_id)
            if error != ec.NONE:
                return error
            if generation_id != group.generation_id:
                return ec.ILLEGAL_GENERATION
        elif not transactional and group.state is not GroupState.EMPTY:
            return ec.UNKNOWN_MEMBER_ID
        if not transactional and group.state is GroupState.COMPLETING_REBALANCE:
            return ec.REBALANCE_IN_PROGRESS
        return ec.NONE

    @staticmethod
    def _validate_member(group: ClassicGroup, member_id: str, group_instance_id: str | None) -> int:
        if group_instance_id is not None:
            existing = group.static_members.get(group_instance_id)
            if existing is None:
                return ec.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ec.FENCED_INSTANCE_ID
            return ec.NONE
        if member_id not in group.members:
            return ec.UNKNOWN_MEMBER_ID
        return ec.NONE

    def _create_group(self, group_id: str) -> ClassicGroup:
        group = ClassicGroup(group_id)
        self._groups[group_id] = group
        return group

    def _park(self, done: _Predicate, bound_ms: int) -> None:
        """Wait on the cluster condition until ``done()``, running due timers on every wake-up."""
        give_up = time.monotonic() + bound_ms / 1000.0
        while not done():
            if getattr(self._state, "closed", False):
                return  # the cluster is shutting down: answer at once
            now = self._now()
            if self._run_timers(now):
                self._notify()
                continue
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                return
            timeout = min(remaining, 1.0)
            nxt = self._next_deadline()
            if nxt is not None:
                timeout = min(timeout, max((nxt - now) / 1000.0, 0.001))
            self._state.cond.wait(timeout)

    def _now(self) -> int:
        return int(self._state.now_ms())

    def _notify(self) -> None:
        self._state.notify_all()


class _Predicate(Protocol):
    def __call__(self) -> bool: ...


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
