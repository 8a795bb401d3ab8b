"""A consumer group member you can trust: :class:`GroupMember`, the classic group protocol as the
Java consumer speaks it, for a consumer that fetches on its own.

Why our own member instead of kafka-python's coordinator: kafka-python 3.0.12 can leave a member
outside its group for good while its ``poll`` keeps returning (two repairs touching its internals,
now ``tests/_support/kafka_python_groups.py``), it runs rebalance callbacks on its IO thread (where
an exactly-once loop cannot block to abort and rewind), and it comes attached to its own consumer
and fetcher. This member has none of that: it follows ``AbstractCoordinator`` /
``ConsumerCoordinator`` of the Java client (Kafka 4.x) request by request and error by error, and
the benchmark numbers that decided it are in ``benchmarks/README.md`` ("Group membership").

Threads: the polling thread calls :meth:`GroupMember.poll` (which runs the rebalance hooks - the
revoke hook *before* JoinGroup is sent, so an exactly-once owner aborts its transaction before any
other member can be given its partitions), :meth:`~GroupMember.fetch_committed` and
:meth:`~GroupMember.close`; the member's IO thread (``io_thread.py``) heartbeats and carries every
request. :meth:`~GroupMember.group_metadata` and :meth:`~GroupMember.assignment` may be read from any
thread. Every wait is bounded by the caller's deadline or timeout.

Simplifications: eager assignors only ("range", "roundrobin"; no cooperative rebalancing, no
KIP-848 consumer protocol); topics are subscribed by name (no pattern); no rack-aware assignment.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kafka.structs import ConsumerGroupMetadata, TopicPartition
from kafka.structs import MemberState as KafkaMemberState

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.network.settings import ConnectionSettings
from txnproducer._internal.protocol.consumer_protocol import decode_assignment, encode_subscription

from ..committed import CommittedOffsets
from ..coordinator import CoordinatorLink
from ..failures import Retry
from ..hooks import RebalanceHooks, SubscriptionPattern
from ..io_thread import GroupIo
from ..offset_fetch import CommittedOffset
from ..settings import GroupSettings
from ..state import Generation, GroupState, MemberState
from ..waits import MemberWaits
from .heartbeat import HeartbeatTimer
from .heartbeat_loop import HeartbeatLoop
from .leave_group import maybe_leave_group
from .rebalance import JoinRound, Rebalancer

__all__ = ["DEFAULT_CLOSE_TIMEOUT_S", "GroupMember"]

#: Java's default close timeout (``KafkaConsumer.close()``: 30 s).
DEFAULT_CLOSE_TIMEOUT_S = 30.0

_KAFKA_STATE = {
    MemberState.UNJOINED: KafkaMemberState.UNJOINED,
    MemberState.PREPARING_REBALANCE: KafkaMemberState.REBALANCING,
    MemberState.COMPLETING_REBALANCE: KafkaMemberState.REBALANCING,
    MemberState.STABLE: KafkaMemberState.STABLE,
}


class _Left:
    """Set when a LeaveGroup's answer came (IO thread, with the state lock)."""

    done = False


class GroupMember:
    """One member of a classic consumer group (see the module docstring).

    ``settings``: the group settings; ``hooks``: the owner's :class:`RebalanceHooks`;
    ``connection``: the connection settings, any :class:`ConnectionSettings` - a consumer's
    ``ConsumerConfig`` as it is, or :func:`~.settings.connection_config` - over any security
    protocol the producer supports. Creating the member starts its IO thread and nothing else; the
    first :meth:`poll` after :meth:`subscribe` finds the coordinator and joins.
    """

    def __init__(self, settings: GroupSettings, hooks: RebalanceHooks, *,
                 connection: ConnectionSettings) -> None:
        self._settings = settings
        self._hooks = hooks
        self._log = get_logger("txnproducer.group").bind(group_id=settings.group_id)
        self._state = GroupState()
        self._timer = HeartbeatTimer(settings, time.monotonic())
        network = NetworkClient(connection)
        self._io = GroupIo(network, name=f"txnproducer-group-{settings.group_id}",
                           setup_timeout_s=connection.socket_connection_setup_timeout_ms / 1000,
                           tick=self._tick, on_error=self._io_failed)
        self._link = CoordinatorLink(self._io, self._state, settings.group_id,
                                     self._timer.reset_session_timeout)
        self._rebalancer = Rebalancer(self._link, self._io, self._state, settings, self._timer)
        self._heartbeats = HeartbeatLoop(self._io, self._link, self._rebalancer, self._state, settings,
                                         self._timer)
        self._subscription: frozenset[str] = frozenset()
        self._joined_subscription: frozenset[str] | None = None
        self._assignment: frozenset[TopicPartition] = frozenset()
        self._round: JoinRound | None = None
        self._waits = MemberWaits(self._state, self._link, self._io, backoff_ms=settings.retry_backoff_ms,
                                  backoff_max_ms=settings.retry_backoff_max_ms, unusable=self._unusable,
                                  raise_if_unusable=self._raise_if_unusable)
        self._committed = CommittedOffsets(self._state, self._link, self._io, self._waits)
        # the generation of the last completed join (Java's groupMetadata)
        self._joined = Generation(-1, "", None)
        self._closing = False  # unusable from here on: every wait ends with ClosedError
        self._close_started = False
        self._io.start()

    # -- reading (any thread) ---------------------------------------------------------------------

    @property
    def settings(self) -> GroupSettings:
        return self._settings

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member owns now (empty between a revocation and the next assignment)."""
        return self._assignment

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The KIP-447 fencing identity for ``TransactionalProducer.send_offsets_to_transaction``:
        the group id, the generation and member id of the last completed rebalance (as Java's
        ``groupMetadata()``: until the next one completes, offsets sent with it are fenced by the
        coordinator if the group moved on) and the group instance id; ``state`` is the member's
        state now. Before the first join: generation -1 and no member id."""
        joined = self._joined
        with self._state.cond:
            state = _KAFKA_STATE[self._state.state]
        return ConsumerGroupMetadata(self._settings.group_id, joined.generation_id, joined.member_id,
                                     self._settings.group_instance_id, state)

    # -- the polling thread ---------------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str] | SubscriptionPattern) -> None:
        """Subscribe to ``topics`` (names), replacing the previous subscription; a change rejoins the
        group at the next :meth:`poll`. ConfigError for no topic, a name that is not one, or a
        :class:`SubscriptionPattern` (the coordinator resolves patterns in the consumer protocol only)."""
        if isinstance(topics, SubscriptionPattern):
            raise errors.ConfigError(
                f"subscribing to {topics.pattern!r} (a SubscriptionPattern) needs group_protocol='consumer': "
                "the classic protocol's coordinator does not resolve regular expressions")
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names or not all(isinstance(t, str) and t for t in names):
            raise errors.ConfigError(f"topics must be one or more topic names, got {topics!r}")
        self._raise_if_unusable()
        self._subscription = frozenset(names)
        self._io.wakeup()

    def poll(self, deadline: float) -> bool:
        """Keep this member in its group; call it from the polling thread at least every
        ``max_poll_interval_ms``. When a rebalance is due it runs it: the revoke hook (or the lost
        hook, when the member was dropped), JoinGroup, SyncGroup, then the assign hook.

        ``deadline`` is a ``time.monotonic()`` time: the call returns by then (a rebalance in
        progress goes on in the background and is finished by a later call). Returns True when the
        member is in a stable generation with its assignment applied. Raises a hook's exception,
        FencedInstanceIdError, GroupAuthorizationError, AuthenticationError or another FatalError
        (close the member), IllegalStateError before :meth:`subscribe`, ClosedError after
        :meth:`close`.
        """
        self._raise_if_unusable()
        state = self._state
        with state.cond:
            self._timer.poll(time.monotonic())
        if not self._subscription:
            raise errors.IllegalStateError("poll() called before subscribe(topics): a member needs a "
                                           "subscription to join its group")
        attempts = 0
        while self._rejoin_needed_or_pending():
            if not self._ensure_coordinator_ready(deadline):
                return False
            with state.cond:
                prepare, state.needs_join_prepare = state.needs_join_prepare, False
            if prepare:
                self._on_join_prepare()
            round_ = self._round
            if round_ is None:
                round_ = self._start_round()
            if not self._wait_for(lambda r=round_: r.done, deadline):  # type: ignore[misc]
                return False  # the round goes on; a later poll collects it
            self._round = None
            failure = round_.failure
            if failure is None:
                with state.cond:
                    generation, member_state = state.generation, state.state
                    if generation.is_reset or member_state is not MemberState.STABLE:
                        state.reset_state_and_rejoin(
                            "rebalance failed since the generation/state was modified by the heartbeat "
                            "thread before the rebalance callback ran", reset_member_id=True)
                        continue
                    state.needs_join_prepare = True
                self._on_join_complete(generation, round_.assignment or b"")
                continue
            if not failure.member_id_required:
                with state.cond:
                    state.request_rejoin(f"rebalance failed due to {type(failure.error).__name__}")
            if failure.retry is Retry.NOW:
                continue
            if failure.retry is Retry.NEVER:
                raise failure.error
            self._log.info("group.rebalance_retry", error=str(failure.error))
            attempts += 1
            if not self._backoff(attempts, deadline):
                return False
        with state.cond:
            return state.state is MemberState.STABLE

    def fetch_committed(self, partitions: Iterable[TopicPartition],
                        timeout: float) -> dict[TopicPartition, CommittedOffset]:
        """The group's committed offsets of ``partitions`` (OffsetFetch with require_stable,
        KIP-447): {tp: (offset, leader_epoch, metadata)}; a partition with nothing committed is
        absent. While a transaction's offsets for one of them are pending, the fetch is retried
        (UNSTABLE_OFFSET_COMMIT) - within ``timeout`` seconds, then TimeoutError naming why.
        Raises GroupAuthorizationError, TopicAuthorizationError, a FatalError, ClosedError.

        A request still unanswered when ``timeout`` runs out goes on: the next call for the same
        partitions takes its answer instead of sending another (Java's
        ``pendingCommittedOffsetRequest``), so that a consumer polling with short timeouts gets its
        committed offsets all the same."""
        return self._committed.fetch(partitions, timeout)

    def close(self, timeout: float = DEFAULT_CLOSE_TIMEOUT_S, leave_group: bool | None = None) -> None:
        """Leave (or stay in) the group and stop, within ``timeout`` seconds. Idempotent.

        ``leave_group`` (Java's ``CloseOptions``, KIP-1092): None - the default - sends LeaveGroup
        for a dynamic member (``leave_group_on_close``), never for a static one (its place is kept
        for ``session_timeout_ms``, so a restart takes its partitions back without a rebalance);
        True leaves in either case; False leaves nothing (the coordinator drops the member after
        its session timeout, as if the process had died). Unless ``leave_group`` is False, the
        revoke hook runs first for the partitions still owned (the lost hook if the member was
        dropped). Raises a hook's exception after closing."""
        if self._close_started:
            return
        self._close_started = True
        deadline = time.monotonic() + max(0.0, timeout)
        hook_error: BaseException | None = None
        if leave_group is not False:
            try:
                # the member is still usable here: the hook may look up committed offsets (a
                # consumer's position() does for a partition it has not read yet)
                self._on_leave_prepare()
            except BaseException as exc:  # closing goes on; the hook's error is raised at the end
                hook_error = exc
        self._closing = True
        static = self._settings.group_instance_id is not None
        leave = leave_group is True or (
            leave_group is None and not static and self._settings.leave_group_on_close)
        if leave:
            left = _Left()

            def leave_now() -> None:
                def done() -> None:
                    with self._state.cond:
                        left.done = True
                        self._state.changed()
                maybe_leave_group(self._link, self._state, self._settings, "the consumer is being closed",
                                  static_too=True, done=done)

            self._io.call_soon(leave_now)
            with self._state.cond:
                self._state.cond.wait_for(lambda: left.done, max(0.0, deadline - time.monotonic()))
        with self._state.cond:
            self._state.closed = True
            self._state.changed()
        if not self._io.stop(max(0.0, deadline - time.monotonic())) and timeout > 0:
            # (the thread is a daemon and ends its loop within a second; close(0) does not wait for it)
            self._log.warning("group.close_timed_out", timeout_s=timeout)
        self._log.info("group.closed", left=leave)
        if hook_error is not None:
            raise hook_error

    # -- rebalance steps on the polling thread ------------------------------------------------------

    def _rejoin_needed_or_pending(self) -> bool:
        if self._round is not None:
            return True
        state = self._state
        with state.cond:
            if self._joined_subscription is not None and self._joined_subscription != self._subscription \
                    and not state.rejoin_needed:
                state.request_rejoin("subscription has changed")
            return state.rejoin_needed

    def _start_round(self) -> JoinRound:
        round_ = self._round = JoinRound()
        subscription = self._subscription
        self._joined_subscription = subscription
        payload = encode_subscription(subscription)
        with self._state.cond:
            reason = self._state.rejoin_reason
        self._io.call_soon(lambda: self._rebalancer.start(round_, payload, reason))
        return round_

    def _on_join_prepare(self) -> None:
        """Java's ``onJoinPrepare`` (eager): every owned partition is revoked - or lost, when the
        generation was reset (the member was dropped) - before JoinGroup is sent."""
        with self._state.cond:
            generation = self._state.generation
        owned = self._assignment
        try:
            if generation.is_lost:
                if owned:
                    self._log.info("group.partitions_lost", partitions=len(owned))
                    self._hooks.on_lost(owned)
            else:
                self._hooks.on_revoke(owned)
        finally:
            self._assignment = frozenset()

    def _on_join_complete(self, generation: Generation, assignment: bytes) -> None:
        """Java's ``onJoinComplete``: the new generation becomes the fencing identity, the assignment
        is checked against the subscription and applied, then the assign hook runs."""
        self._joined = generation
        try:
            decoded = decode_assignment(assignment)
        except ValueError as exc:
            raise errors.FatalError(f"the leader of group {self._settings.group_id!r} sent an assignment "
                                    f"this member cannot read ({exc})") from exc
        partitions = frozenset(TopicPartition(t, p) for t, p in decoded.partitions)
        unexpected = {tp.topic for tp in partitions} - self._subscription
        if unexpected:
            with self._state.cond:
                self._state.request_rejoin("received assignment does not match the current subscription")
            self._log.info("group.assignment_mismatch", topics=sorted(unexpected))
            return
        self._assignment = partitions
        self._log.info("group.partitions_assigned", generation=generation.generation_id,
                       partitions=sorted(f"{tp.topic}-{tp.partition}" for tp in partitions))
        self._hooks.on_assign(partitions)

    def _on_leave_prepare(self) -> None:
        """Java's ``onLeavePrepare``: before closing, owned partitions are revoked - or lost, if the
        member was dropped or is mid-rebalance."""
        owned = self._assignment
        if not owned:
            return
        with self._state.cond:
            lost = self._state.generation.is_lost or self._state.state is not MemberState.STABLE
        try:
            if lost:
                self._hooks.on_lost(owned)
            else:
                self._hooks.on_revoke(owned)
        finally:
            self._assignment = frozenset()

    # -- waiting ----------------------------------------------------------------------------------------

    def _ensure_coordinator_ready(self, deadline: float) -> bool:
        return self._waits.ensure_coordinator_ready(deadline)

    def _wait_for(self, done: Callable[[], bool], deadline: float) -> bool:
        return self._waits.wait_for(done, deadline)

    def _backoff(self, attempts: int, deadline: float) -> bool:
        return self._waits.backoff(attempts, deadline)

    def _unusable(self) -> bool:
        """Closed or failed (caller holds the state lock)."""
        return self._closing or self._state.closed or self._state.fatal is not None

    def _raise_if_unusable(self) -> None:
        """ClosedError after close; the fatal error the IO thread recorded (once per member, the
        lost hook runs first for what was owned)."""
        state = self._state
        with state.cond:
            if self._closing or state.closed:
                raise errors.ClosedError("the group member is closed; create a new consumer")
            fatal = state.fatal
        if fatal is None:
            return
        # never called with the state lock held: the lost hook may block
        owned, self._assignment = self._assignment, frozenset()
        if owned:
            self._hooks.on_lost(owned)
        raise fatal

    # -- the IO thread ------------------------------------------------------------------------------------

    def _tick(self, now: float) -> float:
        self._link.tick()
        return self._heartbeats.tick(now)

    def _io_failed(self, exc: BaseException) -> None:
        self._log.error("group.io_thread_failed", error=repr(exc))
        fatal = exc if isinstance(exc, errors.TxnProducerError) else errors.FatalError(
            f"the group member's network thread failed: {type(exc).__name__}: {exc}")
        with self._state.cond:
            self._state.fail(fatal)
