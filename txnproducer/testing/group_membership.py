"""The classic group membership protocol of the MockCluster: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Why a module of its own: the rebalance protocol is most of the group coordinator - join and sync rounds
that elect a leader and hand out its assignment, heartbeats and session expiry, static membership
(KIP-345), MEMBER_ID_REQUIRED for JoinGroup v4+ (KIP-394) - and reads best as one sequence of state
transitions over the :mod:`classic_group` model, apart from offsets. It follows Kafka's
``GroupMetadataManager`` for classic groups. :class:`~txnproducer.testing.group_coordinator.GroupCoordinator`
is a :class:`GroupMembership` that adds committed and transactional offsets and the DescribeGroups /
ListGroups views.

Threading: every public method is called with ``state.lock`` held (handlers run under it; the cluster
timer calls :meth:`GroupMembership.tick` under it). A JoinGroup or SyncGroup that has to wait for other
members parks on ``state.cond`` (which releases the lock) until its outcome is filled in by whoever
completes the round: another member's request, or a timer that expired. Timers are plain deadlines checked
by :meth:`tick` and by the parked threads themselves, so a round completes on time even between two timer
ticks. Every wait is bounded.

Simplifications: classic groups only (no KIP-848 consumer groups); the settings default to values for
fast tests (see :class:`GroupMembership`); no group.max.size; every member's client host is "/127.0.0.1".
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Protocol

import attrs

from txnproducer._internal.protocol import error_codes as ec

from .classic_group import ClassicGroup, GroupState, JoinOutcome, JoinWaiter, Member, SyncOutcome, SyncWaiter

__all__ = ["GroupMembership", "StateView"]

# ``state.settings`` keys read at construction -> attribute.
_SETTINGS = {
    "group_initial_rebalance_delay_ms": "initial_rebalance_delay_ms",
    "group_min_session_timeout_ms": "min_session_timeout_ms",
    "group_max_session_timeout_ms": "max_session_timeout_ms",
}


class StateView(Protocol):
    """What the group coordinator needs from ``ClusterState`` (a small fake satisfies it in unit tests)."""

    @property
    def cond(self) -> threading.Condition: ...

    def now_ms(self) -> int: ...

    def notify_all(self) -> None: ...


class GroupMembership:
    """The classic groups of the whole mock cluster and their rebalances.

    Attributes are Kafka's group-coordinator settings, chosen for fast tests:
    ``initial_rebalance_delay_ms`` (Kafka: group.initial.rebalance.delay.ms = 3000) is 0, and
    ``min_session_timeout_ms`` (Kafka: group.min.session.timeout.ms = 6000) is 1 so tests can use
    short session timeouts. Change them on the instance before clients connect.
    """

    initial_rebalance_delay_ms: int = 0
    min_session_timeout_ms: int = 1
    max_session_timeout_ms: int = 1_800_000
    new_member_join_timeout_ms: int = 300_000
    client_host: str = "/127.0.0.1"
    # A parked JoinGroup/SyncGroup never waits longer than its rebalance timeout plus this margin
    # (a backstop: the protocol's own timers normally complete it much earlier).
    wait_margin_ms: int = 30_000

    def __init__(self, state: StateView) -> None:
        self._state = state
        self._groups: dict[str, ClassicGroup] = {}
        # MockCluster may pass Kafka-style overrides through ``state.settings``.
        settings: Mapping[str, object] = getattr(state, "settings", None) or {}
        for key, attr in _SETTINGS.items():
            value = settings.get(key)
            if isinstance(value, int):
                setattr(self, attr, value)

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
        error = group.validate_member(member_id, candidate.group_instance_id)
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
        member.protocols = candidate.protocols
        member.session_timeout_ms = candidate.session_timeout_ms
        member.rebalance_timeout_ms = candidate.rebalance_timeout_ms
        member.client_id = candidate.client_id
        member.heartbeat_deadline_ms = now + member.session_timeout_ms
        if group.state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                # KIP-345: a static member coming back does not cause a rebalance as long as the group
                # would select the same protocol; Kafka compares nothing else (its subscription bytes
                # may differ - another client version, no owned partitions after a restart).
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
        error = group.validate_member(member_id, group_instance_id)
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
        error = group.validate_member(member_id, group_instance_id)
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
                error = group.validate_member(member_id, instance_id)
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

    # ------------------------------------------------------------------ helpers
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
