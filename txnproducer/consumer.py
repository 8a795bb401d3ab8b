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
``poll_batch(timeout, ...)``       the same
``position(tp, timeout)``          ``timeout`` or ``default_api_timeout_ms``, then TimeoutError
``seek_to_committed(...)``         ``timeout`` or ``default_api_timeout_ms``
``close(timeout)``                 ``timeout`` or ``default_api_timeout_ms``
=================================  ==============================================================

Group membership plugs in as a collaborator (``_membership``, :class:`Membership`): ``poll()`` lets it
run on the polling thread first, and it hands partitions over through :meth:`on_assign` /
:meth:`on_revoke`. Without one, partitions are assigned with :meth:`assign`, and committed offsets
come from the ``committed_offsets`` callable, if given.

Thread rule: one thread uses a consumer (as the Java client's); only ``close()`` may come from another
thread once the polling thread is done with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import attrs
from kafka.structs import OffsetAndMetadata, TopicPartition

from txnproducer import errors
from txnproducer._internal.fetch.fetcher import Fetcher
from txnproducer._internal.fetch.offsets import OffsetLookups
from txnproducer._internal.fetch.positions import Assignment, FetchState, PartitionState
from txnproducer._internal.fetch.records import BytesColumn, ConsumerRecord, PartitionBatch
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.client import NetworkClient
from txnproducer.consumer_config import ConsumerConfig

__all__ = ["BytesColumn", "ConsumerRecord", "Membership", "PartitionBatch", "TransactionalConsumer"]

#: A source of committed offsets: (partitions, timeout s) -> {tp: OffsetAndMetadata, int or None}.
CommittedOffsets = Callable[[list[TopicPartition], float], Mapping[TopicPartition, Any]]
_IDLE_WAIT_S = 0.1  # longest network wait while nothing is in flight (positions, metadata)


class Membership(Protocol):
    """What the consumer needs of a group member (``_internal/group/member.py``)."""

    def poll(self, deadline: float) -> None:
        """Run due group work on the polling thread; may call the consumer's ``on_revoke`` /
        ``on_assign`` before returning (``deadline``: ``time.monotonic()`` bound)."""

    def fetch_committed(
        self, partitions: list[TopicPartition], timeout: float
    ) -> Mapping[TopicPartition, Any]:
        """The group's committed offsets (OffsetFetch with require_stable)."""

    def group_metadata(self) -> Any:
        """The KIP-447 group metadata for ``send_offsets_to_transaction``."""

    def close(self, timeout: float) -> None:
        """Leave the group."""


def _committed_position(value: Any) -> tuple[int, int] | None:
    """(offset, leader epoch) of a committed offset (OffsetAndMetadata-like, an int, or None)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, -1) if value >= 0 else None
    offset = getattr(value, "offset", -1)
    epoch = getattr(value, "leader_epoch", -1)
    if offset is None or offset < 0:
        return None
    return int(offset), int(epoch if epoch is not None else -1)


class TransactionalConsumer:
    """A read_committed consumer (see the module docstring).

    Settings are keyword arguments (``auto_offset_reset="earliest"``), a mapping in either spelling
    through :meth:`ConsumerConfig.from_mapping`, or a :class:`ConsumerConfig`; a setting the consumer
    cannot honour (``enable_auto_commit=True``, ``isolation_level="read_uncommitted"``) is a
    :class:`~txnproducer.ConfigError` naming the key.
    """

    def __init__(
        self,
        config: ConsumerConfig | None = None,
        *,
        committed_offsets: CommittedOffsets | None = None,
        **settings: Any,
    ) -> None:
        if config is None:
            config = ConsumerConfig.from_mapping(settings)
        elif settings:
            config = attrs.evolve(config, **ConsumerConfig.normalize_keys(settings))
        self._config = config
        self._committed_offsets = committed_offsets
        self._membership: Membership | None = None
        #: the user's rebalance listener (set with subscribe(), once a group member is wired in)
        self._listener: Any = None
        self._log = get_logger("txnproducer.consumer").bind(client_id=config.effective_client_id)
        self._net = NetworkClient(config)
        self._assignment = Assignment()
        self._fetcher = Fetcher(config, self._net, self._assignment)
        self._offsets = OffsetLookups(config, self._net, self._assignment)
        self._default_s = config.default_api_timeout_ms / 1000
        self._closed = False
        self._deserialize = config.key_deserializer is not None or config.value_deserializer is not None

    @property
    def config(self) -> ConsumerConfig:
        return self._config

    # -- assignment -------------------------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Read exactly ``partitions`` (replacing the assignment). Each new partition starts at its
        committed offset when one is known (a group member, or ``committed_offsets``), else by
        ``auto_offset_reset``; kept partitions keep their position."""
        self._check_open("assign")
        wanted = [self._tp(p) for p in partitions]
        _added, removed = self._assignment.assign(wanted)
        self._fetcher.discard(set(removed))
        self._want_metadata()

    def assignment(self) -> set[TopicPartition]:
        return set(self._assignment.partitions())

    def on_assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Hook for the group member (polling thread, inside ``poll()``): add ``partitions`` and run the
        listener's ``on_partitions_assigned``. Not for applications: use :meth:`assign`."""
        added = self._assignment.add(self._tp(p) for p in partitions)
        self._want_metadata()
        if self._listener is not None:
            self._listener.on_partitions_assigned(added)

    def on_revoke(self, partitions: Iterable[TopicPartition]) -> None:
        """Hook for the group member: run the listener's ``on_partitions_revoked`` (while the
        partitions' positions are still there, so the listener can end its transaction), then drop
        them and their buffered records."""
        revoked = [self._tp(p) for p in partitions if self._tp(p) in self._assignment]
        if self._listener is not None:
            self._listener.on_partitions_revoked(revoked)
        self._assignment.remove(revoked)
        self._fetcher.discard(set(revoked))

    # -- reading ------------------------------------------------------------------------------------

    def poll(self, timeout: float = 0.0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Up to ``max_records`` (default ``max_poll_records``) committed records, waiting at most
        ``timeout`` seconds for some; [] when none came. Records come in offset order per partition.

        Raises what a partition keeps (until you seek it): :class:`~txnproducer.OffsetOutOfRangeError`,
        :class:`~txnproducer.LogTruncationError` (``auto_offset_reset="none"``),
        :class:`~txnproducer.CorruptRecordError` (after the records before the bad batch were returned),
        :class:`~txnproducer.TopicAuthorizationError`; :class:`~txnproducer.AuthenticationError`;
        ClosedError."""
        records = self._poll("poll", timeout, max_records, columns=False)
        if self._deserialize and records:
            records = [self._deserialized(r) for r in records]
        return records

    def poll_batch(self, timeout: float = 0.0, max_records: int | None = None) -> list[PartitionBatch]:
        """As :meth:`poll`, the records as columns: a :class:`PartitionBatch` per partition chunk
        (offsets, timestamps, keys, values, headers), with no Python object per record. The
        deserializers do not apply (keys and values stay bytes)."""
        return self._poll("poll_batch", timeout, max_records, columns=True)

    def _poll(self, call: str, timeout: float, max_records: int | None, columns: bool) -> list[Any]:
        self._check_open(call)
        if timeout < 0:
            raise errors.ConfigError(f"timeout must be >= 0 seconds, got {timeout!r}")
        limit = self._config.max_poll_records if max_records is None else max_records
        if limit < 1:
            raise errors.ConfigError(f"max_records must be >= 1, got {max_records!r}")
        deadline = time.monotonic() + timeout
        net = self._net
        while True:
            if self._membership is not None:
                self._membership.poll(deadline)
            self._raise_kept_errors()
            if self._fetcher.has_buffered():
                out = self._fetcher.collect(limit, columns)
                if out:
                    return out
            self._update_positions(deadline)
            self._fetcher.send_fetches()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            net.maintain()
            wait = remaining if self._fetcher.in_flight() else min(remaining, _IDLE_WAIT_S)
            net.poll(wait)
            if net.auth_error is not None:
                raise net.auth_error

    def _deserialized(self, record: ConsumerRecord) -> ConsumerRecord:
        config = self._config
        key, value = record.key, record.value
        if config.key_deserializer is not None and key is not None:
            key = config.key_deserializer(key)
        if config.value_deserializer is not None and value is not None:
            value = config.value_deserializer(value)
        return record._replace(key=key, value=value)

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
        initializing = self._assignment.in_state(FetchState.INITIALIZING)
        if initializing:
            committed = self._committed([s.tp for s in initializing], max(0.0, deadline - time.monotonic()))
            for state in initializing:
                found = _committed_position(committed.get(state.tp))
                if found is not None:
                    state.seek(found[0], found[1], validate=True)
                else:
                    self._reset_or_keep(state)
        self._offsets.send()

    def _committed(self, partitions: list[TopicPartition], timeout: float) -> Mapping[TopicPartition, Any]:
        if self._membership is not None:
            return self._membership.fetch_committed(partitions, timeout)
        if self._committed_offsets is not None:
            return self._committed_offsets(partitions, timeout)
        return {}

    def _reset_or_keep(self, state: PartitionState) -> None:
        strategy = self._config.auto_offset_reset
        if strategy == "none":
            tp = state.tp
            state.error = errors.OffsetOutOfRangeError(
                f"{tp.topic}-{tp.partition} has no committed offset and auto_offset_reset is "
                f"'none': seek() it "
                "(or seek_to_beginning / seek_to_end) and poll again",
                offsets={tp: -1},
            )
            state.state = FetchState.AWAIT_RESET
            return
        state.request_reset(strategy)

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
        found = _committed_position(offset)
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
        ``auto_offset_reset``. Needs a group member or the ``committed_offsets`` callable.
        ``timeout``: seconds, default ``default_api_timeout_ms``."""
        self._check_open("seek_to_committed")
        if self._membership is None and self._committed_offsets is None:
            raise errors.IllegalStateError(
                "seek_to_committed() needs committed offsets: a consumer group member, or the "
                "committed_offsets callable given to TransactionalConsumer(...)"
            )
        states = self._states(partitions, "seek_to_committed")
        bound = self._default_s if timeout is None else timeout
        committed = self._committed([s.tp for s in states], bound)
        self._fetcher.discard({s.tp for s in states})
        for state in states:
            found = _committed_position(committed.get(state.tp))
            if found is not None:
                state.seek(found[0], found[1], validate=True)
            else:
                self._reset_or_keep(state)

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

    def close(self, timeout: float | None = None) -> None:
        """Leave the group (if a member is plugged in) and close the connections (idempotent); at most
        ``timeout`` seconds (default ``default_api_timeout_ms``)."""
        if self._closed:
            return
        self._closed = True
        bound = self._default_s if timeout is None else timeout
        try:
            if self._membership is not None:
                self._membership.close(bound)
        finally:
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
