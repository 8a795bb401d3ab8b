"""ProducerBatch and the futures of its records: one partition's records, sent and retried as one.

Why the batch and its record futures share a module: a record's future is a view of its batch
(the batch's completion event, its base offset plus the record's index, its error or the
record's own), so all futures of a batch cost one small object each and no lock. They are one
concept split in two classes, as the Java client's ``ProducerBatch`` and
``FutureRecordMetadata``/``ProduceRequestResult`` are.

A batch's bytes are fixed when it is closed (producer id, epoch and base sequence stamped at drain
time) and never change afterwards: a retry must be byte-identical for the broker's duplicate
detection. After MESSAGE_TOO_LARGE a batch may be split into parts that keep its sequence range;
the original then completes, for its futures, once every part is final.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs
from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol.record_batch import BatchBuilder, restamp

__all__ = ["Callback", "ProducerBatch", "RecordFuture", "RecordMetadata"]

# One lock for the rare race "callback registered while the batch completes"; holding it is a
# handful of bytecodes, so sharing it costs less than a lock per batch or per record.
_CALLBACK_LOCK = threading.Lock()

Callback = Callable[["RecordMetadata | None", "BaseException | None"], Any]


@attrs.frozen
class RecordMetadata:
    """Where the broker stored a record (the value of a completed :class:`RecordFuture`)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int


class RecordFuture:
    """Outcome of one ``send()``: resolves when its batch is acknowledged or fails.

    All futures of a batch share the batch's completion event, so a record costs one small
    object and no lock. Callbacks run on the Sender thread (keep them short, never block in
    them); a callback added after completion runs at once on the calling thread.
    """

    __slots__ = ("_batch", "_callbacks", "_index", "_key_size", "_timestamp", "_value_size")

    def __init__(self, batch: ProducerBatch, index: int, timestamp: int, key_size: int,
                 value_size: int) -> None:
        self._batch = batch
        self._index = index
        self._timestamp = timestamp
        self._key_size = key_size
        self._value_size = value_size
        self._callbacks: list[Callback] | None = None

    @property
    def topic_partition(self) -> TopicPartition:
        return self._batch.tp

    def done(self) -> bool:
        return self._batch.final_state is not None

    def _outcome(self) -> tuple[RecordMetadata | None, BaseException | None]:
        batch, index = self._batch, self._index
        while batch.split_into is not None:  # split after MESSAGE_TOO_LARGE: the record's part
            for first, part in reversed(batch.split_into):
                if index >= first:
                    batch, index = part, index - first
                    break
        exc = batch.exception
        if exc is not None:
            record_exc = batch.record_errors.get(index) if batch.record_errors else None
            return None, record_exc or exc
        timestamp = self._timestamp
        if batch.log_append_time is not None and batch.log_append_time >= 0:
            timestamp = batch.log_append_time
        offset = batch.base_offset + index if batch.base_offset >= 0 else -1
        return (RecordMetadata(batch.tp.topic, batch.tp.partition, offset, timestamp,
                               self._key_size, self._value_size), None)

    def add_callback(self, fn: Callback) -> RecordFuture:
        """Call ``fn(metadata, None)`` on success or ``fn(None, exc)`` on failure."""
        batch = self._batch
        with _CALLBACK_LOCK:
            if batch.final_state is None:
                if self._callbacks is None:
                    self._callbacks = []
                    batch.callback_futures.append(self)
                self._callbacks.append(fn)
                return self
        self._call(fn)
        return self

    def _call(self, fn: Callback) -> None:
        metadata, exc = self._outcome()
        try:
            fn(metadata, exc)
        except Exception:  # a user callback must not kill the Sender thread
            get_logger("txnproducer.producer").exception(
                "txn.callback_failed", topic=self._batch.tp.topic, partition=self._batch.tp.partition)

    def _run_callbacks(self) -> None:
        for fn in self._callbacks or ():
            self._call(fn)

    def _wait(self, timeout: float | None) -> None:
        bound = self._batch.max_wait_s if timeout is None else timeout
        if not self._batch.wait_done(bound):
            what = f"timeout={timeout}s" if timeout is not None else "delivery_timeout_ms"
            raise errors.TimeoutError(
                f"record for {self._batch.tp.topic}-{self._batch.tp.partition} not acknowledged "
                f"within {what}")

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """Block until the record is acknowledged; raise its delivery error or TimeoutError.

        ``timeout``: seconds; ``None`` waits as long as the record can still be delivered
        (``delivery_timeout_ms`` plus one request timeout).
        """
        self._wait(timeout)
        metadata, exc = self._outcome()
        if exc is not None:
            raise exc
        assert metadata is not None
        return metadata

    result = get

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The delivery error (``None`` on success); waits like :meth:`get`."""
        self._wait(timeout)
        return self._outcome()[1]


class ProducerBatch:
    """Records for one partition that are sent (and retried) as one magic-v2 batch."""

    __slots__ = (
        # acknowledged_ns: when the broker's answer was read (time.time_ns(), set by the accumulator's
        # finalize_all, unset before): the futures may complete a little later, after a committing
        # transaction's EndTxn went out, and the batch's span still ends at the acknowledgement
        "_done_event", "acknowledged_ns", "attempts", "base_offset", "base_sequence", "buffer", "builder",
        "callback_futures",
        "created", "done_callbacks", "drained_at", "exception", "final_state", "full",
        "in_flight", "log_append_time", "max_wait_s", "parent", "parts_pending", "producer_epoch",
        "producer_id", "record_count", "record_errors", "reserved", "retry_at", "sent_to",
        "sequence_reset", "split_into", "tp",
    )

    acknowledged_ns: int  # unset until the accumulator's finalize_all (see __slots__)

    # __init__ has a compiled copy (BATCH_SLOTS in accel/_speedups.c: the compiled start of a batch
    # fills the slots without running it): a slot added here without it there turns that copy off
    # (Appender.configure_start), and tests/unit/test_accumulator_compiled_start.py compares the two.

    def __init__(self, tp: TopicPartition, builder: BatchBuilder, now: float,
                 max_wait_s: float) -> None:
        self.tp = tp
        self.builder: BatchBuilder | None = builder
        self.buffer: bytearray | None = None
        self.created = now
        self.record_count = 0
        self.attempts = 0
        self.retry_at = 0.0
        self.drained_at = 0.0
        self.sent_to: int | None = None  # the broker its last request went to
        self.in_flight = False
        self.full = False
        self.reserved = 0
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        # True once the batch was re-stamped because its partition's sequences started again
        # (UNKNOWN_PRODUCER_ID after retention): a stale answer to its old bytes is then retried
        self.sequence_reset = False
        self.final_state: str | None = None
        self.base_offset = -1
        self.log_append_time: int | None = None
        self.exception: BaseException | None = None
        self.record_errors: dict[int, BaseException] | None = None
        self.callback_futures: list[RecordFuture] = []
        # created by the first thread that waits (wait_done): most batches never have a waiter
        self._done_event: threading.Event | None = None
        self.done_callbacks: list[Callable[[], None]] | None = None  # see add_done_callback
        self.max_wait_s = max_wait_s
        # After a split (MESSAGE_TOO_LARGE): (index of its first record, part) for each part; the
        # batch completes, for its futures, once every part is final.
        self.split_into: list[tuple[int, ProducerBatch]] | None = None
        self.parts_pending = 0
        self.parent: ProducerBatch | None = None

    def __repr__(self) -> str:
        return (f"ProducerBatch({self.tp.topic}-{self.tp.partition}, records={self.record_count}, "
                f"seq={self.base_sequence}, attempts={self.attempts}, final={self.final_state})")

    def try_append(self, timestamp: int, key: bytes | None, value: bytes | None,
                   headers_encoded: bytes) -> RecordFuture | None:
        builder = self.builder
        if builder is None or self.full:
            return None
        if builder.append(timestamp, key, value, headers_encoded) < 0:
            self.full = True
            return None
        future = RecordFuture(self, self.record_count, timestamp,
                              -1 if key is None else len(key), -1 if value is None else len(value))
        self.record_count += 1
        return future

    def is_done(self) -> bool:
        """Whether the batch is final for its futures (split: every part is)."""
        return self.final_state is not None

    def wait_done(self, timeout: float | None) -> bool:
        """Wait until :meth:`is_done`; False if ``timeout`` seconds passed first."""
        if self.final_state is not None:
            return True
        with _CALLBACK_LOCK:
            if self.final_state is not None:
                return True
            event = self._done_event
            if event is None:
                event = self._done_event = threading.Event()
        return event.wait(timeout)

    def is_full(self, batch_size: int) -> bool:
        return self.full or self.builder is None or self.builder.size() >= batch_size

    @property
    def size(self) -> int:
        if self.buffer is not None:
            return len(self.buffer)
        assert self.builder is not None
        return int(self.builder.size())

    @property
    def has_sequence(self) -> bool:
        return self.base_sequence >= 0

    def close(self, producer_id: int, producer_epoch: int, base_sequence: int,
              transactional: bool = True) -> None:
        """Fix the producer state and encode the batch; from now on its bytes never change."""
        assert self.builder is not None, "batch already closed"
        self.builder.set_producer_state(producer_id, producer_epoch, base_sequence, transactional)
        self.buffer = self.builder.build()
        self.builder = None
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence

    def restamp(self, base_sequence: int) -> None:
        """Another base sequence for a closed batch (its partition's sequences start again at 0
        after the broker lost the producer's state); the records stay byte for byte."""
        assert self.buffer is not None, "batch not closed yet"
        restamp(self.buffer, self.producer_id, self.producer_epoch, base_sequence)
        self.base_sequence = base_sequence
        self.sequence_reset = True

    def finish(self, base_offset: int, log_append_time: int | None,
               exception: BaseException | None,
               record_errors: dict[int, BaseException] | None = None) -> bool:
        """Set the final outcome once; later calls (a late response after expiry) are ignored."""
        with _CALLBACK_LOCK:
            if self.final_state is not None:
                return False
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.exception = exception
            self.record_errors = record_errors
            self.final_state = "succeeded" if exception is None else "failed"
            futures = self.callback_futures
            self.callback_futures = []
            event = self._done_event
        # most batches have nobody to tell (no waiter, no callback, not a split's part): no call then
        # (done_callbacks is read as _completed reads it: one added later finds final_state set)
        if futures or event is not None or self.done_callbacks is not None or self.parent is not None:
            self._completed(futures, event)
        return True

    def _part_finished(self) -> None:
        """A part of this split batch is final; the last one completes this batch's futures."""
        assert self.split_into is not None
        with _CALLBACK_LOCK:
            self.parts_pending -= 1
            if self.parts_pending > 0 or self.final_state is not None:
                return
            failed = [part.exception for _, part in self.split_into if part.exception is not None]
            self.exception = failed[0] if failed else None  # the records' own outcomes: their parts
            self.final_state = "succeeded" if not failed else "failed"
            futures = self.callback_futures
            self.callback_futures = []
            event = self._done_event
        self._completed(futures, event)

    def add_done_callback(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once the batch is final for its futures (split: every part is): at once
        if it already is, otherwise on the completing thread (the Sender's), so ``fn`` must only
        schedule work. What a flush that must not block waits on (:mod:`txnproducer.aio`)."""
        with _CALLBACK_LOCK:
            if self.final_state is None:
                if self.done_callbacks is None:
                    self.done_callbacks = []
                self.done_callbacks.append(fn)
                return
        fn()

    def _completed(self, futures: list[RecordFuture], event: threading.Event | None) -> None:
        # outside the lock: wake waiters, run callbacks, tell a split batch that a part is done
        if event is not None:
            event.set()
        for future in futures:
            future._run_callbacks()
        if self.done_callbacks is not None:
            with _CALLBACK_LOCK:
                callbacks, self.done_callbacks = self.done_callbacks, None
            for fn in callbacks:
                try:
                    fn()
                except Exception:  # a waiter's bug must not kill the Sender thread
                    get_logger("txnproducer.producer").exception("txn.callback_failed", topic=self.tp.topic)
        if self.parent is not None:
            self.parent._part_finished()
