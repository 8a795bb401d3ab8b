"""One rebalance round on the IO thread: JoinGroup, then (for the leader) metadata and the assignment,
then SyncGroup - and the leader's watch on its topics' partition counts afterwards.

Why the round runs on the IO thread, chained from answer to request, instead of on the polling
thread: a round the polling thread started must not stall when that ``poll`` returns. The leader
in particular must send SyncGroup as soon as it can - every other member waits for it. The polling
thread starts a round (after the revoke hook ran) and later collects its outcome from the
:class:`JoinRound`, however many ``poll`` calls that takes; a finished round is never dropped
(kafka-python 3.0.12 can drop one - ``tests/_support/kafka_python_groups.py`` - and the member
then sits outside its group for good).

The leader decodes every member's subscription (``consumer_protocol``), asks for the topics'
partition counts (``topic_metadata.py``), runs the group's chosen assignor (``assignors.py``) -
unless the coordinator says a returning static leader must skip it (KIP-814) - and remembers the
counts it assigned from. While the generation is stable it asks again every
``metadata_max_age_ms``; a different count (partitions added, a topic created or deleted) asks
the member to rejoin, which rebalances the group, as the Java leader does.
"""

from __future__ import annotations

import time
from typing import Any

import attrs

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_protocol import (
    decode_subscription,
    encode_assignment,
)

from ..coordinator import CoordinatorLink
from ..failures import Retry, RoundFailure
from ..io_thread import GroupIo
from ..settings import GroupSettings
from ..state import Generation, GroupState, MemberState
from . import join_group, sync_group, topic_metadata
from .assignors import ASSIGNORS, MemberSubscription
from .heartbeat import HeartbeatTimer

__all__ = ["JoinRound", "Rebalancer"]


@attrs.define
class JoinRound:
    """One JoinGroup -> SyncGroup round (Java's ``joinFuture``): finished with the assignment bytes
    or a :class:`RoundFailure`. Read and written with the state lock held."""

    done: bool = False
    assignment: bytes | None = None
    failure: RoundFailure | None = None


class Rebalancer:
    """Runs rounds and the leader's metadata watch (IO thread; see the module docstring)."""

    def __init__(self, link: CoordinatorLink, io: GroupIo, state: GroupState, settings: GroupSettings,
                 timer: HeartbeatTimer) -> None:
        self._link = link
        self._io = io
        self._state = state
        self._settings = settings
        self._timer = timer
        self._log = get_logger("txnproducer.group").bind(group_id=settings.group_id)
        # read and written with state.cond held
        self.request_in_flight = False  # a JoinGroup or SyncGroup the broker may be holding
        self.is_leader = False
        self.group_topics: frozenset[str] = frozenset()
        self.assigned_counts: dict[str, int] | None = None  # the leader's snapshot
        self._next_metadata_check = 0.0
        self._metadata_in_flight = False

    # -- a round --------------------------------------------------------------------------------

    def start(self, round_: JoinRound, subscription: bytes, reason: str) -> None:
        """Send JoinGroup for ``round_`` (IO thread)."""
        state = self._state
        settings = self._settings
        with state.cond:
            if state.coordinator is None:
                self._finish(round_, RoundFailure(Retry.AFTER_BACKOFF, errors.BrokerError(
                    "the group coordinator is not known", error_code=ec.COORDINATOR_NOT_AVAILABLE)))
                return
            state.state = MemberState.PREPARING_REBALANCE
            self.is_leader = False
            self.assigned_counts = None
            self.request_in_flight = True
            sent = state.generation
            state.changed()
        self._log.info("group.joining", member_id=sent.member_id, reason=reason)
        self._link.send(
            lambda v: join_group.build_request(settings, sent.member_id, subscription, reason, v),
            lambda response: self._on_join_answer(round_, sent, response),
            lambda exc: self._on_wire_failure(round_, "JoinGroup", exc),
            timeout_s=settings.join_timeout_s)

    def _on_join_answer(self, round_: JoinRound, sent: Generation, response: Any) -> None:
        state = self._state
        with state.cond:
            outcome = join_group.read_response(state, self._settings, sent, response, self._forget)
            if isinstance(outcome, RoundFailure):
                self._finish(round_, outcome)
                return
            joined = state.generation
            # heartbeats start now: a slow assignment must not end the session (Java enables them here)
            self._timer.reset_timeouts(time.monotonic())
            self.request_in_flight = False
        self._log.info("group.joined", generation=joined.generation_id, member_id=joined.member_id,
                       protocol=joined.protocol_name, leader=outcome.leader)
        if outcome.leader:
            self._lead(round_, joined, outcome)
        else:
            self._sync(round_, joined, {})

    def _lead(self, round_: JoinRound, joined: Generation, outcome: join_group.Joined) -> None:
        """Decode the subscriptions, fetch the partition counts, assign (unless told to skip), sync."""
        try:
            members = [MemberSubscription(member_id, instance_id, decode_subscription(metadata).topics)
                       for member_id, instance_id, metadata in outcome.members]
        except ValueError as exc:
            self._finish(round_, RoundFailure(Retry.NEVER, errors.FatalError(
                f"a member of group {self._settings.group_id!r} sent a subscription this client cannot "
                f"read ({exc}); is it a consumer of another kind?")))
            return
        topics = frozenset(t for m in members for t in m.topics)
        node = self._any_node()
        if node is None:
            self._finish(round_, RoundFailure(Retry.AFTER_BACKOFF, errors.BrokerError(
                "no broker to ask for the group's topics", error_code=ec.COORDINATOR_NOT_AVAILABLE)))
            return

        def counted(response: Any) -> None:
            counts, unsettled = topic_metadata.partition_counts(topics, response)
            with self._state.cond:
                self.is_leader = True
                self.group_topics = topics
                self.assigned_counts = counts
                self._next_metadata_check = time.monotonic() + self._check_period(unsettled)
            if outcome.skip_assignment:
                self._log.info("group.assignment_skipped", generation=joined.generation_id)
                self._sync(round_, joined, {})
                return
            self._sync(round_, joined, self._assign(joined, members, counts))

        def failed(exc: BaseException) -> None:
            self._on_wire_failure(round_, "Metadata", exc)

        self._io.send(node, lambda v: topic_metadata.build_request(topics, v), counted, failed)

    def _assign(self, joined: Generation, members: list[MemberSubscription],
                counts: dict[str, int]) -> dict[str, bytes]:
        assignor = ASSIGNORS.get(joined.protocol_name or "")
        if assignor is None:  # the coordinator chose a protocol we did not offer
            raise errors.FatalError(f"the group chose assignor {joined.protocol_name!r}, which this member "
                                    f"did not offer ({', '.join(self._settings.assignors)})")
        plan = assignor(members, counts)
        self._log.info("group.assigned", generation=joined.generation_id, protocol=joined.protocol_name,
                       plan={m: len(ps) for m, ps in plan.items()})
        return {member: encode_assignment(partitions) for member, partitions in plan.items()}

    def _sync(self, round_: JoinRound, joined: Generation, assignments: dict[str, bytes]) -> None:
        settings = self._settings
        with self._state.cond:
            if self._state.closed:
                self._finish(round_, RoundFailure(Retry.NEVER, errors.ClosedError("the member closed")))
                return
            self.request_in_flight = True
        self._link.send(
            lambda v: sync_group.build_request(settings, joined, assignments, v),
            lambda response: self._on_sync_answer(round_, joined, response),
            lambda exc: self._on_wire_failure(round_, "SyncGroup", exc))

    def _on_sync_answer(self, round_: JoinRound, sent: Generation, response: Any) -> None:
        with self._state.cond:
            outcome = sync_group.read_response(self._state, self._settings, sent, response, self._forget)
            if isinstance(outcome, RoundFailure):
                self._finish(round_, outcome)
                return
            round_.assignment = outcome
            self._finish(round_, None)
        self._log.info("group.synced", generation=sent.generation_id)

    def _on_wire_failure(self, round_: JoinRound, api: str, exc: BaseException) -> None:
        fatal = isinstance(exc, (errors.FatalError, errors.ClosedError))
        retry = Retry.NEVER if fatal else Retry.AFTER_BACKOFF
        with self._state.cond:
            self._finish(round_, RoundFailure(retry, exc if retry is Retry.NEVER else errors.BrokerError(
                f"{api} failed: {exc}")))

    def _finish(self, round_: JoinRound, failure: RoundFailure | None) -> None:
        """Complete ``round_`` once (caller holds the state lock)."""
        if round_.done:
            return
        self.request_in_flight = False
        round_.failure = failure
        round_.done = True
        self._state.changed()

    def _forget(self) -> None:
        self._link.forget("it answered NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE")

    def _any_node(self) -> int | str | None:
        """A broker for a Metadata request: before the network's first Metadata answer, a bootstrap
        server (whose id is a string: its broker id is not known yet)."""
        node: int | str | None = self._io.network.least_loaded_node()
        return node

    # -- the leader's watch on its topics ---------------------------------------------------------

    def _check_period(self, unsettled: frozenset[str]) -> float:
        """Seconds until the next partition-count check: soon while a topic is unsettled."""
        settings = self._settings
        if unsettled:
            return min(settings.retry_backoff_max_ms, settings.metadata_max_age_ms) / 1000
        return settings.metadata_max_age_ms / 1000

    def check_metadata(self, now: float) -> float:
        """While stable and leading: every ``metadata_max_age_ms``, compare the group's partition
        counts with those assigned from; returns seconds until the next check is due."""
        state = self._state
        period = self._settings.metadata_max_age_ms / 1000
        with state.cond:
            watching = (self.is_leader and self.assigned_counts is not None
                        and state.state is MemberState.STABLE and not self._metadata_in_flight)
            if not watching or now < self._next_metadata_check:
                return max(0.0, self._next_metadata_check - now) if watching else period
            self._metadata_in_flight = True
            self._next_metadata_check = now + period
            topics = self.group_topics
            snapshot = dict(self.assigned_counts or {})
        node = self._any_node()
        if node is None:
            with state.cond:
                self._metadata_in_flight = False
            return period

        def counted(response: Any) -> None:
            current, unsettled = topic_metadata.partition_counts(topics, response)
            with state.cond:
                self._metadata_in_flight = False
                self._next_metadata_check = time.monotonic() + self._check_period(unsettled)
                if current != snapshot and self.assigned_counts == snapshot:
                    self.assigned_counts = None
                    state.request_rejoin("cached metadata has changed")
                    changed = True
                else:
                    changed = False
            if changed:
                self._log.info("group.metadata_changed", assigned_from=snapshot, now=current)

        def failed(exc: BaseException) -> None:
            with state.cond:
                self._metadata_in_flight = False
            self._log.debug("group.metadata_check_failed", error=repr(exc))

        self._io.send(node, lambda v: topic_metadata.build_request(topics, v), counted, failed)
        return period
