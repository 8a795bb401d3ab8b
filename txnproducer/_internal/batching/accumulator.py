"""RecordAccumulator: per-partition queues of record batches between ``send()`` and the Sender.

Application threads append records; the Sender thread asks which leaders have sendable data
(:meth:`RecordAccumulator.ready`), drains batches per leader (:meth:`RecordAccumulator.drain`)
and reports their outcome (:meth:`complete`, :meth:`fail`, :meth:`reenqueue`).

Why sequence numbers are assigned at *drain* time and never changed afterwards: the broker
de-duplicates a resent batch by (producer id, epoch, base sequence). A batch that is retried
must therefore be byte-identical, and a batch must not get a sequence before it is certain to
be the next one sent for its partition (otherwise a later batch could overtake it).

Ordering: a partition has at most ``max_in_flight`` batches with assigned sequences that are not
final ("outstanding"). A retried batch goes back to the front of its queue in sequence order
and is only resent once it is the lowest outstanding sequence of its partition, so the broker
always sees sequences in order (the Java client's rule).

Memory: a batch reserves part of ``buffer_memory`` when it starts (16 KiB, the Java client's
whole ``batch.size``, or less when ``batch_size`` is smaller, or a larger single record's size),
and grows its reservation, doubling it up to ``batch_size``, when a record would not fit in it.
The reservation is released when the batch reaches a final state. Why not the Java client's
``BufferPool`` rule (a batch reserves all of ``batch_size`` when it starts): our default batch is
256 KiB, which halves the Sender's work per record against 16 KiB (docs/performance.md), and
reserving all of it up front would let only 128 partitions hold an open batch in the default
32 MiB. Appending within the reservation needs no accounting, which keeps the per-record path
short (the compiled append falls back to this module when a record does not fit). A batch that
cannot grow because the pool is exhausted is closed (sendable at once, its memory comes back
when it completes) and the record starts a new batch. Starting a batch blocks while the pool is
exhausted, at most ``max_block_s``, then raises :class:`~txnproducer.errors.TimeoutError` (at once
for 0: a caller that must not block then waits on ``memory_freed`` and tries again).

Why one piece: every method is a critical section over the same state (the queues, the
outstanding sequences, the incomplete batches, the memory in use), whose rules above hold
together under one lock; split, one lock's invariants would be spread over several modules.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from time import time_ns as _time_ns
from typing import Any, Protocol

from kafka.record.default_records import DefaultRecordBatch
from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.accel import SPEEDUPS as _SPEEDUPS
from txnproducer._internal.batching.batch import ProducerBatch, RecordFuture
from txnproducer._internal.listeners import Listeners
from txnproducer._internal.protocol.record_batch import (
    BATCH_HEADER_SIZE,
    MAX_RECORD_OVERHEAD,
    NO_HEADERS_ENCODED,
    ActiveBatchEncoder,
    add_sequence,
    encode_headers,
    payload_size,
)

__all__ = [
    "BATCH_HEADER_SIZE",
    "COMPRESSION_CODECS",
    "RecordAccumulator",
    "TransactionGate",
    "encoding_error",
]

_RECORD_OVERHEAD: int = MAX_RECORD_OVERHEAD
#: What a batch reserves of buffer_memory when it starts (at most batch_size): the Java client's
#: default batch.size, so a partition's open batch costs what it costs there until it grows.
FIRST_RESERVATION: int = 16384

#: compression_type setting -> codec id in the batch attributes.
COMPRESSION_CODECS: dict[str, int] = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def encoding_error(batch: ProducerBatch, cause: Exception) -> errors.BatchEncodingError:
    """What the records of a batch that could not be encoded fail with (:meth:`RecordAccumulator.drain`)."""
    error = errors.BatchEncodingError(
        f"{batch.record_count} record(s) for {batch.tp.topic}-{batch.tp.partition} could not be encoded "
        f"into a batch ({type(cause).__name__}: {cause}) and were not sent: call abort_transaction() and "
        f"start a new transaction (and please report this error)")
    error.__cause__ = cause
    return error


class TransactionGate(Protocol):
    """The part of the transaction manager the accumulator needs: whether a partition may be drained,
    whether the broker knows the producer there, and the sequence numbers to stamp at drain time."""

    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool: ...
    def has_broker_state(self, tp: TopicPartition) -> bool: ...
    def assign_sequence(self, tp: TopicPartition, record_count: int) -> int: ...
    def release_sequence(self, tp: TopicPartition, base_sequence: int, record_count: int) -> None: ...
    @property
    def producer_id_and_epoch(self) -> Any: ...


class RecordAccumulator:
    """Thread-safe batch queues; see the module docstring for the rules it enforces."""

    def __init__(
        self,
        *,
        transaction_manager: TransactionGate,
        batch_size: int = 262144,
        linger_ms: int = 5,
        buffer_memory: int = 33554432,
        max_request_size: int = 1048576,
        compression_type: str = "none",
        compression_gzip_level: int = -1,
        delivery_timeout_ms: int = 120000,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1000,
        max_in_flight: int = 5,
        wakeup: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sender_looks_by: Callable[[], float] | None = None,
    ) -> None:
        self._tm = transaction_manager
        self.batch_size = batch_size
        self.linger_s = linger_ms / 1000
        self.buffer_memory = buffer_memory
        self.max_request_size = max_request_size
        self._max_record_total = min(buffer_memory, max_request_size)  # one check per batch
        # a batch's capacity (bytes, before compression): batch_size, unless a single record may
        # not be that large (then a record that fits into a batch always passes the size check)
        self._full_at = max(1, min(batch_size, self._max_record_total))
        self._codec = COMPRESSION_CODECS[compression_type]
        # the compiled encoder when the accelerator runs, else the pure-Python one: chosen once, here
        self._encoder: Callable[..., Any] = ActiveBatchEncoder
        self._gzip_level = compression_gzip_level
        self.delivery_timeout_s = delivery_timeout_ms / 1000
        self._max_wait_s = (delivery_timeout_ms + request_timeout_ms) / 1000
        self._retry_backoff_s = retry_backoff_ms / 1000
        self._retry_backoff_max_s = max(retry_backoff_max_ms, retry_backoff_ms) / 1000
        self.max_in_flight = max_in_flight
        self._wakeup = wakeup
        self._clock = clock
        # when the Sender will look at the batches again at the latest (time.monotonic(); infinite
        # while it is not waiting in its poll): a new batch that may linger until then needs no wake-up
        self._sender_looks_by = sender_looks_by

        # Critical sections enter the plain lock directly (Condition.__enter__ is a Python-level
        # call on every append); the Condition shares it for waiting on buffer memory.
        # (the accelerator's Mutex is the same kind of lock, one its compiled append takes directly)
        self._mutex: Any = threading.Lock() if _SPEEDUPS is None else _SPEEDUPS.Mutex()
        self._lock = threading.Condition(self._mutex)
        # (a partition's queue is never removed or replaced: the compiled append keeps the last one)
        self._batches: dict[TopicPartition, collections.deque[ProducerBatch]] = {}
        # Batches with an assigned sequence that are not final, per partition, in sequence order.
        self._outstanding: dict[TopicPartition, list[ProducerBatch]] = {}
        # insertion order == creation order, so the oldest batch is always first (expiry is O(1))
        self._incomplete: dict[ProducerBatch, None] = {}
        # final (finalize_all) but their futures not yet completed (finish_all): a flush waits for them
        self._finishing: dict[ProducerBatch, None] = {}
        self._used = 0
        # per partition: what its last batch needed (a reservation step), the next one's start
        # (kept as long as the partition's queue: the accumulator never forgets a partition)
        self._start_reservation: dict[TopicPartition, int] = {}
        self._memory_waiters = 0
        self._blocked_appends = 0  # of those, threads blocked in _wait_for_memory
        self._flushes = 0
        self._closed = False
        self._drain_start = 0
        # fired whenever a blocked append could go on: what a caller that must not block waits on
        self.memory_freed = Listeners()
        # The compiled accelerator's copy of append()'s open-batch case (txnproducer._internal.accel):
        # same lock, same rules; it answers None for every other case, which the code below handles.
        self.appender: Any = None
        self.fast_append: Callable[..., tuple[RecordFuture, bool] | None] | None = None
        # try_new_batch's compiled copy (the accelerator's Appender.start), when it runs: see start_batch
        self._compiled_start: Callable[[TopicPartition, int, bytes | None, bytes | None],
                                       tuple[RecordFuture, bool, bool] | None] | None = None
        if _SPEEDUPS is not None:
            self.appender = _SPEEDUPS.Appender(
                self, self._batches, self._mutex, self._full_at, ProducerBatch, RecordFuture)
            self.fast_append = self.appender.append
            if self.appender.configure_start(
                    self._start_reservation, clock, float(self._max_wait_s), self.linger_s,
                    _RECORD_OVERHEAD, BATCH_HEADER_SIZE, self._max_record_total, FIRST_RESERVATION,
                    self._codec, self._gzip_level, NO_HEADERS_ENCODED, collections.deque, self._encoder):
                self._compiled_start = self.appender.start

    @property
    def start_batch(self) -> Callable[[TopicPartition, int, bytes | None, bytes | None],
                                      tuple[RecordFuture, bool, bool] | None]:
        """What the compiled send path calls for a record that found no open batch: try_new_batch, or
        its compiled copy (same rules: tests/unit/test_accumulator_compiled_start.py holds them to each
        other), which spares the ~500 Python bytecodes of a batch's start - each transaction starts one
        per partition it writes to."""
        return self._compiled_start or self.try_new_batch

    # -- application side ---------------------------------------------------------------------

    def append(self, tp: TopicPartition, timestamp: int | None, key: bytes | None,
               value: bytes | None, headers: Sequence[tuple[str, bytes | None]],
               max_block_s: float) -> tuple[RecordFuture, bool]:
        """Add a record; return its future and whether the Sender should be woken now.

        Raises RecordTooLargeError (before anything is queued), TimeoutError (buffer memory
        stayed exhausted for ``max_block_s``) or ClosedError.
        """
        headers_encoded = encode_headers(headers) if headers else NO_HEADERS_ENCODED
        if self.fast_append is not None:
            done = self.fast_append(tp, timestamp, key, value, headers_encoded)
            if done is not None:
                return done
        if timestamp is None:
            timestamp = _time_ns() // 1_000_000
        if self._compiled_start is not None and headers_encoded is NO_HEADERS_ENCODED:
            # no open batch took it: the compiled start of one (a producer with a value serializer or
            # a custom partitioner sends this way, not through the compiled SendPath)
            started = self._compiled_start(tp, timestamp, key, value)
            if started is not None:
                return started[0], started[1]
        with self._mutex:
            if self._closed:
                raise errors.ClosedError("producer is closed; send() is not possible")
            dq = self._batches.get(tp)
            last = dq[-1] if dq else None
            if last is not None and not last.full:
                # the per-record hot path: within the open batch's reservation, no accounting
                builder = last.builder
                if builder is not None:
                    size = builder.append(timestamp, key, value, headers_encoded)
                    if size < 0 and self._grow(last, builder, key, value, headers_encoded):
                        size = builder.append(timestamp, key, value, headers_encoded)
                    if size >= 0:
                        index = last.record_count
                        last.record_count = index + 1
                        return RecordFuture(last, index, timestamp, -1 if key is None else len(key),
                                            -1 if value is None else len(value)), size >= self._full_at
            return self._append_new_batch(tp, dq, last, timestamp, key, value, headers_encoded,
                                          max_block_s)

    def _grow(self, batch: ProducerBatch, builder: Any, key: bytes | None, value: bytes | None,
              headers_encoded: bytes) -> bool:
        """Reserve more memory for ``batch`` (open, caller holds the lock) so that the record
        fits; False when the batch is at its capacity or the pool cannot spare the bytes.

        Doubling keeps the number of slow-path appends per batch at a handful (16 KiB to 256 KiB
        is four) while a batch never holds more than twice what it has written; when the pool
        has less than that, it takes just what the record needs. It takes none while another
        thread is blocked waiting for memory to start a batch: the waiter would never get its turn
        (an asyncio producer retrying a send counts itself in ``_memory_waiters``, not here)."""
        limit = builder.batch_size
        if limit >= self._full_at:
            return False  # at its capacity: the record starts the next batch
        if self._blocked_appends:
            return False  # others wait for memory: close the batch, wait in turn like them
        needed = builder.size() + payload_size(key, value, headers_encoded) + _RECORD_OVERHEAD
        if needed > self._full_at:
            return False  # would not fit even at capacity: reserving more would only hold memory
        free = self.buffer_memory - self._used
        for target in (min(max(2 * limit, needed), self._full_at), needed):
            grow = target - limit
            if grow <= free:
                self._used += grow
                batch.reserved += grow
                builder.batch_size = limit + grow
                return True
        return False

    def _reservation_step(self, size: int) -> int:
        """The reservation _grow() reaches for a batch of ``size`` bytes: FIRST_RESERVATION doubled
        until it holds ``size``, at most batch_size."""
        step = min(self._full_at, FIRST_RESERVATION)
        while step < size and step < self._full_at:
            step *= 2
        return min(step, self._full_at)

    def try_new_batch(self, tp: TopicPartition, timestamp: int, key: bytes | None,
                      value: bytes | None) -> tuple[RecordFuture, bool, bool] | None:
        """The compiled send path's second step, for a record without headers that found no open
        batch of ``tp`` (every transaction's first record of each partition): start one with it
        and return ``(future, wake, full)`` - ``wake`` as :meth:`append`'s, ``full`` whether the new
        batch takes no more records (the sticky partitioner's question). Returns None, with
        nothing changed, for every other case (an open batch that needs growing, the accumulator
        closed, a record too large, memory to wait for or others waiting for it): :meth:`append`
        decides those, as without the compiled path.

        This is the reference: with the accelerator, :attr:`start_batch` is its compiled copy
        (``Appender.start`` in ``accel/_speedups.c``, with ``_start_capacity`` and ``_start_batch``
        rule for rule; ``tests/unit/test_accumulator_compiled_start.py`` holds the two to each other,
        the pure-Python run tests this one). A rule changed here must change there."""
        with self._mutex:
            if self._closed or self._memory_waiters:
                return None
            dq = self._batches.get(tp)
            last = dq[-1] if dq else None
            if last is not None and not last.full and last.builder is not None:
                return None  # open but the record did not fit: append() grows or closes it
            total = payload_size(key, value, NO_HEADERS_ENCODED) + _RECORD_OVERHEAD + BATCH_HEADER_SIZE
            if total > self._max_record_total:
                return None  # append() raises RecordTooLargeError
            capacity = self._start_capacity(tp, total)
            if self._used + capacity > self.buffer_memory:
                return None  # append() waits for memory, bounded by max_block_ms
            return self._start_batch(tp, dq, last, capacity, timestamp, key, value, NO_HEADERS_ENCODED)

    def _start_capacity(self, tp: TopicPartition, total: int) -> int:
        """What a new batch of ``tp`` for a record of ``total`` bytes (batch header included)
        reserves (caller holds the lock).

        A batch starts with FIRST_RESERVATION (or batch_size when smaller) and grows in
        _grow(); a record larger than that gets a batch of its own size. A partition whose last
        batch grew starts at that size, so a steady stream appends without growth steps (each a
        slow-path append), but only while nobody waits for memory and it takes at most half of
        what is free: one partition's guess never leaves the others waiting for their 16 KiB."""
        capacity = max(min(self._full_at, FIRST_RESERVATION), total)
        previous = self._start_reservation.get(tp, 0)
        if previous > capacity and not self._memory_waiters \
                and previous <= (self.buffer_memory - self._used) // 2:
            capacity = previous
        return capacity

    def _append_new_batch(self, tp: TopicPartition, dq: collections.deque[ProducerBatch] | None,
                          last: ProducerBatch | None, timestamp: int, key: bytes | None,
                          value: bytes | None, headers_encoded: bytes,
                          max_block_s: float) -> tuple[RecordFuture, bool]:
        """``append`` when no open batch of ``tp`` takes the record (caller holds the lock)."""
        est = payload_size(key, value, headers_encoded) + _RECORD_OVERHEAD
        total = est + BATCH_HEADER_SIZE
        if total > self._max_record_total:
            self._raise_too_large(total)  # before anything changes: the open batch stays open
        if last is not None:
            last.full = True  # it did not take the record: sendable at once
        capacity = self._start_capacity(tp, total)
        deadline = time.monotonic() + max_block_s  # real time: this blocks a real thread
        while self._used + capacity > self.buffer_memory:
            self._wait_for_memory(capacity, deadline, max_block_s, tp)
            last = self._open_batch(tp)  # another thread may have started one meanwhile
            if last is not None:
                first = last.try_append(timestamp, key, value, headers_encoded)
                if first is not None:
                    return first, last.is_full(self._full_at)
                last.full = True  # it filled up meanwhile: wait for memory for a new one
            dq = self._batches.get(tp)
        future, wake, _ = self._start_batch(tp, dq, last, capacity, timestamp, key, value, headers_encoded)
        return future, wake

    def _start_batch(self, tp: TopicPartition, dq: collections.deque[ProducerBatch] | None,
                     last: ProducerBatch | None, capacity: int, timestamp: int, key: bytes | None,
                     value: bytes | None, headers_encoded: bytes
                     ) -> tuple[RecordFuture, bool, bool]:
        """Start ``tp``'s next batch with the record, ``capacity`` bytes reserved (the caller holds
        the lock and checked that the pool has them); ``last`` is the batch before it, if any
        (closed, or marked full by the caller: it did not take the record). Returns the record's
        future, whether the Sender needs waking, and whether the new batch is full already (the
        record filled it)."""
        if dq is None:
            dq = self._batches[tp] = collections.deque()
        # every argument by position: the compiled encoder parses a keyword in about 0.7 us more
        builder = self._encoder(self._codec, True, capacity, -1, -1, -1, self._gzip_level)
        batch = ProducerBatch(tp, builder, self._clock(), self._max_wait_s)
        size = builder.append(timestamp, key, value, headers_encoded)
        assert size >= 0  # the first record always fits (capacity holds it)
        batch.record_count = 1
        first = RecordFuture(batch, 0, timestamp, -1 if key is None else len(key),
                             -1 if value is None else len(value))
        full = size >= self._full_at  # batch.is_full(), known from the append
        batch.reserved = capacity
        self._used += capacity
        dq.append(batch)
        self._incomplete[batch] = None
        if self._memory_waiters:
            self._lock.notify_all()  # a thread waiting to start a batch of tp may join this one
            self.memory_freed.notify()
        # The Sender needs waking for a new batch only to learn when it is sendable. Not when its
        # poll ends before this batch's linger does anyway (it then looks at every batch): the second
        # to sixth batch of a transaction over six partitions, sent while the first lingers, would
        # each cost the Sender a loop iteration. A batch sendable at once (the open one that did not
        # take the record was marked full above, or this one is full) always wakes it.
        looks_by = self._sender_looks_by
        if last is None and looks_by is not None and not full \
                and time.monotonic() + self.linger_s >= looks_by():
            return first, False, full
        return first, True, full

    def is_last_batch_full(self, tp: TopicPartition) -> bool:
        """Whether ``tp``'s last batch takes no more records (closed, marked full, or as large as
        a batch gets), or there is none: the sticky partitioner may then move on (KIP-794)."""
        with self._mutex:
            dq = self._batches.get(tp)
            last = dq[-1] if dq else None
            return (last is None or last.full or last.builder is None
                    or last.builder.size() >= self._full_at)

    def _open_batch(self, tp: TopicPartition) -> ProducerBatch | None:
        """``tp``'s batch that still takes records, if any (caller holds the lock; ``append``'s
        per-record path makes the same check inline)."""
        dq = self._batches.get(tp)
        last = dq[-1] if dq else None
        return last if last is not None and not last.full and last.builder is not None else None

    def _raise_too_large(self, total: int) -> None:
        if total > self.max_request_size:
            raise errors.RecordTooLargeError(
                f"record of about {total} bytes is larger than max_request_size={self.max_request_size}")
        raise errors.RecordTooLargeError(
            f"record of about {total} bytes is larger than buffer_memory={self.buffer_memory}")

    def _wait_for_memory(self, needed: int, deadline: float, max_block_s: float,
                         tp: TopicPartition) -> None:
        """Wait (lock held) until ``needed`` bytes are free, or until another thread started an
        open batch of ``tp`` that the record may join instead; TimeoutError at ``deadline``
        (``time.monotonic``; ``max_block_s`` is the bound it came from, for the message)."""
        self._memory_waiters += 1
        self._blocked_appends += 1
        try:
            if self._wakeup is not None:
                self._wakeup()  # the Sender treats every batch as ready while someone waits
            while self._used + needed > self.buffer_memory:
                if self._open_batch(tp) is not None:
                    return
                if self._closed:
                    raise errors.ClosedError("producer closed while send() waited for buffer memory")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise errors.TimeoutError(
                        f"buffer_memory={self.buffer_memory} stayed exhausted for max_block_ms="
                        f"{int(max_block_s * 1000)}; the record was not queued")
                self._lock.wait(remaining)
        finally:
            self._memory_waiters -= 1
            self._blocked_appends -= 1

    def count_memory_waiter(self, delta: int) -> None:
        """+1/-1: a caller that must not block waits for memory (the Sender then ignores linger)."""
        with self._mutex:
            self._memory_waiters += delta
        if delta > 0 and self._wakeup is not None:
            self._wakeup()

    def begin_flush(self) -> None:
        """Make every batch ready at once (flush/commit); pair with :meth:`await_flush_completion`."""
        with self._mutex:
            self._flushes += 1

    def await_flush_completion(self, timeout_s: float | None) -> None:
        """Wait until every batch that existed at the call is final; always ends the flush."""
        try:
            pending = self.incomplete_batches()
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            for batch in pending:
                remaining = batch.max_wait_s if deadline is None else deadline - time.monotonic()
                if remaining < 0 or not batch.wait_done(remaining):
                    bound = "delivery_timeout_ms" if timeout_s is None else f"timeout={timeout_s}s"
                    raise errors.TimeoutError(
                        f"flush did not complete within {bound}; "
                        f"{batch.tp.topic}-{batch.tp.partition} still pending")
        finally:
            self.end_flush()

    def incomplete_batches(self) -> list[ProducerBatch]:
        """The batches not final, and those final whose futures are not completed yet (a flush waits
        for both)."""
        with self._mutex:
            return [*self._incomplete, *self._finishing]

    def end_flush(self) -> None:
        with self._mutex:
            self._flushes -= 1

    @property
    def flush_in_progress(self) -> bool:
        return self._flushes > 0

    def close(self) -> None:
        """Refuse further appends (batches already queued are still sent)."""
        with self._mutex:
            self._closed = True
            if self.appender is not None:
                self.appender.mark_closed()  # the compiled append checks its own flag, under this lock
            self._lock.notify_all()
        self.memory_freed.notify()

    # -- sender side -----------------------------------------------------------------------

    def in_flight_since(self, before: float) -> list[ProducerBatch]:
        """Batches sent before ``before`` (monotonic seconds) and still unanswered."""
        with self._mutex:
            return [b for batches in self._outstanding.values() for b in batches
                    if b.in_flight and b.drained_at < before]

    def outstanding(self, tp: TopicPartition) -> list[ProducerBatch]:
        """``tp``'s batches that have a sequence and are not final, in sequence order (a copy)."""
        with self._mutex:
            return list(self._outstanding.get(tp, ()))

    def has_incomplete(self) -> bool:
        return bool(self._incomplete)

    def has_undrained(self) -> bool:
        with self._mutex:
            return any(self._batches.values())

    def _head_sendable(self, tp: TopicPartition, first: ProducerBatch) -> bool:
        outstanding = self._outstanding.get(tp)
        if first.base_sequence >= 0:
            # a retry: only when it is the lowest outstanding sequence of its partition
            return bool(outstanding) and outstanding[0] is first  # type: ignore[index]
        if outstanding and len(outstanding) >= self.max_in_flight:
            return False
        if outstanding and not self._tm.has_broker_state(tp):
            # The broker takes any sequence as the first batch of a producer id it knows nothing
            # of. Were that batch refused (too large, not the leader) while a later one is in
            # flight, the later one would be written first and the earlier could never follow.
            # So one batch at a time until the broker has acknowledged one on this partition.
            return False
        return self._tm.is_send_to_partition_allowed(tp)

    def ready(self, leader_for: Callable[[TopicPartition], int | None], now: float | None = None,
              force: bool = False) -> tuple[set[int], float | None, bool]:
        """Leaders with sendable data, seconds until the next batch may become sendable, and
        whether some partition with data has no known leader (metadata refresh needed).

        ``force`` ignores ``linger_ms`` (the transaction is completing); so do a flush, a closing
        producer and an application thread waiting for buffer memory."""
        if not self._incomplete:
            # Nothing queued or in flight (read without the lock): most of a small transaction's
            # Sender iterations (the EndTxn's answer, the wake-up of a new transaction's first
            # record before it lingered) end here. A batch appended meanwhile comes with a wake-up.
            return set(), None, False
        now = self._clock() if now is None else now
        with self._mutex:
            _, nodes, delay, unknown_leader = self._look(leader_for, now, force)
        return nodes, delay, unknown_leader

    def drain(self, leader_for: Callable[[TopicPartition], int | None], nodes: Iterable[int],
              max_request_size: int | None = None, now: float | None = None,
              on_encode_error: Callable[[ProducerBatch, Exception], None] | None = None,
              ) -> dict[int, list[ProducerBatch]]:
        """Take at most one batch per partition for each node, up to ``max_request_size``.

        New batches get the producer id, epoch and next sequence of their partition here
        and are encoded; retried batches keep theirs.

        A batch whose encoding raises (a compression library that fails, a bug) leaves its queue
        without taking a sequence and, once the lock is released, goes to ``on_encode_error`` (the
        Sender fails its records and makes the transaction abortable); without a handler it fails
        here with :func:`encoding_error`. The other batches drain as usual: left at the head of its
        queue, one such batch would fail every Sender loop until the thread gave up.
        """
        now = self._clock() if now is None else now
        unencodable: list[tuple[ProducerBatch, Exception]] = []
        with self._mutex:
            heads, _, _, _ = self._look(leader_for, now, False)
            out = self._take(heads, set(nodes), max_request_size, now, unencodable)
        self._encode_failed(unencodable, on_encode_error)
        return out

    def ready_and_drain(self, leader_for: Callable[[TopicPartition], int | None],
                        node_ready: Callable[[int], bool], now: float, force: bool,
                        max_request_size: int | None = None,
                        on_encode_error: Callable[[ProducerBatch, Exception], None] | None = None,
                        ) -> tuple[dict[int, list[ProducerBatch]], float | None, bool, set[int]]:
        """``ready()``, then ``drain()`` of its nodes that ``node_ready`` says a request may go to now,
        in one look at each partition (the Sender's; each partition's checks once, not twice).

        Returns what ``drain`` returns, ``ready``'s delay and unknown-leader flag, and the nodes with
        sendable data that were not ready (the Sender connects to them)."""
        if not self._incomplete:  # as in ready()
            return {}, None, False, set()
        unencodable: list[tuple[ProducerBatch, Exception]] = []
        with self._mutex:
            heads, nodes, delay, unknown_leader = self._look(leader_for, now, force)
            sendable = {node for node in nodes if node_ready(node)}
            out = self._take(heads, sendable, max_request_size, now, unencodable) if sendable else {}
        self._encode_failed(unencodable, on_encode_error)
        return out, delay, unknown_leader, nodes - sendable

    def _look(self, leader_for: Callable[[TopicPartition], int | None], now: float, force: bool,
              ) -> tuple[list[tuple[TopicPartition, collections.deque[ProducerBatch], int]], set[int],
                         float | None, bool]:
        """One look at every partition with data (caller holds the lock): the partitions whose head
        batch may go now to a known leader, ``(tp, queue, leader)``, in this drain's turn (the first
        partition moves on by one every drain, so that none is always last when a request fills
        up); the leaders with a batch that lingered long enough (or is full, or a retry whose backoff
        ended); seconds until the next one may; whether a partition with data has no known leader."""
        heads: list[tuple[TopicPartition, collections.deque[ProducerBatch], int]] = []
        nodes: set[int] = set()
        delay: float | None = None
        unknown_leader = False
        force = force or self._memory_waiters > 0 or self._flushes > 0 or self._closed
        items = list(self._batches.items())
        if len(items) > 1:
            start = self._drain_start % len(items)
            items = items[start:] + items[:start]
        outstanding = self._outstanding
        allowed = self._tm.is_send_to_partition_allowed
        for tp, dq in items:
            if not dq:
                continue
            first = dq[0]
            if first.base_sequence >= 0 or outstanding.get(tp):  # a retry, or batches in flight
                if not self._head_sendable(tp, first):
                    continue
            elif not allowed(tp):  # _head_sendable's answer when nothing of tp is outstanding
                continue
            leader = leader_for(tp)
            if leader is None or leader < 0:
                unknown_leader = True
                continue
            heads.append((tp, dq, leader))
            if leader in nodes:
                continue
            if first.attempts > 0:
                wait = first.retry_at - now
            else:
                wait = 0.0 if (force or len(dq) > 1 or first.is_full(self._full_at)) \
                    else first.created + self.linger_s - now
            if wait <= 0:
                nodes.add(leader)
            elif delay is None or wait < delay:
                delay = wait
        return heads, nodes, delay, unknown_leader

    def _take(self, heads: list[tuple[TopicPartition, collections.deque[ProducerBatch], int]],
              node_set: set[int], max_request_size: int | None, now: float,
              unencodable: list[tuple[ProducerBatch, Exception]]) -> dict[int, list[ProducerBatch]]:
        """``drain``'s work on ``_look``'s heads (caller holds the lock): a partition's head batch goes
        in its leader's request when the leader is in ``node_set``, its retry backoff is over and the
        request stays within the size limit; a new batch is stamped and encoded here."""
        self._drain_start += 1
        limit = self.max_request_size if max_request_size is None else max_request_size
        out: dict[int, list[ProducerBatch]] = {}
        sizes: dict[int, int] = {}
        pid_epoch = self._tm.producer_id_and_epoch
        first_step = min(self._full_at, FIRST_RESERVATION)  # _reservation_step's answer for a small batch
        for tp, dq, leader in heads:
            if leader not in node_set:
                continue
            first = dq[0]
            if first.attempts > 0 and first.retry_at > now:
                continue
            used = sizes.get(leader, 0)
            builder = first.builder
            size = len(first.buffer) if builder is None else builder.size()  # type: ignore[arg-type]
            if used and used + size > limit:
                continue
            if first.base_sequence < 0:
                if pid_epoch is None or pid_epoch.producer_id < 0:
                    continue
                if builder is not None:  # its records' size before compression
                    self._start_reservation[tp] = first_step if size <= first_step \
                        else self._reservation_step(size)
                seq = self._tm.assign_sequence(tp, first.record_count)
                try:
                    first.close(pid_epoch.producer_id, pid_epoch.epoch, seq)
                except Exception as cause:
                    self._tm.release_sequence(tp, seq, first.record_count)  # it takes none
                    dq.popleft()
                    unencodable.append((first, cause))
                    continue
                self._outstanding.setdefault(tp, []).append(first)
                size = len(first.buffer)  # type: ignore[arg-type]
            dq.popleft()
            first.in_flight = True
            first.drained_at = now
            first.attempts += 1
            sizes[leader] = used + size
            out.setdefault(leader, []).append(first)
        return out

    def _encode_failed(self, unencodable: list[tuple[ProducerBatch, Exception]],
                       on_encode_error: Callable[[ProducerBatch, Exception], None] | None) -> None:
        """Hand each batch that could not be encoded on (the lock released)."""
        for batch, error in unencodable:
            if on_encode_error is not None:
                on_encode_error(batch, error)
            else:
                self.fail(batch, encoding_error(batch, error))

    def _backoff(self, attempts: int) -> float:
        return float(min(self._retry_backoff_s * (2 ** max(attempts - 1, 0)), self._retry_backoff_max_s))

    def reenqueue(self, batch: ProducerBatch, now: float | None = None, backoff: bool = True) -> None:
        """Put a failed-but-retriable batch back at the front, in sequence order; it may go
        again after the retry backoff (``backoff=False``: at once, e.g. to a new leader)."""
        now = self._clock() if now is None else now
        with self._mutex:
            batch.in_flight = False
            batch.retry_at = now + self._backoff(batch.attempts) if backoff else now
            self._insert_in_sequence_order(batch)

    def _insert_in_sequence_order(self, batch: ProducerBatch) -> None:
        # caller holds the lock; batches with sequences come first, in sequence order
        dq = self._batches.setdefault(batch.tp, collections.deque())
        index = 0
        for index, queued in enumerate(dq):  # noqa: B007 - index is used after the loop
            if queued.base_sequence < 0 or queued.base_sequence > batch.base_sequence:
                break
        else:
            index = len(dq)
        dq.insert(index, batch)

    def split_and_reenqueue(self, batch: ProducerBatch) -> list[ProducerBatch]:
        """Replace a batch the broker refused as too large (MESSAGE_TOO_LARGE) by two halves.

        The halves keep the batch's producer id, epoch and sequence range (consecutive base
        sequences), so later batches of the partition stay valid: the broker wrote nothing of
        the refused one. They go to the front of the queue, take over its memory reservation and
        creation time (delivery timeout), and its record futures resolve from them. A half that
        is refused again is halved again; a single record that is too large fails (the Java
        client's Sender.completeBatch and ProducerBatch.split, halving instead of splitting to
        ``batch_size``, which may be the limit that failed).
        """
        assert batch.buffer is not None and batch.base_sequence >= 0 and batch.record_count > 1
        records = [(r.timestamp, r.key, r.value, encode_headers([(k, v) for k, v in r.headers]))
                   for r in DefaultRecordBatch(bytes(batch.buffer))]
        middle = len(records) // 2
        parts: list[ProducerBatch] = []
        sequence = batch.base_sequence
        for chunk in (records[:middle], records[middle:]):
            # no size bound: every record of the half goes in (the limit is the broker's)
            builder = self._encoder(self._codec, True, 1 << 62, gzip_level=self._gzip_level)
            for timestamp, key, value, headers_encoded in chunk:
                builder.append(timestamp, key, value, headers_encoded)
            part = ProducerBatch(batch.tp, builder, batch.created, batch.max_wait_s)
            part.record_count = len(chunk)
            part.close(batch.producer_id, batch.producer_epoch, sequence)
            part.parent = batch
            sequence = add_sequence(sequence, len(chunk))
            parts.append(part)
        with self._mutex:
            batch.in_flight = False
            parts[0].reserved = batch.reserved * middle // len(records)
            parts[1].reserved = batch.reserved - parts[0].reserved
            batch.reserved = 0
            outstanding = self._outstanding.get(batch.tp)
            if outstanding and batch in outstanding:
                at = outstanding.index(batch)
                outstanding[at:at + 1] = parts
            if batch in self._incomplete:  # keep creation order: expiry scans oldest first
                order = list(self._incomplete)
                at = order.index(batch)
                order[at:at + 1] = parts
                self._incomplete = dict.fromkeys(order)
            for part in parts:
                self._insert_in_sequence_order(part)
            batch.split_into = [(0, parts[0]), (middle, parts[1])]
            batch.parts_pending = len(parts)
        return parts

    def _finalize(self, batch: ProducerBatch, notify: bool = True) -> bool:
        """The batch is final: out of the in-flight and incomplete sets, its memory returned (caller
        holds the lock); whether it held memory. ``notify=False``: the caller tells the memory's waiters
        once, for several."""
        batch.in_flight = False
        outstanding = self._outstanding.get(batch.tp)
        if outstanding and batch in outstanding:
            outstanding.remove(batch)
        self._incomplete.pop(batch, None)
        if batch.reserved:
            self._used -= batch.reserved
            batch.reserved = 0
            if notify:
                self._memory_returned()
            return True
        return False

    def _memory_returned(self) -> None:
        """Tell whoever waits for buffer memory that some came back (caller holds the lock)."""
        if self._memory_waiters:  # counted under this lock by every waiter before it waits
            self._lock.notify_all()
        self.memory_freed.notify()

    def complete(self, batch: ProducerBatch, base_offset: int, log_append_time: int | None) -> bool:
        """Record success; False if the batch was already final (e.g. expired meanwhile)."""
        with self._mutex:
            self._finalize(batch)
        return batch.finish(base_offset, log_append_time, None)

    def finalize_all(self, outcomes: Sequence[tuple[ProducerBatch, int, int | None]]) -> None:
        """``complete`` for a Produce answer's ``(batch, base_offset, log_append_time)``, its first half:
        the batches are no longer incomplete (the transaction manager may end the transaction) and
        their memory is back, under one lock; a flush still waits for them until :meth:`finish_all`
        completed their futures (the Sender may send an EndTxn in between)."""
        now_ns = _time_ns()
        with self._mutex:
            returned = False
            finishing = self._finishing
            for batch, _, _ in outcomes:
                returned = self._finalize(batch, notify=False) or returned
                finishing[batch] = None
                batch.acknowledged_ns = now_ns
            if returned:
                self._memory_returned()

    def finish_all(self, outcomes: Sequence[tuple[ProducerBatch, int, int | None]]) -> None:
        """:meth:`finalize_all`'s second half: the futures, in the answer's order (no lock held: their
        callbacks run)."""
        for batch, base_offset, log_append_time in outcomes:
            batch.finish(base_offset, log_append_time, None)
        with self._mutex:
            finishing = self._finishing
            for batch, _, _ in outcomes:
                finishing.pop(batch, None)

    def fail(self, batch: ProducerBatch, exception: BaseException,
             record_errors: dict[int, BaseException] | None = None) -> bool:
        """Record a final failure; also removes the batch from its queue if still queued."""
        with self._mutex:
            dq = self._batches.get(batch.tp)
            if dq and batch in dq:
                dq.remove(batch)
            self._finalize(batch)
        return batch.finish(-1, None, exception, record_errors)

    def expired_batches(self, now: float | None = None) -> list[ProducerBatch]:
        """Incomplete batches older than ``delivery_timeout_ms`` (queued or in flight)."""
        now = self._clock() if now is None else now
        cutoff = now - self.delivery_timeout_s
        expired: list[ProducerBatch] = []
        with self._mutex:
            for batch in self._incomplete:
                if batch.created > cutoff:
                    break
                expired.append(batch)
        return expired

    def next_expiry_delay(self, now: float | None = None) -> float | None:
        now = self._clock() if now is None else now
        expiry = self.next_expiry()
        return None if expiry is None else max(0.0, expiry - now)

    def next_expiry(self) -> float | None:
        """When the oldest incomplete batch expires (clock seconds), None if there is none: the Sender
        reads it once per loop iteration, expires batches when it has passed and bounds its poll by it."""
        if not self._incomplete:  # read without the lock: a batch appended meanwhile is newer
            return None
        with self._mutex:
            oldest = next(iter(self._incomplete), None)
        return None if oldest is None else oldest.created + self.delivery_timeout_s

    def abort_undrained(self, exception: BaseException) -> int:
        """Fail every batch that was never sent (no sequence); retries in progress continue."""
        aborted: list[ProducerBatch] = []
        with self._mutex:
            for dq in self._batches.values():
                keep = [b for b in dq if b.base_sequence >= 0]
                if len(keep) != len(dq):
                    aborted.extend(b for b in dq if b.base_sequence < 0)
                    dq.clear()
                    dq.extend(keep)
            for batch in aborted:
                self._finalize(batch)
        for batch in aborted:
            batch.finish(-1, None, exception)
        return len(aborted)

    def abort_incomplete(self, exception: BaseException) -> int:
        """Fail every batch that is not final (fatal error or forced close)."""
        with self._mutex:
            batches = list(self._incomplete)
            for dq in self._batches.values():
                dq.clear()
            for batch in batches:
                self._finalize(batch)
            self._outstanding.clear()
        for batch in batches:
            batch.finish(-1, None, exception)
        return len(batches)

    @property
    def used_memory(self) -> int:
        return self._used

    @property
    def queued_batches(self) -> int:
        with self._mutex:
            return sum(len(dq) for dq in self._batches.values())
