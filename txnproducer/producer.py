"""TransactionalProducer: the thread-safe facade applications use.

Application threads call ``send()`` (serialize, choose a partition, queue the record) and the
transactional calls; the Sender thread does all network work. Every blocking call is bounded:
by its ``timeout`` argument when given, otherwise by ``max_block_ms`` (the Java client's rule),
and raises :class:`~txnproducer.errors.TimeoutError` naming the bound when it runs out. A
transactional call that timed out keeps running in the background; calling it again waits for
the same outcome.

Why one piece (just over 600 lines): it is the public class, one method per call of the Java
client's API, each a few lines that check arguments and hand the work to the transaction manager,
the accumulator or the Sender; split, the API would be spread over files that each hold part of
one class.

Typical use::

    with TransactionalProducer(bootstrap_servers="localhost:9092", transactional_id="tx-1") as p:
        p.init_transactions()
        with p.transaction():
            p.send("orders", b"value", key=b"key")
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from kafka.util import ensure_valid_topic_name

from txnproducer import errors
from txnproducer._internal.accel import SPEEDUPS as _SPEEDUPS
from txnproducer._internal.batching.accumulator import RecordAccumulator
from txnproducer._internal.batching.batch import RecordFuture, RecordMetadata
from txnproducer._internal.call_warnings import CallWarnings
from txnproducer._internal.log import get_logger
from txnproducer._internal.metrics import ProducerMetrics
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.partitioner import (
    RECORD_OVERHEAD,
    StickyPartition,
    StickyPartitioner,
    key_partition,
)
from txnproducer._internal.protocol.record_batch import NO_HEADERS_ENCODED
from txnproducer._internal.send_checks import (
    RecordBytes,
    check_headers,
    check_partition,
    check_timestamp,
    default_serialize,
    serialize,
)
from txnproducer._internal.sender import Sender
from txnproducer._internal.txn.manager import TransactionManager
from txnproducer._internal.txn.offsets import offsets_from, resolve_group_metadata
from txnproducer._internal.txn.result import TransactionalRequestResult
from txnproducer._internal.txn.state import State
from txnproducer.config import ProducerConfig
from txnproducer.otel._attach import plan as _plan_telemetry
from txnproducer.prepared import PreparedTxnState

if TYPE_CHECKING:
    from txnproducer._internal.accel._speedups import SendPath

__all__ = ["RecordFuture", "RecordMetadata", "TransactionalProducer"]

HeadersArg = Sequence[tuple[str, Any]] | Mapping[str, Any] | None

_NO_HEADERS: tuple[tuple[str, RecordBytes | None], ...] = ()  # shared: most records have no headers
# send() compares the state twice per record: a module constant is one global lookup, where
# ``State.IN_TRANSACTION`` goes through the enum class's descriptor (about 55 ns each, 3.11)
_IN_TRANSACTION = State.IN_TRANSACTION


class TransactionalProducer:
    """Exactly-once producer with the Java client's transactional API (KIP-98, KIP-890 TV2).

    Settings: keyword arguments (``linger_ms=5``), a mapping in Java spelling given positionally
    (``TransactionalProducer({"bootstrap.servers": ..., "transactional.id": ...})``, as
    confluent-kafka's ``Producer({...})``), or a :class:`~txnproducer.ProducerConfig`. Settings are
    milliseconds (``*_ms``); every call's ``timeout`` argument is seconds, ``None`` meaning
    ``max_block_ms``.

    Thread-safe, with the Java client's rule: one transaction at a time, and a :meth:`send` from
    any thread joins the open transaction; transactional calls are meant to come from one thread
    at a time. Threads that each need their own transaction use a
    :class:`~txnproducer.TransactionalProducerPool` (docs/concurrency.md).

    Raises on construction :class:`~txnproducer.errors.ConfigError` for invalid settings.
    Connecting happens in the background; :meth:`init_transactions` waits for it.

    ``tracer_provider`` / ``meter_provider``: OpenTelemetry providers to trace the transactions and
    export the metrics with; ``record_spans=True``: a span per record instead of per batch
    (docs/guide/observability.md; :func:`txnproducer.otel.instrument` does this for every producer).
    """

    def __init__(self, config: ProducerConfig | Mapping[str, Any] | None = None, *,
                 tracer_provider: Any = None, meter_provider: Any = None, record_spans: bool | None = None,
                 **settings: Any) -> None:
        telemetry = _plan_telemetry(tracer_provider, meter_provider, record_spans)  # None: off
        config = ProducerConfig.from_arguments(config, settings)
        self._config = config
        self._max_block_s = config.max_block_ms / 1000
        # send()'s bound on waiting for buffer memory (0: never wait, for txnproducer.aio)
        self._send_block_s = self._max_block_s
        self._log = get_logger("txnproducer.producer").bind(
            transactional_id=config.transactional_id)
        self._metrics = ProducerMetrics()
        self._net = NetworkClient(config)
        self._tm = TransactionManager(
            transactional_id=config.transactional_id,
            transaction_timeout_ms=config.transaction_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            transaction_retry_backoff_ms=config.transaction_retry_backoff_ms,
            logger=get_logger("txnproducer.transaction_manager"),
            metrics=self._metrics,
            max_versions=self._broker_max_version,
            enable_2pc=bool(getattr(config, "enable_2pc", False)),
        )
        self._acc = RecordAccumulator(
            transaction_manager=self._tm,
            batch_size=config.batch_size,
            linger_ms=config.linger_ms,
            buffer_memory=config.buffer_memory,
            max_request_size=config.max_request_size,
            compression_type=config.compression_type,
            compression_gzip_level=config.compression_gzip_level,
            delivery_timeout_ms=config.delivery_timeout_ms,
            request_timeout_ms=config.request_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            retry_backoff_max_ms=config.retry_backoff_max_ms,
            max_in_flight=config.max_in_flight_requests_per_connection,
            wakeup=self._net.wakeup,
            sender_looks_by=self._net.looks_by,
        )
        self._sender = Sender(network=self._net, accumulator=self._acc, transaction_manager=self._tm,
                              config=config, metrics=self._metrics)
        self._key_serializer: Callable[[Any], Any] = config.key_serializer or default_serialize
        self._value_serializer: Callable[[Any], Any] = config.value_serializer or default_serialize
        # serializer None means "bytes pass through": send() skips the call for bytes
        self._plain_keys = config.key_serializer is None
        self._plain_values = config.value_serializer is None
        self._partitioner = config.partitioner
        # one TopicPartition per (topic, partition), reused by every send() (saves an allocation)
        self._tps: dict[str, dict[int, TopicPartition]] = {}
        # keyless records: the Java client's built-in sticky partitioner (KIP-794)
        self._sticky = StickyPartitioner(config.batch_size, self._net.available_partitions_for,
                                         self._topic_partition)
        # partitions already handed to the TM in this transaction (saves a TM lock per record)
        self._added: set[TopicPartition] = set()
        self._lock = threading.Lock()
        self._pending: dict[str, Any] = {}
        self._closed = False
        self._call_warnings = CallWarnings(self._log, max(
            config.max_block_ms, config.delivery_timeout_ms, config.transaction_timeout_ms))
        # send()'s common case compiled (txnproducer._internal.accel): it returns None, having
        # changed nothing, for every case it does not take, and send() below goes on as without it
        self._fast_send: SendPath | None = None
        # (not with a custom partitioner or value serializer: every record would be handed back)
        if _SPEEDUPS is not None and self._acc.appender is not None and self._partitioner is None \
                and self._plain_values:
            fast: SendPath = _SPEEDUPS.SendPath(
                self, self._tm, self._net, self._sticky,
                self._sticky.current_by_topic, config.batch_size, self._tps, self._acc.appender,
                NO_HEADERS_ENCODED, RECORD_OVERHEAD, self._plain_keys, self._plain_values,
                self._partitioner is None, StickyPartition, self._net.partition_cache, self._added,
                _PYTHON_SEND, self._acc.start_batch)
            # Its state is pushed to it, not read per record: the TM's transitions (none can happen
            # before the Sender starts), a Sender crash, close().
            self._tm.in_transaction_listener = fast.set_in_transaction
            self._sender.on_crash = fast.mark_crashed
            self._fast_send = fast
            # ``producer.send`` is then the compiled path itself, which hands every case it does
            # not take to the method below: a Python frame less per record (~0.08 us of ~0.5).
            # Not when a subclass overrides send() or the class's send() is patched (a mock, an
            # instrumentation wrapper): the instance attribute would hide them.
            if type(self).send is _PYTHON_SEND:
                self.__dict__["send"] = fast
        # OpenTelemetry (txnproducer.otel), None unless asked for: when tracing, ``send`` is its wrapper
        self._telemetry = None if telemetry is None else telemetry.attach(
            self, transaction_manager=self._tm, sender=self._sender, network=self._net)
        self._sender.start()

    def _broker_max_version(self, api_key: int) -> int | None:
        features = self._net.features
        return None if features is None else features.max_version(api_key)

    # -- properties ---------------------------------------------------------------------------

    @property
    def config(self) -> ProducerConfig:
        return self._config

    @property
    def state(self) -> Any:
        """The transaction manager's state, a :class:`~txnproducer.TransactionState`."""
        return self._tm.state

    @property
    def producer_id(self) -> int:
        """Current producer id (-1 before ``init_transactions``)."""
        pe = self._tm.producer_id_and_epoch
        return -1 if pe is None else int(pe.producer_id)

    @property
    def epoch(self) -> int:
        """Current producer epoch (-1 before ``init_transactions``); TV2 bumps it every transaction."""
        pe = self._tm.producer_id_and_epoch
        return -1 if pe is None else int(pe.epoch)

    @property
    def transaction_version(self) -> int:
        """1 or 2 once known (decided at ``init_transactions``, re-checked between transactions)."""
        return int(self._tm.transaction_version)

    @property
    def closed(self) -> bool:
        return self._closed

    # -- helpers ----------------------------------------------------------------------------------

    def _check_open(self, call: str) -> None:
        if self._closed:
            raise errors.ClosedError(f"{call}() called on a closed producer; create a new one")
        if self._sender.crashed is not None:
            raise errors.ClosedError(f"{call}(): the producer's network thread stopped: "
                                     f"{self._sender.crashed!r}")

    def _bound(self, timeout: float | None, *, plausible: bool = True) -> tuple[float, str]:
        """(seconds, name of the bound) for a call's ``timeout`` argument (seconds; None:
        ``max_block_ms``). ConfigError for a negative one; with ``plausible``, one that is almost
        certainly milliseconds is logged (close() does not ask: closing is not the place)."""
        if timeout is None:
            return self._max_block_s, "max_block_ms"
        if timeout < 0:
            raise errors.ConfigError(f"timeout must be >= 0 seconds or None, got {timeout!r}")
        if plausible:
            self._call_warnings.timeout(timeout)
        return float(timeout), "timeout"

    def _await(self, op: str, start: Callable[[], Any], timeout: float | None,
               bound_name: str | None = None) -> None:
        """Start ``op`` once, wait bounded; a timed-out op is waited for again on the next call."""
        if bound_name is not None and timeout is not None:
            bound, name = timeout, bound_name
        else:
            bound, name = self._bound(timeout)
        result = self._start_op(op, start)
        try:
            result.wait(bound, name)
        except errors.TimeoutError:
            raise
        except BaseException:
            self._forget(op, result)
            raise
        self._forget(op, result)

    def _start_op(self, op: str,
                  start: Callable[[], TransactionalRequestResult]) -> TransactionalRequestResult:
        """The result of ``op`` still pending from an earlier call, else of a new ``start()``."""
        with self._lock:
            result: TransactionalRequestResult | None = self._pending.get(op)
            if result is None:
                if self._telemetry is None:
                    result = start()
                else:
                    # the Sender takes a queued request under the transaction manager's lock: holding it
                    # until the call's span exists keeps its requests from being sent (and traced as
                    # the transaction's) before it
                    with self._tm.lock:
                        result = start()
                        self._telemetry.operation_started(op, result)
                self._pending[op] = result
        self._sender.wakeup()
        return result

    def _forget(self, op: str, result: Any) -> None:
        with self._lock:
            if self._pending.get(op) is result:
                del self._pending[op]

    # -- transactional API --------------------------------------------------------------------------

    def init_transactions(self, timeout: float | None = None, keep_prepared_txn: bool = False) -> None:
        """Register the transactional id with its coordinator, fencing older instances and
        aborting (or completing) any transaction they left open. ``timeout``: seconds, default
        ``max_block_ms``.

        Raises TimeoutError (cluster unreachable or coordinator busy within the bound; call
        again to keep waiting), FatalError subclasses (fenced, not authorized, unsupported),
        IllegalStateError (already initialized), ClosedError.
        """
        self._check_open("init_transactions")
        bound, name = self._bound(timeout)
        deadline = time.monotonic() + bound
        self._sender.wait_ready(bound)
        self._await("init", lambda: self._tm.initialize_transactions(keep_prepared_txn),
                    max(0.0, deadline - time.monotonic()), name)
        self._log.info("txn.initialized", producer_id=self.producer_id, epoch=self.epoch,
                       transaction_version=self.transaction_version)

    def begin_transaction(self) -> None:
        """Start a transaction (local only: nothing is sent until the first record or offsets).

        Raises IllegalStateError when not READY, FatalError after a fatal error, ClosedError.
        """
        self._check_open("begin_transaction")
        # Replaced before the state changes: a send() that sees the new IN_TRANSACTION then finds
        # this empty set and registers its partition (replaced, not cleared: a send() of the
        # previous transaction keeps a consistent view).
        self._added = set()
        if self._fast_send is not None:
            self._fast_send.set_added(self._added)
        self._tm.begin_transaction()
        with self._lock:
            self._pending.pop("commit", None)
            self._pending.pop("abort", None)
            self._pending.pop("offsets", None)

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | Iterable[Any],
        group_metadata: Any,
        timeout: float | None = None,
    ) -> None:
        """Commit consumed ``offsets`` for ``group_metadata``'s group as part of this transaction.

        ``offsets``: the *next* offsets to consume, as ``{TopicPartition: offset or
        OffsetAndMetadata}`` or a list of confluent-kafka ``TopicPartition`` with offsets set
        (``consumer.position(consumer.assignment())``; their logical offsets such as
        ``OFFSET_INVALID`` are skipped, as confluent-kafka does). ``group_metadata``: the consumer's
        group membership, so that the group coordinator fences a zombie consumer (KIP-447) - the
        consumer itself (kafka-python's ``KafkaConsumer``, confluent-kafka's ``Consumer``), its
        ``group_metadata()`` (any object with ``group_id``, ``generation_id``, ``member_id`` and
        ``group_instance_id``), or confluent-kafka's ``consumer.consumer_group_metadata()``. A bare
        group id string still works but cannot fence zombies: deprecated, as in the Java client
        (a warning, once per producer). ``timeout``: seconds, default ``max_block_ms``.

        Raises CommitFailedError (group rebalanced: abort and reprocess), other AbortableError,
        FatalError, IllegalStateError, TimeoutError, ConfigError (a shape not listed above),
        ClosedError.
        """
        self._check_open("send_offsets_to_transaction")
        converted, gm = self._offsets_args(offsets, group_metadata)
        self._await("offsets", lambda: self._tm.send_offsets_to_transaction(converted, gm), timeout)

    def _offsets_args(self, offsets: Any, group_metadata: Any
                      ) -> tuple[dict[TopicPartition, OffsetAndMetadata], ConsumerGroupMetadata]:
        """send_offsets_to_transaction()'s arguments checked (ConfigError) and converted."""
        resolved = resolve_group_metadata(group_metadata)
        if isinstance(resolved, str):
            self._call_warnings.bare_group_id(resolved, self._caller_stacklevel)
            resolved = ConsumerGroupMetadata(group_id=resolved)
        return offsets_from(offsets), resolved

    #: how many frames up from _offsets_args() the application's call is (a warning points there)
    _caller_stacklevel = 3

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush every record of the transaction, then commit it atomically. ``timeout``:
        seconds, default ``max_block_ms`` (a value that can only be milliseconds is logged).

        Raises AbortableError subclasses (call :meth:`abort_transaction`), FatalError
        subclasses (close the producer), IllegalStateError, TimeoutError (call again to keep
        waiting for the same commit), ClosedError.
        """
        self._check_open("commit_transaction")
        self._await("commit", self._tm.begin_commit, timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the open transaction: queued records fail with TransactionAbortedError and
        nothing sent in it becomes visible to read_committed consumers. ``timeout``: seconds,
        default ``max_block_ms``.

        Raises FatalError subclasses, IllegalStateError, TimeoutError (call again to keep
        waiting), ClosedError.
        """
        self._check_open("abort_transaction")
        self._await("abort", self._tm.begin_abort, timeout)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[TransactionalProducer]:
        """``with producer.transaction():`` begins; commits on success; on an exception (or a
        commit that failed with an abortable error) aborts and re-raises. Bounds: as
        :meth:`commit_transaction` / :meth:`abort_transaction` (``max_block_ms`` each)."""
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            self._abort_quietly()
            raise
        try:
            self.commit_transaction()
        except errors.AbortableError:
            self._abort_quietly()
            raise

    def prepare_transaction(self, timeout: float | None = None) -> PreparedTxnState:
        """Phase one of a two-phase commit: flush, wait for every record of the transaction, and
        freeze it (state PREPARED_TRANSACTION: only commit/abort/complete are allowed after).

        The returned :class:`~txnproducer.PreparedTxnState` (JSON/picklable) names the
        transaction; any producer for the same transactional id can later commit or abort it
        with :meth:`complete_transaction`. The transaction must be completed within
        ``transaction_timeout_ms`` of its first record unless ``enable_2pc`` is on (KIP-939),
        otherwise the coordinator aborts it and completing raises PreparedTransactionLostError.
        ``timeout``: seconds for the flush, default as :meth:`flush`. Raises AbortableError (a
        record failed: abort), FatalError, IllegalStateError, TimeoutError (flush bound),
        ClosedError.
        """
        self._check_open("prepare_transaction")
        self._tm.fail_if_not_ready_for_send("prepare_transaction")
        self.flush(timeout)
        return self._tm.prepare_transaction()

    def complete_transaction(self, state: PreparedTxnState, *, commit: bool = True,
                             timeout: float | None = None) -> None:
        """Phase two: commit (or with ``commit=False`` abort) the prepared transaction ``state``.

        On a producer in PREPARED_TRANSACTION (it prepared, or ``init_transactions(
        keep_prepared_txn=True)`` found one) this is KIP-939's ``completeTransaction``: commit if
        ``state`` names the prepared transaction, abort otherwise. On a producer that was never
        initialized it sends EndTxn with the recorded producer id/epoch (brokers without
        KIP-939; ``init_transactions()`` would abort the transaction). A second commit of a
        committed transaction succeeds. Raises PreparedTransactionLostError (the coordinator
        already aborted it: its records are lost), IllegalStateError, FatalError, TimeoutError
        (call again to keep waiting), ClosedError. ``timeout``: seconds, default ``max_block_ms``.
        """
        self._check_open("complete_transaction")
        bound, name = self._bound(timeout)
        deadline = time.monotonic() + bound
        if self._tm.state is State.UNINITIALIZED:
            self._sender.wait_ready(bound)  # the transaction version picks the EndTxn version
        self._await("complete", lambda: self._tm.complete_transaction(state, commit),
                    max(0.0, deadline - time.monotonic()), name)

    def _abort_quietly(self) -> None:
        try:
            self.abort_transaction()
        except errors.TxnProducerError as exc:  # keep the original error visible
            self._log.warning("txn.abort_failed", error=repr(exc))

    # -- data -------------------------------------------------------------------------------------

    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             timestamp_ms: int | None = None, headers: HeadersArg = None) -> RecordFuture:
        """Queue one record in the open transaction and return its :class:`RecordFuture`.

        Blocks only to fetch metadata of a new topic or while buffer memory is full, both
        bounded by ``max_block_ms`` (TimeoutError). Raises SerializationError,
        RecordTooLargeError, InvalidRecordError (bad topic/partition/timestamp/headers), IllegalStateError
        (no transaction open), AbortableError/FatalError (the transaction already failed),
        ClosedError.
        """
        # Where ``producer.send`` is the compiled path, it tried this record already and hands it
        # here (a new batch, a topic's first record, any argument it does not take as it is, ...):
        # the repeat is on the slow path only, and keeps the compiled path for subclasses and
        # patched classes, which call this method. Every argument is checked below, before anything
        # is queued (``_internal/send_checks.py``): the one validation of both paths.
        fast = self._fast_send
        if fast is not None and headers is None:
            future = fast.try_send(topic, value, key, timestamp_ms, partition)
            if future is not None:
                return future
        if self._closed or self._sender.crashed is not None:
            self._check_open("send")
        if self._tm.state is not _IN_TRANSACTION:  # lock-free fast path; the TM re-checks
            self._tm.fail_if_not_ready_for_send()
        if not isinstance(topic, str) or not topic:
            raise errors.InvalidRecordError(f"topic must be a non-empty string, got {topic!r}")
        key_bytes: Any  # bytes, bytearray or a memoryview of bytes (send_checks), or None
        value_bytes: Any
        if key is None or (self._plain_keys and type(key) is bytes):
            key_bytes = key
        else:
            key_bytes = serialize(self._key_serializer, key, "key", topic)
        if value is None or (self._plain_values and type(value) is bytes):
            value_bytes = value
        else:
            value_bytes = serialize(self._value_serializer, value, "value", topic)
        header_list: Any = _NO_HEADERS if headers is None else check_headers(headers)
        if timestamp_ms is not None:
            timestamp_ms = check_timestamp(timestamp_ms)
        parts = self._net.partition_cache.get(topic) or self._net.partitions_for(topic)
        if parts is None:  # the only blocking step before append: start the max_block_ms clock
            deadline = time.monotonic() + self._max_block_s
            parts = self._wait_for_partitions(topic, deadline)
            max_block_s = max(0.0, deadline - time.monotonic())
        else:
            max_block_s = self._send_block_s
        sticky: StickyPartition | None = None
        if partition is None and key_bytes is None and self._partitioner is None:
            sticky = self._sticky.current(topic, parts)  # keyless: the built-in partitioner
            tp = sticky.tp
        else:
            tp = self._topic_partition(topic, self._partition(topic, parts, partition, key_bytes))
        future, wake = self._acc.append(tp, timestamp_ms, key_bytes, value_bytes, header_list, max_block_s)
        # Only now, with the record queued, is tp part of the transaction (the Java client's
        # order): a send() that raised above must not start a transaction the coordinator would
        # then be asked to end. ``_added`` spares later records of tp the TM's lock; it is read
        # after the state (see begin_transaction()).
        if self._tm.state is not _IN_TRANSACTION or tp not in self._added:
            self._tm.add_partition(tp)
            self._added.add(tp)
        if sticky is not None:
            size = RECORD_OVERHEAD
            if key_bytes is not None:
                size += len(key_bytes)
            if value_bytes is not None:
                size += len(value_bytes)
            if header_list:
                size += sum(len(k) + len(v or b"") for k, v in header_list)
            self._sticky.appended(topic, sticky, size, lambda: self._acc.is_last_batch_full(tp))
        if wake:
            self._net.wakeup()
        return future

    def _topic_partition(self, topic: str, partition: int) -> TopicPartition:
        """One TopicPartition per (topic, partition), reused by every send()."""
        tps = self._tps.get(topic)
        if tps is None:
            tps = self._tps[topic] = {}
        tp = tps.get(partition)
        if tp is None:
            tp = tps[partition] = TopicPartition(topic, partition)
        return tp

    #: serialize() as a method: the asyncio core serializes with it before its send()
    _serialize = staticmethod(serialize)

    def _wait_for_partitions(self, topic: str, deadline: float) -> list[int]:
        try:
            ensure_valid_topic_name(topic)
        except (TypeError, ValueError) as exc:
            raise errors.InvalidRecordError(f"invalid topic name {topic!r}: {exc}") from None
        try:
            return self._net.wait_for_topic(topic, max(0.0, deadline - time.monotonic()))
        except errors.TopicAuthorizationError as exc:
            # as the Java client's send(): the open transaction can no longer commit
            self._tm.transition_to_abortable_error(exc)
            raise

    def _partition(self, topic: str, parts: list[int], partition: int | None, key: Any) -> int:
        if partition is not None:
            return check_partition(topic, parts, partition)
        if self._partitioner is not None:
            available = self._net.available_partitions_for(topic)
            chosen = self._partitioner(topic, None if key is None else bytes(key), parts, available)
            if chosen not in parts:
                raise errors.InvalidRecordError(
                    f"partitioner returned {chosen!r}, not a partition of {topic!r}")
            return int(chosen)
        # keyed records (keyless ones never get here: the sticky partitioner placed them)
        return key_partition(key, len(parts))

    def flush(self, timeout: float | None = None) -> None:
        """Send every queued record now and wait until each is acknowledged or failed.

        ``timeout``: seconds; ``None`` waits as long as records can still be delivered (about
        ``delivery_timeout_ms``). Raises TimeoutError, ClosedError.
        """
        self._check_open("flush")
        if timeout is not None:  # checked before the flush starts: nothing to undo
            self._bound(timeout)
        self._acc.begin_flush()
        self._net.wakeup()
        self._acc.await_flush_completion(timeout)

    def partitions_for(self, topic: str) -> list[int]:
        """Partition ids of ``topic`` (fetching metadata, bounded by ``max_block_ms``)."""
        self._check_open("partitions_for")
        try:
            ensure_valid_topic_name(topic)
        except (TypeError, ValueError) as exc:
            raise errors.ConfigError(f"invalid topic name {topic!r}: {exc}") from None
        return self._net.wait_for_topic(topic, self._max_block_s)

    def metrics(self) -> dict[str, float]:
        """Totals mirroring the Java client's producer and transaction metrics: times in
        nanoseconds (``txn_commit_time_ns_total``, ...), sizes in bytes, the rest counts."""
        snap = self._metrics.snapshot()
        snap["buffer_total_bytes"] = float(self._config.buffer_memory)
        snap["buffer_available_bytes"] = float(self._config.buffer_memory - self._acc.used_memory)
        return snap

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self, timeout: float | None = None) -> None:
        """Send queued records, abort an open transaction, and stop (idempotent).

        Waits at most ``timeout`` seconds (default ``max_block_ms``); after that, queued records
        fail with ClosedError and connections are dropped. ``close(0)`` closes at once (without a
        warning: it was asked for).
        """
        bound, _ = self._bound(timeout, plausible=False)
        if not self._begin_close(bound):
            return
        if threading.current_thread() is self._sender:
            return  # called from a callback: the Sender finishes closing after it returns
        self._sender.join(bound)
        if self._sender.is_alive():
            # close(0) asked for it: not worth a warning
            (self._log.debug if bound == 0 else self._log.warning)("txn.close_forced", timeout_s=bound)
            self._sender.initiate_close(force=True)
            self._sender.join(max(5.0, self._config.request_timeout_ms / 1000))

    def _begin_close(self, bound: float) -> bool:
        """What close() does without waiting; False if the producer was closed already."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            if self._fast_send is not None:  # the compiled send path takes no more records
                self._fast_send.mark_closed()
        self._acc.close()
        self._sender.initiate_close(force=bound == 0)
        return True

    def __enter__(self) -> TransactionalProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"TransactionalProducer(transactional_id={self._config.transactional_id!r}, "
                f"state={getattr(self.state, 'name', self.state)})")


#: send() as defined above: a producer makes its compiled send path its ``send`` only while its
#: class's send() is still this function (not overridden by a subclass, nor patched).
_PYTHON_SEND = TransactionalProducer.send
