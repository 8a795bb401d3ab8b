"""The consumer-protocol member's IO-thread turn: when to heartbeat, and what each answer changes.

Java's ``AbstractHeartbeatRequestManager.poll`` and the answer half of ``ConsumerMembershipManager``,
one step per turn of the member's IO loop (``io_thread.GroupIo``):

- outside the group (UNSUBSCRIBED, FENCED, STALE, FATAL) nothing is sent - the polling thread moves
  the member on (it runs the lost hook, then rejoins);
- without a coordinator, it is looked up (``coordinator.py``), then the heartbeat goes;
- when the polling thread has not polled for ``max_poll_interval_ms`` the member leaves (epoch -1, or
  -2 for a static member) and goes STALE: its next ``poll`` loses its partitions and rejoins;
- JOINING, ACKNOWLEDGING and LEAVING heartbeat at once (one in flight at a time; a leave regardless);
  otherwise every heartbeat interval the coordinator gave; a failure waits the exponential backoff -
  a join too (Java's joins again at once, which spins on COORDINATOR_LOAD_IN_PROGRESS) - a coordinator
  move or a fencing none;
- answers: the epoch and interval are taken, a new assignment becomes the target (RECONCILING: the
  polling thread is woken to reconcile it), a fencing makes the member FENCED, a fatal code FATAL.
  Topic ids nobody named yet are looked up (``topic_names.py``).

Two steps differ from Java's on purpose. A static member's join answered UNRELEASED_INSTANCE_ID is
retried (with a WARNING) for up to ``max_poll_interval_ms`` before it is fatal: under KIP-848 an
instance that crashed keeps its place until the coordinator's session timeout drops it (only a
graceful close leaves with epoch -2 for a restart to take over at once), so its restart - the
processor's recovery after a crash - must wait for that, where Java's member fails at once. A join
(epoch 0) answered FENCED_MEMBER_EPOCH means the
coordinator still holds this member id in a higher epoch (Kafka 4.1 fences an epoch-0 heartbeat of a
member it knows, ``consumer_group.json``); Java would rejoin the same way until the old incarnation's
session runs out (45 s by default). This member leaves first (epoch -1 under the same id: the
coordinator drops the old incarnation at once), then joins.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import attrs

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_group_heartbeat import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
)

from ..coordinator import CoordinatorLink
from ..io_thread import GroupIo
from . import consumer_group_heartbeat as cgh
from . import topic_names
from .settings import ConsumerGroupSettings
from .state import NONE, MemberFacts, MemberState

__all__ = ["HeartbeatLoop"]

_IDLE_S = 1.0


class HeartbeatLoop:
    """See the module docstring. :meth:`tick` runs on the IO thread; :meth:`polled` and
    :meth:`leave_epoch` are called with the state lock held, from either thread."""

    def __init__(self, io: GroupIo, link: CoordinatorLink, facts: MemberFacts,
                 settings: ConsumerGroupSettings, wake_polling_thread: Callable[[], None]) -> None:
        self._io = io
        self._link = link
        self._facts = facts
        self._settings = settings
        self._wake = wake_polling_thread
        self._sent = cgh.SentFields()
        self._in_flight = False
        self._next_heartbeat = 0.0
        self._not_before = 0.0  # after a failure: not even a join or an acknowledgment goes sooner
        self._failures = 0
        self._lookup_not_before = 0.0
        self._names_in_flight = False
        self._names_not_before = 0.0
        self._last_poll = time.monotonic()
        self._unreleased_since: float | None = None  # the first UNRELEASED_INSTANCE_ID of a join
        self.subscription: cgh.Subscription = frozenset()  # written by the polling thread, with the lock
        self.leave_with: int | None = None  # the epoch close() leaves with (None: the default)
        self._log = get_logger("txnproducer.group").bind(group_id=settings.group_id)

    # -- called with the state lock held -----------------------------------------------------------

    def polled(self, now: float) -> bool:
        """The polling thread polled; True if the poll timer had run out (Java's ``resetPollTimer``)."""
        expired = now - self._last_poll >= self._settings.rebalance_timeout_ms / 1000
        self._last_poll = now
        return expired

    def leave_epoch(self) -> int:
        """-2 for a static member (its instance keeps the assignment for a restart), else -1."""
        if self.leave_with is not None:
            return self.leave_with
        if self._settings.group_instance_id is not None:
            return LEAVE_GROUP_STATIC_MEMBER_EPOCH
        return LEAVE_GROUP_MEMBER_EPOCH

    def heartbeat_soon(self) -> None:
        """Send the next heartbeat without waiting for the interval (the polling thread reconciled)."""
        self._next_heartbeat = 0.0
        self._io.wakeup()

    # -- the IO thread -----------------------------------------------------------------------------

    def tick(self, now: float) -> float:
        """One step; returns the seconds until the next step is due."""
        facts = self._facts
        names_wanted: frozenset[Any] = frozenset()
        lookup = False
        heartbeat = None
        with facts.cond:
            auth_error = self._io.network.auth_error
            if auth_error is not None and facts.fatal is None:
                self._fatal(auth_error)
            if facts.closed or facts.fatal is not None or not facts.state.in_group:
                return _IDLE_S
            if facts.unresolved and not self._names_in_flight and now >= self._names_not_before:
                self._names_in_flight = True
                names_wanted = facts.unresolved
            if facts.coordinator is None:
                backoff = self._settings.retry_backoff_ms / 1000
                if not self._link.lookup_in_flight and now >= self._lookup_not_before:
                    self._lookup_not_before = now + backoff
                    lookup = True
                wait = backoff
            else:
                heartbeat = self._due(now)
                wait = min(_IDLE_S, max(0.0, self._next_heartbeat - now), self._poll_time_left(now))
        if names_wanted:
            self._resolve(names_wanted)
        if lookup:
            self._link.lookup()
        if heartbeat is not None:
            self._send(*heartbeat)
        return wait

    def _due(self, now: float) -> tuple[int, cgh.Subscription, Any, bool, bool] | None:
        """The heartbeat to send now, if one is due: (epoch, subscription, owned, joining, leaving);
        moves the state as sending it does (Java's ``onHeartbeatRequestGenerated``). Lock held."""
        facts = self._facts
        state = facts.state
        if now - self._last_poll >= self._settings.rebalance_timeout_ms / 1000 \
                and state not in (MemberState.PREPARE_LEAVING, MemberState.LEAVING):
            self._log.warning(
                "group.poll_interval_exceeded", max_poll_interval_ms=self._settings.rebalance_timeout_ms,
                hint="the time between two poll() calls was longer than max_poll_interval_ms: the member "
                     "leaves the group and rejoins at the next poll; raise max_poll_interval_ms or poll "
                     "fewer records at a time")
            facts.poll_expired = True
            facts.transition(MemberState.PREPARE_LEAVING)
            self._start_leaving()
            state = facts.state
        if facts.leave_first and state is MemberState.JOINING:
            if self._in_flight:
                return None
            self._in_flight = True
            return (LEAVE_GROUP_MEMBER_EPOCH, self.subscription, NONE, False, True)
        now_please = state is MemberState.LEAVING or (
            state in (MemberState.JOINING, MemberState.ACKNOWLEDGING) and not self._in_flight
            and now >= self._not_before)
        if not now_please and (self._in_flight or now < self._next_heartbeat):
            return None
        heartbeat = (facts.epoch, self.subscription, facts.current, state is MemberState.JOINING,
                     state is MemberState.LEAVING)
        self._in_flight = True
        self._next_heartbeat = now + self._interval()
        if state is MemberState.ACKNOWLEDGING:
            facts.transition(MemberState.STABLE if facts.target_reconciled else MemberState.RECONCILING)
            if facts.state is MemberState.RECONCILING:
                self._wake()
        elif state is MemberState.LEAVING:
            if facts.poll_expired:
                facts.transition(MemberState.STALE)
                self._wake()
            else:
                facts.transition(MemberState.UNSUBSCRIBED)
        return heartbeat

    def _start_leaving(self) -> None:
        """Java's ``transitionToSendingLeaveGroup`` (lock held; from PREPARE_LEAVING)."""
        facts = self._facts
        facts.epoch = self.leave_epoch()
        facts.current = NONE
        facts.transition(MemberState.LEAVING)

    def _interval(self) -> float:
        return self._facts.heartbeat_interval_s or self._settings.retry_backoff_ms / 1000

    def _poll_time_left(self, now: float) -> float:
        return max(0.0, self._last_poll + self._settings.rebalance_timeout_ms / 1000 - now)

    def _send(self, epoch: int, subscription: cgh.Subscription, owned: Any, joining: bool,
              leaving: bool) -> None:
        settings = self._settings
        facts = self._facts
        sent = self._sent
        pattern = isinstance(subscription, str)

        def build(max_version: Callable[[int], int | None]) -> Any:
            version = cgh.choose_version(max_version, pattern)
            return cgh.build_request(version, settings, facts.member_id, epoch, subscription, owned, sent,
                                     joining)

        self._link.send(build, lambda response: self._answered(epoch, leaving, response),
                        lambda exc: self._failed(leaving, exc))

    def _answered(self, sent_epoch: int, leaving: bool, response: Any) -> None:
        verdict = cgh.read_response(self._settings, response)
        facts = self._facts
        now = time.monotonic()
        coordinator_moved = False
        with facts.cond:
            self._in_flight = False
            if leaving:
                facts.leaves_answered += 1
                facts.leave_first = False
                facts.changed()
            if verdict.kind is cgh.VerdictKind.FATAL and self._still_released_elsewhere(verdict, now):
                verdict = attrs.evolve(verdict, kind=cgh.VerdictKind.RETRY)
            if verdict.kind is cgh.VerdictKind.OK:
                self._failures = 0
                self._not_before = 0.0
                self._unreleased_since = None
                if verdict.interval_ms > 0:
                    facts.heartbeat_interval_s = verdict.interval_ms / 1000
                    if sent_epoch >= 0:
                        self._next_heartbeat = now + facts.heartbeat_interval_s
                self._apply(verdict)
                return
            self._sent.reset()
            if verdict.kind is cgh.VerdictKind.FENCED:
                self._log.info("group.fenced", member_id=facts.member_id, epoch=sent_epoch,
                               error=ec.error_name(verdict.code), said=verdict.message)
                if leaving:
                    return  # the coordinator no longer had us: the leave is done
                if sent_epoch == 0 and verdict.code == ec.FENCED_MEMBER_EPOCH:
                    facts.leave_first = True
                self._to_fenced()
                self._next_heartbeat = 0.0
            elif verdict.kind is cgh.VerdictKind.COORDINATOR:
                self._next_heartbeat = 0.0
                coordinator_moved = True
            elif verdict.kind is cgh.VerdictKind.RETRY:
                self._backoff(now)
                self._log.info("group.heartbeat_retry", error=ec.error_name(verdict.code),
                               said=verdict.message)
            else:
                assert verdict.error is not None
                self._fatal(verdict.error)
        if coordinator_moved:
            self._link.forget(f"it answered {ec.error_name(verdict.code)} to ConsumerGroupHeartbeat")

    def _still_released_elsewhere(self, verdict: cgh.Verdict, now: float) -> bool:
        """UNRELEASED_INSTANCE_ID within ``max_poll_interval_ms`` of the first one: the instance's
        previous incarnation is still in the group (it crashed; its session has not run out yet)."""
        if verdict.code != ec.UNRELEASED_INSTANCE_ID:
            return False
        if self._unreleased_since is None:
            self._unreleased_since = now
        if now - self._unreleased_since >= self._settings.rebalance_timeout_ms / 1000:
            return False
        self._log.warning(
            "group.instance_id_not_released", group_instance_id=self._settings.group_instance_id,
            said=verdict.message,
            hint="the previous instance with this group_instance_id crashed and the coordinator still counts "
                 "it (until group.consumer.session.timeout.ms), or another instance runs with the same id; "
                 "retried until max_poll_interval_ms, then fatal")
        return True

    def _apply(self, verdict: cgh.Verdict) -> None:
        """A NONE answer (Java's ``onHeartbeatSuccess``; lock held)."""
        facts = self._facts
        state = facts.state
        if state is MemberState.LEAVING or not state.in_group or verdict.epoch < 0:
            return
        facts.epoch = verdict.epoch
        facts.changed()
        if verdict.assignment is None or not state.can_take_assignment:
            return
        facts.assignment_received(verdict.assignment)
        facts.unresolved = frozenset(t for t in facts.target.partitions if t not in facts.names)
        if facts.state is MemberState.RECONCILING:
            self._wake()

    def _failed(self, leaving: bool, exc: BaseException) -> None:
        facts = self._facts
        with facts.cond:
            self._in_flight = False
            self._sent.reset()
            if leaving:
                facts.leaves_answered += 1
                facts.leave_first = False
                facts.changed()
            if isinstance(exc, (errors.FatalError, errors.ClosedError)):
                if not isinstance(exc, errors.ClosedError):
                    self._fatal(exc)
                return
            self._backoff(time.monotonic())
        self._log.debug("group.heartbeat_failed", error=repr(exc))

    def _to_fenced(self) -> None:
        """Java's ``transitionToFenced`` (lock held)."""
        facts = self._facts
        state = facts.state
        if state is MemberState.PREPARE_LEAVING:
            self._start_leaving()
            facts.transition(MemberState.UNSUBSCRIBED)
            return
        if state is MemberState.LEAVING:
            facts.transition(MemberState.UNSUBSCRIBED)
            return
        if not state.in_group:
            return
        facts.transition(MemberState.FENCED)
        facts.epoch = 0
        self._wake()

    def _fatal(self, exc: BaseException) -> None:
        facts = self._facts
        facts.fail(exc)
        if facts.state is not MemberState.FATAL:
            facts.transition(MemberState.FATAL)
        self._wake()

    def _backoff(self, now: float) -> None:
        settings = self._settings
        backoff = min(settings.retry_backoff_max_ms, settings.retry_backoff_ms * 2 ** min(self._failures, 20))
        self._failures += 1
        self._next_heartbeat = self._not_before = now + backoff / 1000 * random.uniform(0.8, 1.2)

    # -- topic names -------------------------------------------------------------------------------

    def _resolve(self, wanted: frozenset[Any]) -> None:
        node = self._io.network.least_loaded_node()
        if node is None:
            self._names_done({}, failed=True)
            return
        self._io.send(node, lambda v: topic_names.build_request(wanted, v),
                      lambda response: self._names_done(topic_names.names_by_id(response)),
                      lambda exc: self._names_done({}, failed=True))

    def _names_done(self, found: dict[Any, str], failed: bool = False) -> None:
        facts = self._facts
        with facts.cond:
            self._names_in_flight = False
            facts.names.update(found)
            before = facts.unresolved
            facts.unresolved = frozenset(t for t in facts.target.partitions if t not in facts.names)
            if facts.unresolved:
                self._names_not_before = time.monotonic() + self._settings.retry_backoff_ms / 1000
            if found and facts.unresolved != before:
                facts.changed()
                self._wake()
        if failed:
            self._log.debug("group.topic_names_failed")
