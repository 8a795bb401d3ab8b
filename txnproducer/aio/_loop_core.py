"""LoopCore: the sync producer's core with every wait replaced by a step that does not wait.

Why a subclass of :class:`~txnproducer.producer.TransactionalProducer` and not a second producer:
the async facade must have the same semantics, so it runs the same code - the same ``send()``
(serializer rules, partitioner, sticky partitions, accumulator, transaction manager), the same
KIP-691 bookkeeping of pending calls, the same argument checks and close sequence. Only the
waits differ. ``send()`` here never waits: where the sync one would block it raises
:class:`MetadataNeeded` (a topic it has no metadata for) or :class:`BufferFull` (no buffer memory
for a new batch), having queued nothing; the facade then awaits the matching condition and calls
it again. The other waits are split into "start" and "is it done yet", and the facade awaits the
:class:`~txnproducer._internal.listeners.Listeners` (or completion callbacks) the Sender fires.

This module is the only place in ``txnproducer.aio`` that touches the producer's parts (the
accumulator, the network client, the Sender, the transaction manager): the narrow interface the
facade is written against.
"""

from __future__ import annotations

from typing import Any

from kafka.util import ensure_valid_topic_name

from txnproducer import errors
from txnproducer._internal.batching.batch import ProducerBatch, RecordFuture
from txnproducer._internal.listeners import Listeners
from txnproducer._internal.txn.result import TransactionalRequestResult
from txnproducer._internal.txn.state import TRANSACTION_OPEN, State
from txnproducer.config import ProducerConfig
from txnproducer.producer import HeadersArg, TransactionalProducer

__all__ = ["BufferFull", "LoopCore", "MetadataNeeded"]


class MetadataNeeded(Exception):  # a signal to the facade, never seen by users
    """``send()`` needs metadata of a topic it has not seen yet; nothing was queued."""

    def __init__(self, topic: str) -> None:
        super().__init__(topic)
        self.topic = topic


class BufferFull(Exception):  # a signal to the facade, never seen by users
    """``send()`` needs buffer memory for a new batch and there is none; nothing was queued."""


class LoopCore(TransactionalProducer):
    """A TransactionalProducer whose calls never wait (see the module docstring)."""

    _caller_stacklevel = 4  # the async facade's call is one frame more
    #: what send() raises to mean "await, then call again", not a failed send (tracing drops its span)
    send_retry_signals = (MetadataNeeded, BufferFull)

    def __init__(self, config: ProducerConfig, **telemetry: Any) -> None:
        super().__init__(config, **telemetry)  # tracer_provider=, meter_provider=, record_spans=
        self._send_block_s = 0.0  # the accumulator raises TimeoutError at once instead of waiting

    # -- send --------------------------------------------------------------------------------------

    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             timestamp_ms: int | None = None, headers: HeadersArg = None) -> RecordFuture:
        """The sync ``send()``, raising MetadataNeeded or BufferFull where that one would wait."""
        try:
            return super().send(topic, value, key, partition, timestamp_ms, headers)
        except errors.TimeoutError:  # with a bound of 0, only the buffer memory wait raises it
            raise BufferFull() from None

    def _wait_for_partitions(self, topic: str, deadline: float) -> list[int]:
        try:
            ensure_valid_topic_name(topic)
        except (TypeError, ValueError) as exc:
            raise errors.InvalidRecordError(f"invalid topic name {topic!r}: {exc}") from None
        raise MetadataNeeded(topic)

    def request_topic(self, topic: str) -> int:
        """Ask for ``topic``'s metadata; the count to pass to :meth:`topic_partitions`."""
        return self._net.request_topic(topic)

    def topic_partitions(self, topic: str, answers_before: int) -> list[int] | None:
        """The partitions once known, None before; raises as the sync wait does (a topic the
        cluster refuses to describe also makes the open transaction abortable, as there)."""
        try:
            return self._net.topic_partitions(topic, answers_before)
        except errors.TopicAuthorizationError as exc:
            self._tm.transition_to_abortable_error(exc)
            raise

    def topic_timeout_error(self, topic: str, timeout_s: float) -> errors.TimeoutError:
        return self._net.topic_timeout_error(topic, timeout_s)

    def buffer_timeout_error(self) -> errors.TimeoutError:
        return errors.TimeoutError(
            f"buffer_memory={self._config.buffer_memory} stayed exhausted for max_block_ms="
            f"{self._config.max_block_ms}; the record was not queued")

    @property
    def metadata_changed(self) -> Listeners:
        return self._net.changed

    @property
    def memory_freed(self) -> Listeners:
        return self._acc.memory_freed

    def count_memory_waiter(self, delta: int) -> None:
        self._acc.count_memory_waiter(delta)

    # -- transactional calls ----------------------------------------------------------------------

    def ready_version(self) -> int | None:
        """The cluster's transaction version once known (init_transactions may start), else None;
        raises when waiting is pointless (authentication failed, closed)."""
        return self._sender.ready_version()

    @property
    def ready_changed(self) -> tuple[Listeners, Listeners]:
        return self._net.changed, self._sender.changed

    def not_ready_error(self, timeout_s: float) -> errors.TimeoutError:
        if self._net.features is None:
            return self._net.unreachable_error(timeout_s)
        return errors.TimeoutError(
            f"cluster transaction version not determined within {int(timeout_s * 1000)} ms")

    def start_init(self, keep_prepared_txn: bool) -> TransactionalRequestResult:
        return self._start_op("init", lambda: self._tm.initialize_transactions(keep_prepared_txn))

    def start_commit(self) -> TransactionalRequestResult:
        return self._start_op("commit", self._tm.begin_commit)

    def start_abort(self) -> TransactionalRequestResult:
        return self._start_op("abort", self._tm.begin_abort)

    def start_offsets(self, offsets: Any, group_metadata: Any) -> TransactionalRequestResult:
        converted, gm = self._offsets_args(offsets, group_metadata)
        return self._start_op("offsets", lambda: self._tm.send_offsets_to_transaction(converted, gm))

    @property
    def transaction_open(self) -> bool:
        """Whether a transaction is open: begun, and not yet committed, aborted or failed fatally."""
        return self._tm.state in TRANSACTION_OPEN

    @property
    def in_transaction(self) -> bool:
        """Whether the open transaction can take records (IN_TRANSACTION: no commit or abort yet)."""
        return self._tm.state is State.IN_TRANSACTION

    def pending(self, op: str) -> TransactionalRequestResult | None:
        """The result of ``op`` (``"commit"``, ``"abort"``, ...) nobody has seen complete yet."""
        with self._lock:
            result: TransactionalRequestResult | None = self._pending.get(op)
            return result

    def forget(self, op: str, result: TransactionalRequestResult) -> None:
        self._forget(op, result)

    def check_open(self, call: str) -> None:
        self._check_open(call)

    def bound(self, timeout: float | None, *, plausible: bool = True) -> tuple[float, str]:
        """(seconds, name of the bound) for a call's ``timeout`` argument (ConfigError if < 0, or
        ``plausible`` and almost certainly milliseconds)."""
        return self._bound(timeout, plausible=plausible)

    def serialize(self, serializer: Any, data: Any, what: str, topic: str) -> Any:
        return self._serialize(serializer, data, what, topic)

    # -- flush and close --------------------------------------------------------------------------

    def begin_flush(self) -> list[ProducerBatch]:
        """Start a flush; the batches it waits for. Always pair with :meth:`end_flush`."""
        self._acc.begin_flush()
        self._net.wakeup()
        return self._acc.incomplete_batches()

    def end_flush(self) -> None:
        self._acc.end_flush()

    @property
    def record_wait_s(self) -> float:
        """How long a record can still be delivered: what an unbounded wait for one is bounded by."""
        return (self._config.delivery_timeout_ms + self._config.request_timeout_ms) / 1000

    def begin_close(self, bound: float) -> bool:
        return self._begin_close(bound)

    def force_close(self) -> None:
        self._sender.initiate_close(force=True)

    @property
    def stopped(self) -> bool:
        """True once the Sender thread has stopped (every pending call has its outcome)."""
        return self._sender.stopped or not self._sender.is_alive()

    @property
    def sender_changed(self) -> Listeners:
        return self._sender.changed
