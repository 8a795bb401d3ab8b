"""TransactionalConsumer: the read side of exactly-once pipelines, read_committed only.

Why our own consumer: kafka-python's ``KafkaConsumer`` spends about 6.8 us of CPU per record on a
read_committed read (issue 28); this one fetches on its own connections, decodes with the compiled
decoder (``_internal/fetch``) and hands records out either as ``ConsumerRecord`` objects (``poll``) or
as columns that spare a Python object per record (``poll_batch``). Its semantics are the Java
consumer's: records of aborted transactions are never returned, control batches are skipped, the
position moves past both, a truncated log after a leader change is detected (KIP-320), offset out of
range follows ``auto_offset_reset``, leader moves are followed (KIP-951 hints) - see
``_internal/fetch/fetcher.py`` and ``offsets.py``.

Units, as the rest of txnproducer: a call's ``timeout`` in seconds, settings in milliseconds. Every
call returns, raises a documented error, or gives up within its bound:

=================================  ==============================================================
``poll(timeout, max_records)``     at most ``timeout`` s (0: what is buffered or arrives at once)
``poll_batch(timeout, ...)``       the same; ``poll_by_partition`` too
``position(tp, timeout)``          ``timeout`` or ``default_api_timeout_ms``, then TimeoutError
``committed(tps, timeout)``        ``timeout`` or ``default_api_timeout_ms``, then TimeoutError
``seek_to_committed(...)``         ``timeout`` or ``default_api_timeout_ms``
``close(timeout)``                 ``timeout`` or ``default_api_timeout_ms``
=================================  ==============================================================

Consumer groups: :meth:`~TransactionalConsumer.subscribe` makes the consumer a member of its
``group_id`` through our own member (``_internal/group``; :class:`Membership` is what the consumer
needs of it) of the protocol ``group_protocol`` names: "classic" (JoinGroup/SyncGroup, eager) or
"consumer" (KIP-848: the broker assigns, partitions move one at a time). ``poll()`` lets the member
run first, on the polling thread: it heartbeats on its own thread, but a rebalance's hooks run here -
the listener's ``on_partitions_revoked`` *before* the partitions can be given to anyone else (classic:
every owned partition, before JoinGroup; consumer protocol: the ones taken away, before the
acknowledging heartbeat), so a loop can end its open transaction first; ``on_partitions_lost`` when
the member was dropped (nothing may be committed for them); ``on_partitions_assigned`` after the new
assignment (classic: all of it; consumer protocol: the added partitions). A newly assigned partition
starts at the group's committed offset (OffsetFetch with ``require_stable``: never an offset an open
transaction is about to move), else by ``auto_offset_reset``; while it waits for that offset, the
partitions the consumer already reads keep flowing. :meth:`~TransactionalConsumer.group_metadata` is what
``send_offsets_to_transaction`` needs for KIP-447 fencing. With :meth:`~TransactionalConsumer.assign`
instead, partitions are the application's; with a ``group_id`` they still start at the group's
committed offsets, else at the ``committed_offsets`` callable's.

Thread rule: one thread uses a consumer (as the Java client's); only ``close()`` may come from another
thread once the polling thread is done with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

from txnproducer import errors
from txnproducer._internal.fetch.completed_fetch import Deserializers
from txnproducer._internal.fetch.fetcher import Fetcher
from txnproducer._internal.fetch.offsets import OffsetLookups
from txnproducer._internal.fetch.positions import Assignment, FetchState, PartitionState, committed_position
from txnproducer._internal.fetch.records import BytesColumn, ConsumerRecord, PartitionBatch
from txnproducer._internal.fetch.starting_offsets import StartingOffsets
from txnproducer._internal.group import (
    ConsumerGroupMember,
    ConsumerGroupSettings,
    GroupMember,
    GroupSettings,
    SubscriptionPattern,
)
from txnproducer._internal.group.hooks import Membership, RebalanceHooks, RebalanceListener
from txnproducer._internal.group.subscription import Subscription, check_listener, subscription_of
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.client import NetworkClient
from txnproducer.consumer_config import ConsumerConfig

__all__ = [
    "BytesColumn",
    "ConsumerRecord",
    "Membership",
    "PartitionBatch",
    "RebalanceListener",
    "SubscriptionPattern",
    "TransactionalConsumer",
]

#: A source of committed offsets: (partitions, timeout s) -> {tp: OffsetAndMetadata, int or None}.
CommittedOffsets = Callable[[list[TopicPartition], float], Mapping[TopicPartition, Any]]
_IDLE_WAIT_S = 0.1  # longest network wait while nothing is in flight (positions, metadata)


class TransactionalConsumer:
    """A read_committed consumer (see the module docstring).

    Settings are keyword arguments (``auto_offset_reset="earliest"``), a mapping in either spelling
    (``TransactionalConsumer({"bootstrap.servers": ..., "group.id": ...})``, as confluent-kafka's
    ``Consumer`` takes it; librdkafka-only keys are refused naming the setting to use), or a
    :class:`ConsumerConfig`, with keyword settings on top; a setting the consumer
    cannot honour (``enable_auto_commit=True``, ``isolation_level="read_uncommitted"``) is a
    :class:`~txnproducer.ConfigError` naming the key. ``read_uncommitted=True`` reads every record
    (open and aborted transactions', up to the high watermark): for readers that are not an
    exactly-once pipeline, such as the Spark source's ``kafka.isolation.level=read_uncommitted``.
    """

    def __init__(
        self,
        config: ConsumerConfig | Mapping[str, Any] | None = None,
        *,
        committed_offsets: CommittedOffsets | None = None,
        read_uncommitted: bool = False,
        **settings: Any,
    ) -> None:
        config = ConsumerConfig.from_arguments(config, settings)
        self._config = config
        self._committed_offsets = committed_offsets
        # the group: its member is made by subscribe(), or for committed offsets of an assign()ed consumer
        self._group = Subscription(_Partitions(self), lambda hooks: self._new_member(hooks),
                                   incremental=config.group_protocol == "consumer")
        self._manual = False  # assign() was called: subscribe() is refused (as Java's)
        self._log = get_logger("txnproducer.consumer").bind(client_id=config.effective_client_id)
        self._net = NetworkClient(config)
        self._assignment = Assignment()
        committed = not read_uncommitted
        self._fetcher = Fetcher(config, self._net, self._assignment, read_committed=committed)
        self._offsets = OffsetLookups(config, self._net, self._assignment, read_committed=committed)
        self._starting = StartingOffsets(self._assignment, config.auto_offset_reset, self._committed)
        self._default_s = config.default_api_timeout_ms / 1000
        self._closed = False
        self._closing = False
        # applied by the fetch layer, record by record, before the position moves past a record: a
        # deserializer that raises leaves the position at that record (RecordDeserializationError)
        self._deserializers = (
            Deserializers(config.key_deserializer, config.value_deserializer)
            if config.key_deserializer is not None or config.value_deserializer is not None
            else None
        )

    @property
    def config(self) -> ConsumerConfig:
        return self._config

    # -- assignment -------------------------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Read exactly ``partitions`` (replacing the assignment). Each new partition starts at its
        committed offset when one is known (the ``committed_offsets`` callable, else the group of
        ``group_id``), else by ``auto_offset_reset``; kept partitions keep their position.
        IllegalStateError after :meth:`subscribe` (the group assigns then)."""
        self._check_open("assign")
        if self._group.topics is not None:
            raise errors.IllegalStateError(
                "assign() called on a consumer that subscribe()d to topics: its group assigns the "
                "partitions; use another consumer to read partitions of your own choosing"
            )
        wanted = [self._tp(p) for p in partitions]
        self._manual = bool(wanted)
        _added, removed = self._assignment.assign(wanted)
        self._fetcher.discard(set(removed))
        self._want_metadata()

    def subscribe(self, topics: str | Iterable[str] | SubscriptionPattern,
                  listener: RebalanceListener | None = None) -> None:
        """Join the consumer group ``group_id`` and read the partitions it assigns of ``topics`` -
        names, or, with ``group_protocol="consumer"``, a :class:`SubscriptionPattern` (a RE2/J
        regular expression the coordinator matches against every topic; the Java client's
        ``subscribe(SubscriptionPattern)``). A later call replaces the subscription. The group is
        joined by the next :meth:`poll`, which runs ``listener``'s callbacks on the polling thread
        (see :class:`RebalanceListener`). Newly assigned partitions start at the group's committed
        offsets, else by ``auto_offset_reset``.

        ConfigError without a ``group_id``, for a bad topic list or listener, or for a pattern under
        the classic protocol; IllegalStateError after :meth:`assign`."""
        self._check_open("subscribe")
        if self._config.group_id is None:
            raise errors.ConfigError(
                "subscribe() needs a consumer group: set group_id (group.id); to read partitions "
                "without a group, assign() them"
            )
        if self._manual:
            raise errors.IllegalStateError(
                "subscribe() called on a consumer that assign()ed partitions: subscribing and "
                "assigning are exclusive; assign([]) first, or use another consumer"
            )
        subscription = subscription_of(topics)
        check_listener(listener)
        self._group.subscribe(subscription, listener)
        if not isinstance(subscription, SubscriptionPattern):
            for topic in subscription:
                if self._net.partitions_for(topic) is None:
                    self._net.request_topic(topic)

    def subscription(self) -> set[str]:
        """The topics of :meth:`subscribe` (empty without one); for a :class:`SubscriptionPattern`, the
        topics of the partitions it brought so far."""
        topics = self._group.topics
        if isinstance(topics, SubscriptionPattern):
            return set(self._assignment.topics())
        return set(topics or ())

    def assignment(self) -> set[TopicPartition]:
        return set(self._assignment.partitions())

    # -- the group member's hooks (polling thread, inside poll() or close()) -----------------------------

    def on_assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Hook for the group member (``RebalanceHooks``): the new assignment. Not for applications:
        use :meth:`assign`."""
        self._group.on_assign(frozenset(self._tp(p) for p in partitions))

    def on_revoke(self, partitions: Iterable[TopicPartition]) -> None:
        """Hook for the group member: partitions taken away (the listener runs first)."""
        self._group.on_revoke(frozenset(self._tp(p) for p in partitions))

    def on_lost(self, partitions: Iterable[TopicPartition]) -> None:
        """Hook for the group member: partitions lost (the member was dropped from its group)."""
        self._group.on_lost(frozenset(self._tp(p) for p in partitions))

    def _apply_assignment(self, partitions: frozenset[TopicPartition]) -> frozenset[TopicPartition]:
        """For the group's hooks: ``partitions`` become the assignment (as the Java
        ``assignFromSubscribed``: new ones start at the committed offsets, kept ones keep their
        positions and buffered records, any other is dropped with its records); returns the added."""
        added, removed = self._assignment.assign(list(partitions))
        if removed:
            self._fetcher.discard(set(removed))
        self._want_metadata()
        return frozenset(added)

    def _drop(self, partitions: Iterable[TopicPartition]) -> None:
        dropped = list(partitions)
        self._assignment.remove(dropped)
        self._fetcher.discard(set(dropped))

    # -- the group ------------------------------------------------------------------------------------

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The consumer's group membership for ``TransactionalProducer.send_offsets_to_transaction``
        (KIP-447: the coordinator refuses offsets of a member the group has moved on from): group id,
        generation and member id of the last completed rebalance - with ``group_protocol="consumer"``,
        the member epoch (-1 while the member is not in the group) -, group instance id. After
        :meth:`assign` (no membership): generation -1 and no member id, as Java's. ConfigError
        without a ``group_id``."""
        self._check_open("group_metadata")
        group_id = self._config.group_id
        if group_id is None:
            raise errors.ConfigError(
                "group_metadata() needs a consumer group: set group_id (group.id); the offsets of a "
                "transaction are committed to that group"
            )
        member = self._group.made
        if member is not None:
            return member.group_metadata()
        return ConsumerGroupMetadata(group_id, -1, "", self._config.group_instance_id)

    def committed(
        self, partitions: TopicPartition | Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The committed offsets of ``partitions`` (assigned or not): {tp: OffsetAndMetadata(offset,
        metadata, leader_epoch), or None where nothing is committed}. Only stable offsets: while a
        transaction's offsets for one of them are pending, the lookup waits for its outcome
        (KIP-447). Within ``timeout`` seconds (default ``default_api_timeout_ms``), then TimeoutError;
        ConfigError without a ``group_id`` (or a ``committed_offsets`` callable);
        GroupAuthorizationError, TopicAuthorizationError."""
        self._check_open("committed")
        wanted = [partitions] if isinstance(partitions, TopicPartition) else [self._tp(p) for p in partitions]
        if self._config.group_id is None and self._committed_offsets is None:
            raise errors.ConfigError(
                "committed() needs a consumer group: set group_id (group.id), or give "
                "TransactionalConsumer(committed_offsets=...)"
            )
        found = self._committed(wanted, self._default_s if timeout is None else timeout)
        out: dict[TopicPartition, OffsetAndMetadata | None] = {}
        for tp in wanted:
            value = found.get(tp)
            position = committed_position(value)
            out[tp] = (
                None
                if position is None
                else OffsetAndMetadata(position[0], getattr(value, "metadata", "") or "", position[1])
            )
        return out

    def _group_member(self) -> Membership | None:
        """The group member (made once, with ``group_id``): it joins only after subscribe()."""
        return self._group.member if self._config.group_id is not None else None

    def _new_member(self, hooks: RebalanceHooks) -> Membership:
        config = self._config
        assert config.group_id is not None
        backoff, backoff_max = max(1, config.retry_backoff_ms), max(1, config.retry_backoff_max_ms)
        if config.group_protocol == "consumer":
            return ConsumerGroupMember(ConsumerGroupSettings(
                group_id=config.group_id, group_instance_id=config.group_instance_id,
                rebalance_timeout_ms=config.max_poll_interval_ms,
                remote_assignor=config.group_remote_assignor, rack_id=config.client_rack,
                retry_backoff_ms=backoff, retry_backoff_max_ms=backoff_max,
                request_timeout_ms=config.request_timeout_ms), hooks, connection=config)
        return GroupMember(GroupSettings(
            group_id=config.group_id, group_instance_id=config.group_instance_id,
            session_timeout_ms=config.session_timeout_ms, heartbeat_interval_ms=config.heartbeat_interval_ms,
            max_poll_interval_ms=config.max_poll_interval_ms, assignors=config.partition_assignment_strategy,
            metadata_max_age_ms=max(1, config.metadata_max_age_ms), retry_backoff_ms=backoff,
            retry_backoff_max_ms=backoff_max, request_timeout_ms=config.request_timeout_ms),
            hooks, connection=config)

    # -- reading ------------------------------------------------------------------------------------

    def poll(self, timeout: float = 0.0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Up to ``max_records`` (default ``max_poll_records``) committed records, waiting at most
        ``timeout`` seconds for some; [] when none came, or at once when a position moved past markers
        or aborted records only (as Java's). Records come in offset order per partition.

        Raises what a partition keeps (until you seek it): :class:`~txnproducer.OffsetOutOfRangeError`,
        :class:`~txnproducer.LogTruncationError` (``auto_offset_reset="none"``),
        :class:`~txnproducer.CorruptRecordError` (after the records before the bad batch were returned),
        :class:`~txnproducer.TopicAuthorizationError`; :class:`~txnproducer.AuthenticationError`;
        :class:`~txnproducer.RecordDeserializationError` (a deserializer raised: the records before
        the failing one are returned first, the position stays at it); ClosedError."""
        return self._poll("poll", timeout, max_records, columns=False)

    def poll_batch(self, timeout: float = 0.0, max_records: int | None = None) -> list[PartitionBatch]:
        """As :meth:`poll`, the records as columns: a :class:`PartitionBatch` per partition chunk
        (offsets, timestamps, keys, values, headers), with no Python object per record. The
        deserializers do not apply (keys and values stay bytes)."""
        return self._poll("poll_batch", timeout, max_records, columns=True)

    def poll_by_partition(
        self, timeout: float = 0.0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """As :meth:`poll`, the records by partition (kafka-python's ``poll()`` shape, Java's
        ``ConsumerRecords.records(tp)``): {tp: its records in offset order}, {} when none came. For
        loops that track or commit per partition."""
        chunks = self._poll("poll_by_partition", timeout, max_records, columns=False, chunks=True)
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        for chunk in chunks:
            first = chunk[0]
            tp = TopicPartition(first.topic, first.partition)
            if tp in out:
                out[tp].extend(chunk)
            else:
                out[tp] = chunk
        return out

    def _poll(
        self, call: str, timeout: float, max_records: int | None, columns: bool, chunks: bool = False
    ) -> list[Any]:
        self._check_open(call)
        if timeout < 0:
            raise errors.ConfigError(f"timeout must be >= 0 seconds, got {timeout!r}")
        limit = self._config.max_poll_records if max_records is None else max_records
        if limit < 1:
            raise errors.ConfigError(f"max_records must be >= 1, got {max_records!r}")
        deadline = time.monotonic() + timeout
        net = self._net
        membership = self._group.made if self._group.topics is not None else None
        deserializers = None if columns else self._deserializers  # columns stay bytes
        while True:
            if membership is not None:
                membership.poll(deadline)
            self._raise_kept_errors()
            if self._fetcher.has_buffered():
                out = self._fetcher.collect(limit, columns, chunks, deserializers=deserializers)
                if out or self._fetcher.position_advanced:  # past markers only: return, as Java's
                    return out
            self._update_positions(deadline)
            self._fetcher.send_fetches()
            remaining = deadline - time.monotonic()
            net.maintain()
            wait = remaining if self._fetcher.in_flight() else min(remaining, _IDLE_WAIT_S)
            net.poll(max(0.0, wait))  # poll(0) too: one look at what arrived, or nothing would move
            if net.auth_error is not None:
                raise net.auth_error
            if remaining <= 0:
                if not self._fetcher.has_buffered():
                    return []
                return self._fetcher.collect(limit, columns, chunks, deserializers=deserializers)

    def _raise_kept_errors(self) -> None:
        for state in self._assignment:
            if state.error is not None:
                raise state.error

    # -- positions ------------------------------------------------------------------------------------

    def _update_positions(self, deadline: float) -> None:
        """Give every partition without a position one (committed offset, else the reset policy),
        take metadata's leader epochs, and send the resets and validations that are due."""
        self._net.maintain()
        self._fetcher.update_leaders()
        self._starting.initialize(deadline)
        self._offsets.send()

    def _committed(self, partitions: list[TopicPartition], timeout: float) -> Mapping[TopicPartition, Any]:
        if self._committed_offsets is not None:
            return self._committed_offsets(partitions, timeout)
        member = self._group_member()
        if member is not None:
            return member.fetch_committed(partitions, timeout)
        return {}

    def position(self, partition: TopicPartition | tuple[str, int], timeout: float | None = None) -> int:
        """The offset of the next record ``poll()`` returns for ``partition`` (finding it first if
        needed: committed offset or reset); TimeoutError after ``timeout`` seconds (default
        ``default_api_timeout_ms``)."""
        self._check_open("position")
        state = self._state(partition, "position")
        bound = self._default_s if timeout is None else timeout
        deadline = time.monotonic() + bound
        while state.state is not FetchState.FETCHING or state.position is None:
            if state.error is not None:
                raise state.error
            self._update_positions(deadline)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.TimeoutError(
                    f"the position of {state.tp.topic}-{state.tp.partition} was not found within {bound} s "
                    "(timeout or default_api_timeout_ms)"
                )
            self._net.poll(min(remaining, _IDLE_WAIT_S))
            if self._net.auth_error is not None:
                raise self._net.auth_error
        return state.position

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int | OffsetAndMetadata) -> None:
        """Read ``partition`` from ``offset`` on; buffered records of it are dropped and a kept error is
        cleared. An ``OffsetAndMetadata`` with a leader epoch is validated against the leader first
        (KIP-320), as a committed offset is."""
        self._check_open("seek")
        state = self._state(partition, "seek")
        found = committed_position(offset)
        if found is None:
            raise errors.ConfigError(f"offset must be an int >= 0 or an OffsetAndMetadata, got {offset!r}")
        self._fetcher.discard({state.tp})
        state.seek(found[0], found[1], validate=found[1] >= 0)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Read from the earliest offset (looked up at the next poll)."""
        self._seek_to("seek_to_beginning", partitions, "earliest")

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Read from the last stable offset (looked up at the next poll)."""
        self._seek_to("seek_to_end", partitions, "latest")

    def _seek_to(self, call: str, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        self._check_open(call)
        states = self._states(partitions, call)
        self._fetcher.discard({s.tp for s in states})
        for state in states:
            state.request_reset(strategy)

    def seek_to_committed(
        self, partitions: Iterable[TopicPartition] | None = None, timeout: float | None = None
    ) -> None:
        """Rewind ``partitions`` (default: all assigned) to their committed offsets - what an
        exactly-once loop does after aborting a transaction; a partition without one follows
        ``auto_offset_reset``. Needs a ``group_id`` or the ``committed_offsets`` callable
        (ConfigError); TimeoutError after ``timeout`` seconds (default ``default_api_timeout_ms``)."""
        self._check_open("seek_to_committed")
        if self._config.group_id is None and self._committed_offsets is None:
            raise errors.ConfigError(
                "seek_to_committed() needs committed offsets: set group_id (group.id), or give "
                "TransactionalConsumer(committed_offsets=...)"
            )
        states = self._states(partitions, "seek_to_committed")
        bound = self._default_s if timeout is None else timeout
        committed = self._committed([s.tp for s in states], bound)
        self._fetcher.discard({s.tp for s in states})
        self._starting.place(states, committed)

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching ``partitions`` (their buffered records are dropped; positions stay)."""
        for tp in partitions:
            self._state(tp, "pause").paused = True
        self._fetcher.discard({self._tp(p) for p in partitions})

    def resume(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._state(tp, "resume").paused = False

    def paused(self) -> set[TopicPartition]:
        return {s.tp for s in self._assignment if s.paused}

    # -- lifecycle --------------------------------------------------------------------------------------

    def close(self, timeout: float | None = None, leave_group: bool | None = None) -> None:
        """Close the consumer (idempotent), within ``timeout`` seconds (default
        ``default_api_timeout_ms``). A subscribed consumer first runs its listener's
        ``on_partitions_revoked`` for the partitions it owns, then a dynamic member leaves its group
        (its partitions move on at once) and a static one (``group_instance_id``) stays in it - under
        the consumer protocol it leaves with epoch -2, which keeps its place -, so that its restart
        takes its partitions back without a rebalance; the coordinator drops it after its session
        timeout if it does not come back. ``leave_group`` (Java's
        ``CloseOptions``): True leaves in either case; False leaves nothing and runs no listener (as
        if the process had died). Raises the listener's exception, after closing."""
        if self._closed or self._closing:
            return
        self._closing = True  # the listener may still use the consumer while the member revokes
        bound = self._default_s if timeout is None else timeout
        try:
            member = self._group.made
            if member is not None:
                member.close(bound, leave_group if self._group.topics is not None else False)
        finally:
            self._closed = True
            self._fetcher.discard()
            self._net.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> TransactionalConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ----------------------------------------------------------------------------------------

    def _check_open(self, call: str) -> None:
        if self._closed:
            raise errors.ClosedError(f"{call}() called on a closed consumer; create a new one")

    @staticmethod
    def _tp(partition: Any) -> TopicPartition:
        if isinstance(partition, TopicPartition):
            return partition
        if (
            isinstance(partition, tuple)
            and len(partition) == 2
            and isinstance(partition[0], str)
            and isinstance(partition[1], int)
            and partition[1] >= 0
        ):
            return TopicPartition(partition[0], partition[1])
        raise errors.ConfigError(
            f"a partition must be a TopicPartition or (topic, partition), got {partition!r}"
        )

    def _state(self, partition: Any, call: str) -> PartitionState:
        tp = self._tp(partition)
        state = self._assignment.get(tp)
        if state is None:
            raise errors.IllegalStateError(
                f"{call}() of {tp.topic}-{tp.partition}, which is not assigned to this consumer; "
                "assign() it first"
            )
        return state

    def _states(self, partitions: Iterable[TopicPartition] | None, call: str) -> list[PartitionState]:
        if partitions is None:
            return list(self._assignment)
        return [self._state(p, call) for p in partitions]

    def _want_metadata(self) -> None:
        for topic in self._assignment.topics():
            if self._net.partitions_for(topic) is None:
                self._net.request_topic(topic)
        self._net.maintain()

    def __repr__(self) -> str:
        return (
            f"TransactionalConsumer(client_id={self._config.effective_client_id!r}, "
            f"partitions={len(self._assignment)}, closed={self._closed})"
        )


class _Partitions:
    """The consumer's partitions as the group's hooks change them (``PartitionsOwner``)."""

    def __init__(self, consumer: TransactionalConsumer) -> None:
        self._consumer = consumer

    def apply_assignment(self, partitions: frozenset[TopicPartition]) -> frozenset[TopicPartition]:
        return self._consumer._apply_assignment(partitions)

    def owned(self) -> frozenset[TopicPartition]:
        return frozenset(self._consumer._assignment.partitions())

    def drop(self, partitions: frozenset[TopicPartition]) -> None:
        self._consumer._drop(partitions)

    def wakeup(self) -> None:
        self._consumer._net.wakeup()
