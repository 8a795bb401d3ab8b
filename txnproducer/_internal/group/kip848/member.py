"""A consumer group member of the KIP-848 consumer protocol: :class:`ConsumerGroupMember`, behind the same
interface as the classic :class:`~txnproducer._internal.group.classic.member.GroupMember`.

Why it reconciles on the polling thread: as in the Java client, partitions change hands only inside a
``poll``. The IO thread (``heartbeat_loop.py``) heartbeats and turns each new assignment into a target;
the next :meth:`ConsumerGroupMember.poll` reconciles it in the Java client's order
(``AbstractMembershipManager.maybeReconcile``): the revoke hook for the partitions the target no longer
holds - an exactly-once owner ends the transaction that read them *before* the coordinator can give
them to anyone, since they move only once this member's next heartbeat stops listing them - then the
assign hook with the new assignment; then the acknowledgment goes at once. Partitions the target keeps
are never touched, and a member that reconciles slowly delays only the partitions it gives up.

The same ``poll`` runs the lost hook when the member was fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID:
another member may own them already) and rejoins with epoch 0, under the member id it made at startup
and keeps for its lifetime (KIP-1082); and when it left because the application did not poll within
``max_poll_interval_ms``. A fatal error is raised by the next call, after the lost hook.

:meth:`~ConsumerGroupMember.group_metadata` carries the member epoch as the generation (KIP-447 with
KIP-848: the coordinator fences a TxnOffsetCommit of another epoch with ILLEGAL_GENERATION), and the
committed-offset lookups name the member and its epoch (OffsetFetch v9).

Simplifications: a hook's exception is raised out of ``poll`` after the assignment it was called for
is applied and acknowledged (Java keeps a failed ``onPartitionsAssigned``'s partitions unfetched and
retries it at the next reconciliation); the client-side assignors of KIP-848 (``ClientAssignors``,
never implemented by Kafka) are not offered.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable

from kafka.structs import ConsumerGroupMetadata, TopicPartition
from kafka.structs import MemberState as KafkaMemberState

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.network.settings import ConnectionSettings
from txnproducer._internal.protocol.consumer_group_heartbeat import LEAVE_GROUP_MEMBER_EPOCH

from ..committed import CommittedOffsets
from ..coordinator import CoordinatorLink
from ..hooks import RebalanceHooks, SubscriptionPattern
from ..io_thread import GroupIo
from ..offset_fetch import CommittedOffset
from ..waits import MemberWaits
from . import consumer_group_heartbeat as cgh
from .heartbeat_loop import HeartbeatLoop
from .settings import ConsumerGroupSettings
from .state import NONE, LocalAssignment, MemberFacts, MemberState, new_member_id

__all__ = ["ConsumerGroupMember"]

_IN_REBALANCE = (MemberState.JOINING, MemberState.RECONCILING, MemberState.ACKNOWLEDGING)


class ConsumerGroupMember:
    """One member of a consumer-protocol group (see the module docstring).

    ``settings``: the member's settings; ``hooks``: the owner's :class:`RebalanceHooks` (and, if it
    has one, its ``wakeup()``: called from the IO thread when the polling thread has work - a
    reconciliation, a fencing, committed offsets that arrived); ``connection``: the connection
    settings. Creating it starts its IO thread only; the first :meth:`poll` after :meth:`subscribe`
    joins.
    """

    def __init__(self, settings: ConsumerGroupSettings, hooks: RebalanceHooks, *,
                 connection: ConnectionSettings) -> None:
        self._settings = settings
        self._hooks = hooks
        self._wakeup: Callable[[], None] | None = getattr(hooks, "wakeup", None)
        self._facts = MemberFacts(new_member_id())
        self._log = get_logger("txnproducer.group").bind(group_id=settings.group_id,
                                                         member_id=self._facts.member_id)
        self._io = GroupIo(NetworkClient(connection), name=f"txnproducer-group-{settings.group_id}",
                           setup_timeout_s=connection.socket_connection_setup_timeout_ms / 1000,
                           tick=self._tick, on_error=self._io_failed)
        self._link = CoordinatorLink(self._io, self._facts, settings.group_id)
        self._loop = HeartbeatLoop(self._io, self._link, self._facts, settings, self._wake_owner)
        self._waits = MemberWaits(self._facts, self._link, self._io, backoff_ms=settings.retry_backoff_ms,
                                  backoff_max_ms=settings.retry_backoff_max_ms, unusable=self._unusable,
                                  raise_if_unusable=self._raise_if_unusable)
        self._committed = CommittedOffsets(self._facts, self._link, self._io, self._waits,
                                           identity=self._identity, on_answer=self._wake_owner)
        self._subscription: cgh.Subscription | None = None
        self._subscribed = False  # subscribe() called since the member last left (Java's subscriptionUpdated)
        self._assignment: frozenset[TopicPartition] = frozenset()
        self._closing = False
        self._close_started = False
        self._io.start()

    # -- reading (any thread) -------------------------------------------------------------------------

    @property
    def settings(self) -> ConsumerGroupSettings:
        return self._settings

    @property
    def member_id(self) -> str:
        """The member id this member made at startup and keeps (KIP-1082)."""
        return self._facts.member_id

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member owns now (its reconciled assignment)."""
        return self._assignment

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The KIP-447 fencing identity for ``send_offsets_to_transaction``: the group id, the member
        epoch as the generation (-1 while the member is not in the group), the member id and the
        group instance id, as the Java client's ``groupMetadata()`` under the consumer protocol;
        ``state`` is STABLE, REBALANCING (joining or reconciling) or UNJOINED."""
        facts = self._facts
        with facts.cond:
            epoch, state = facts.epoch, facts.state
        if state is MemberState.STABLE:
            kafka_state = KafkaMemberState.STABLE
        elif state in _IN_REBALANCE:
            kafka_state = KafkaMemberState.REBALANCING
        else:
            kafka_state = KafkaMemberState.UNJOINED
        return ConsumerGroupMetadata(self._settings.group_id, epoch if epoch > 0 else -1, facts.member_id,
                                     self._settings.group_instance_id, kafka_state)

    # -- the polling thread ---------------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str] | SubscriptionPattern) -> None:
        """Subscribe to topic names or to a :class:`SubscriptionPattern` (a RE2/J regular expression the
        coordinator matches against the cluster's topics), replacing the previous subscription: the
        next heartbeat carries it, and the coordinator's next assignment follows it. ConfigError for
        no topic or a name that is not one."""
        if isinstance(topics, SubscriptionPattern):
            subscription: cgh.Subscription = topics.pattern
        else:
            names = [topics] if isinstance(topics, str) else list(topics)
            if not names or not all(isinstance(t, str) and t for t in names):
                raise errors.ConfigError(f"topics must be one or more topic names, got {topics!r}")
            subscription = frozenset(names)
        self._raise_if_unusable()
        with self._facts.cond:
            self._subscription = subscription
            self._loop.subscription = subscription
            self._subscribed = True
        self._io.wakeup()

    def poll(self, deadline: float) -> bool:
        """Keep this member in its group; call it from the polling thread at least every
        ``max_poll_interval_ms``. It joins after :meth:`subscribe`, reconciles a new assignment (the
        revoke hook, then the assign hook), runs the lost hook after a fencing and rejoins. It does not
        wait for the coordinator: ``deadline`` is not used (the rebalance goes on on the IO thread).
        Returns True when the member is STABLE. Raises a hook's exception, FencedInstanceIdError,
        UnreleasedInstanceIdError, GroupMaxSizeReachedError, UnsupportedAssignorError,
        InvalidRegularExpressionError, GroupAuthorizationError, UnsupportedVersionError, another
        FatalError, IllegalStateError before :meth:`subscribe`, ClosedError after :meth:`close`."""
        self._raise_if_unusable()
        if self._subscription is None:
            raise errors.IllegalStateError("poll() called before subscribe(topics): a member needs a "
                                           "subscription to join its group")
        facts = self._facts
        with facts.cond:
            expired = self._loop.polled(time.monotonic())
            state = facts.state
            if state is MemberState.UNSUBSCRIBED and self._subscribed:
                self._subscribed = False
                facts.to_joining()
                self._io.wakeup()
                state = facts.state
        if expired:
            self._log.warning("group.rejoining_after_poll_interval",
                              max_poll_interval_ms=self._settings.rebalance_timeout_ms)
        if state in (MemberState.FENCED, MemberState.STALE):
            self._release_lost()
        elif state is MemberState.RECONCILING:
            self._reconcile()
        with facts.cond:
            return facts.state is MemberState.STABLE

    def fetch_committed(self, partitions: Iterable[TopicPartition],
                        timeout: float) -> dict[TopicPartition, CommittedOffset]:
        """The group's committed offsets of ``partitions`` (OffsetFetch v9 with require_stable, naming
        this member and its epoch): as the classic member's ``fetch_committed``."""
        return self._committed.fetch(partitions, timeout)

    def close(self, timeout: float = 30.0, leave_group: bool | None = None) -> None:
        """Leave (or stay in) the group and stop, within ``timeout`` seconds. Idempotent.

        ``leave_group`` (Java's ``CloseOptions``, KIP-1092): None - the default - leaves as the Java
        client does: a dynamic member with epoch -1 (its partitions move on at once), a static one with
        epoch -2 (the coordinator keeps its partitions for its instance id until
        ``group.consumer.session.timeout.ms``, so a restart takes them back without a rebalance); True
        leaves with -1 in either case; False sends nothing and runs no hook (as if the process had
        died). Unless ``leave_group`` is False, the revoke hook runs first for the partitions still
        owned (the lost hook when the member is not in the group). Raises a hook's exception after
        closing."""
        if self._close_started:
            return
        self._close_started = True
        deadline = time.monotonic() + max(0.0, timeout)
        hook_error: BaseException | None = None
        facts = self._facts
        left = False
        if leave_group is not False:
            try:
                left = self._leave(leave_group, deadline)
            except BaseException as exc:  # closing goes on; the hook's error is raised at the end
                hook_error = exc
        self._closing = True
        with facts.cond:
            facts.closed = True
            facts.changed()
        if not self._io.stop(max(0.0, deadline - time.monotonic())) and timeout > 0:
            self._log.warning("group.close_timed_out", timeout_s=timeout)
        self._log.info("group.closed", left=left)
        if hook_error is not None:
            raise hook_error

    # -- reconciliation (polling thread) --------------------------------------------------------------

    def _reconcile(self) -> None:
        """Java's ``maybeReconcile``: revoke what the target drops, then assign, then acknowledge."""
        facts = self._facts
        with facts.cond:
            if facts.state is not MemberState.RECONCILING or facts.reconciling or facts.target_reconciled:
                return
            target = facts.target
            resolved = {t: ps for t, ps in target.partitions.items() if t in facts.names}
            names = {t: facts.names[t] for t in resolved}
            if not facts.current.is_none and resolved == dict(facts.current.partitions):
                # the unresolved rest waits for its names; acknowledge what is already ours
                facts.current = LocalAssignment(target.local_epoch, resolved)
                facts.transition(MemberState.ACKNOWLEDGING)
                self._loop.heartbeat_soon()
                return
            facts.reconciling = True
            facts.rejoined_while_reconciling = False
        assigned = frozenset(TopicPartition(names[t], p) for t, ps in resolved.items() for p in ps)
        owned = self._assignment
        revoked = owned - assigned
        added = assigned - owned
        self._log.info("group.reconciling", epoch=facts.epoch, local_epoch=target.local_epoch,
                       assigned=_names(assigned), added=_names(added), revoked=_names(revoked))
        try:
            if revoked:
                try:
                    self._hooks.on_revoke(revoked)
                finally:
                    self._assignment = owned - revoked
            if self._reconciliation_interrupted():
                return
            self._assignment = assigned
            try:
                self._hooks.on_assign(assigned)
            finally:
                with facts.cond:
                    if facts.state is MemberState.RECONCILING and not facts.rejoined_while_reconciling:
                        facts.current = LocalAssignment(target.local_epoch, resolved)
                        facts.transition(MemberState.ACKNOWLEDGING)
                        self._loop.heartbeat_soon()
        finally:
            with facts.cond:
                facts.reconciling = False
                facts.rejoined_while_reconciling = False

    def _reconciliation_interrupted(self) -> bool:
        """Java's ``maybeAbortReconciliation``: the member left RECONCILING (fenced, failed, closing)
        or rejoined while the revoke hook ran."""
        facts = self._facts
        with facts.cond:
            return facts.state is not MemberState.RECONCILING or facts.rejoined_while_reconciling

    def _release_lost(self) -> None:
        """FENCED or STALE: the lost hook for what was owned (another member may own it already),
        then rejoin (Java's ``transitionToFenced`` / ``maybeRejoinStaleMember``)."""
        owned, self._assignment = self._assignment, frozenset()
        try:
            if owned:
                self._log.info("group.partitions_lost", partitions=len(owned))
                self._hooks.on_lost(owned)
        finally:
            facts = self._facts
            with facts.cond:
                facts.current = NONE
                if facts.state in (MemberState.FENCED, MemberState.STALE):
                    facts.poll_expired = False
                    facts.to_joining()
                    self._io.wakeup()

    def _leave(self, leave_group: bool | None, deadline: float) -> bool:
        """Release the assignment (revoke hook, or lost hook outside the group) and send the leave
        heartbeat, waiting for its answer until ``deadline``; True if one was sent."""
        facts = self._facts
        with facts.cond:
            state = facts.state
            in_group = state.in_group and state not in (MemberState.PREPARE_LEAVING, MemberState.LEAVING)
            if in_group:
                facts.transition(MemberState.PREPARE_LEAVING)
            epoch = facts.epoch
        owned, self._assignment = self._assignment, frozenset()
        if owned:
            if in_group and epoch > 0:
                self._hooks.on_revoke(owned)
            else:
                self._hooks.on_lost(owned)
        if not in_group:
            return False
        with contextlib.suppress(errors.TxnProducerError):  # best effort: else the session runs out
            self._waits.ensure_coordinator_ready(deadline)
        with facts.cond:
            if facts.state is not MemberState.PREPARE_LEAVING:
                return False  # fenced or failed meanwhile: nothing to leave
            if leave_group is True:
                self._loop.leave_with = LEAVE_GROUP_MEMBER_EPOCH
            answered = facts.leaves_answered
            facts.epoch = self._loop.leave_epoch()
            facts.current = NONE
            facts.transition(MemberState.LEAVING)
            self._log.info("group.leaving", epoch=facts.epoch)
        self._io.wakeup()
        with facts.cond:
            facts.cond.wait_for(lambda: facts.leaves_answered != answered or facts.fatal is not None,
                                max(0.0, deadline - time.monotonic()))
        return True

    # -- helpers ---------------------------------------------------------------------------------------

    def _identity(self) -> tuple[str, int] | None:
        """(member id, epoch) for OffsetFetch v9 while in the group (IO thread)."""
        facts = self._facts
        with facts.cond:
            return (facts.member_id, facts.epoch) if facts.epoch > 0 else None

    def _wake_owner(self) -> None:
        if self._wakeup is not None:
            self._wakeup()

    def _tick(self, now: float) -> float:
        self._link.tick()
        return self._loop.tick(now)

    def _unusable(self) -> bool:
        """Closed or failed (caller holds the state lock)."""
        return self._closing or self._facts.closed or self._facts.fatal is not None

    def _raise_if_unusable(self) -> None:
        """ClosedError after close; the fatal error the IO thread recorded (the lost hook runs first
        for what was owned)."""
        facts = self._facts
        with facts.cond:
            if self._closing or facts.closed:
                raise errors.ClosedError("the group member is closed; create a new consumer")
            fatal = facts.fatal
        if fatal is None:
            return
        owned, self._assignment = self._assignment, frozenset()
        if owned:
            self._hooks.on_lost(owned)
        raise fatal

    def _io_failed(self, exc: BaseException) -> None:
        self._log.error("group.io_thread_failed", error=repr(exc))
        fatal = exc if isinstance(exc, errors.TxnProducerError) else errors.FatalError(
            f"the group member's network thread failed: {type(exc).__name__}: {exc}")
        with self._facts.cond:
            self._facts.fail(fatal)
        self._wake_owner()


def _names(partitions: frozenset[TopicPartition]) -> list[str]:
    return sorted(f"{tp.topic}-{tp.partition}" for tp in partitions)
