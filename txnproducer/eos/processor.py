"""Exactly-once consume-transform-produce: :class:`TransactionalProcessor`.

A processor reads input topics with a kafka-python consumer in a consumer group, transforms each
record into output records, and writes the outputs *and* the consumed input offsets in one Kafka
transaction (KIP-98 with KIP-447 group fencing). Either both become visible or neither does, so a
read_committed reader of the outputs sees every input exactly once, across crashes, restarts and
rebalances. The design follows franz-go's ``GroupTransactSession``:

* one loop: ``poll -> begin -> transform -> send -> send_offsets_to_transaction -> commit``; a
  transaction spans one or more polls and commits when it holds ``max_records_per_txn`` input
  records, when it is ``max_txn_time_ms`` old, or when a poll finds no more input (so output
  latency stays low when input is sparse);
* when the group takes partitions away (``on_partitions_revoked``/``on_partitions_lost``, which
  kafka-python runs while our thread is blocked in ``poll``) the open transaction is aborted
  *before* the rebalance completes, so the new owner never races our commit;
* an :class:`~txnproducer.errors.AbortableError` (for example ``CommitFailedError`` when the
  group's generation moved on) aborts, rewinds the consumer to the last committed offsets and
  continues; a :class:`~txnproducer.errors.FatalError` (fenced by a newer instance with the same
  transactional id, ...) closes the processor and is raised from :meth:`run`, and so does an
  authorization error (``GroupAuthorizationError``, ``TopicAuthorizationError``: abortable for the
  producer, but no retry succeeds until the ACLs change), after the abort and the rewind;
* an exception from the user's transform aborts the transaction, rewinds, and is raised from
  :meth:`run`: the input records of that transaction are not consumed (their offsets are not
  committed), so they are processed again by the next :meth:`run` or after a restart.

Every wait is bounded: ``poll`` by ``poll_timeout_ms``, producer calls by ``operation_timeout_ms``,
closing by ``close_timeout_ms``.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata, TopicPartition

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer.config import ProducerConfig
from txnproducer.eos.kafka_compat import (
    as_txn_error,
    close_consumer_abruptly,
    load_metadata_before_join,
    new_consumer,
    rescue_lost_join,
)
from txnproducer.eos.output_record import OutputRecord
from txnproducer.eos.progress import METRIC_NAMES, TxnProgress
from txnproducer.eos.settings import bootstrap_of, consumer_settings, producer_settings
from txnproducer.eos.transform import UNTRACED, apply_transform, processor_tracing
from txnproducer.otel import set_abort_reason
from txnproducer.producer import TransactionalProducer

__all__ = ["CrashPoint", "TransactionalProcessor"]

Transform = Callable[[Any], Iterable[OutputRecord]]
BatchTransform = Callable[[list[Any]], Iterable[OutputRecord]]
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata]], None]
AssignCallback = Callable[[set[TopicPartition]], None]
CrashPoint = Literal["after_send", "before_commit"]



class _UserCodeError(Exception):
    """Carries an exception of the user's transform (or of an output it produced) out of the loop."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


class _Crashed(Exception):
    """Raised at a crash point by :meth:`TransactionalProcessor.simulate_crash` (tests only)."""


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Forwards kafka-python's rebalance callbacks to the processor."""

    def __init__(self, processor: TransactionalProcessor) -> None:
        self._processor = processor

    def on_partitions_revoked(self, revoked: Any) -> None:
        self._processor._on_partitions_taken(set(revoked), lost=False)

    def on_partitions_lost(self, lost: Any) -> None:
        self._processor._on_partitions_taken(set(lost), lost=True)

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._processor._on_partitions_assigned(set(assigned))


# Abortable errors after which the loop stops: the aborted transaction's input is rewound, but
# the next attempt cannot succeed until the ACLs change.
_NEEDS_AN_OPERATOR: tuple[type[errors.AbortableError], ...] = (
    errors.GroupAuthorizationError,
    errors.TopicAuthorizationError,
)
_STOPS_THE_LOOP: tuple[type[errors.TxnProducerError], ...] = (errors.FatalError, *_NEEDS_AN_OPERATOR)


def _default_producer_factory(config: ProducerConfig, **telemetry: Any) -> Any:
    return TransactionalProducer(config, **telemetry)


class TransactionalProcessor:
    """A consume-transform-produce loop with exactly-once results (see the module docstring).

    ``input_topics``: topic name or names to subscribe to. ``consumer_config``: kafka-python
    ``KafkaConsumer`` keyword arguments; ``group_id`` is required, ``isolation_level`` is forced to
    ``"read_committed"`` and ``enable_auto_commit`` to ``False`` (asking for anything else raises
    :class:`~txnproducer.errors.ConfigError`), ``auto_offset_reset`` defaults to ``"earliest"``.
    ``producer_config``: a :class:`~txnproducer.ProducerConfig` or a mapping of its settings.

    The transactional id identifies this *instance*: stable across its restarts (a restarted
    instance fences its crashed predecessor, whose open transaction the coordinator then aborts)
    and distinct between instances. It is ``transactional_id`` if given, else
    ``f"{group_id}-{instance_name}"``, else the one in ``producer_config``.

    Give exactly one of ``transform(record) -> iterable of OutputRecord`` (called per input record)
    or ``transform_batch(records) -> iterable of OutputRecord`` (called per polled batch, records
    in per-partition order). ``on_commit(offsets)`` is called on the loop's thread after every
    committed transaction with the input offsets it committed; ``on_assigned(partitions)`` after
    every rebalance with the new assignment (on kafka-python's IO thread: keep it short).

    Threads: :meth:`run` runs the loop on the calling thread; :meth:`stop` may be called from any
    thread. The consumer and producer are created by the first :meth:`run` (or :meth:`start`);
    ``consumer_factory(**kwargs)`` / ``producer_factory(config)`` replace kafka-python's
    ``KafkaConsumer`` / :class:`~txnproducer.TransactionalProducer` (for tests with fakes).
    ``tracer_provider``, ``meter_provider``: OpenTelemetry, for it and its producer (README "Observability").
    """

    def __init__(
        self,
        input_topics: str | Sequence[str],
        *,
        consumer_config: Mapping[str, Any],
        producer_config: ProducerConfig | Mapping[str, Any],
        transform: Transform | None = None,
        transform_batch: BatchTransform | None = None,
        instance_name: str | None = None,
        transactional_id: str | None = None,
        max_records_per_txn: int = 500,
        max_txn_time_ms: int = 1000,
        poll_timeout_ms: int = 100,
        operation_timeout_ms: int = 30000,
        close_timeout_ms: int = 10000,
        on_commit: CommitCallback | None = None,
        on_assigned: AssignCallback | None = None,
        consumer_factory: Callable[..., Any] | None = None,
        producer_factory: Callable[[ProducerConfig], Any] | None = None,
        tracer_provider: Any = None, meter_provider: Any = None,
    ) -> None:
        topics = [input_topics] if isinstance(input_topics, str) else list(input_topics)
        if not topics or not all(isinstance(t, str) and t for t in topics):
            raise errors.ConfigError(f"input_topics must be a topic name or names, got {input_topics!r}")
        if (transform is None) == (transform_batch is None):
            raise errors.ConfigError("give exactly one of transform= or transform_batch=")
        for name, value, low in (("max_records_per_txn", max_records_per_txn, 1),
                                 ("max_txn_time_ms", max_txn_time_ms, 1),
                                 ("poll_timeout_ms", poll_timeout_ms, 0),
                                 ("operation_timeout_ms", operation_timeout_ms, 1),
                                 ("close_timeout_ms", close_timeout_ms, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise errors.ConfigError(f"{name} must be an int >= {low}, got {value!r}")
        producer_bootstrap = (producer_config.bootstrap_servers if isinstance(producer_config, ProducerConfig)
                              else bootstrap_of(producer_config))
        self._consumer_settings = consumer_settings(consumer_config, producer_bootstrap)
        self._group_id: str = self._consumer_settings["group_id"]
        self._producer_config = producer_settings(
            producer_config, self._group_id, instance_name, transactional_id,
            self._consumer_settings["bootstrap_servers"])
        self._topics = topics
        self._transform = transform
        self._transform_batch = transform_batch
        self._max_records = max_records_per_txn
        self._max_txn_ms = max_txn_time_ms
        self._poll_ms = poll_timeout_ms
        self._op_s = operation_timeout_ms / 1000
        self._close_s = close_timeout_ms / 1000
        self._on_commit = on_commit
        self._on_assigned = on_assigned
        self._assigned: frozenset[TopicPartition] = frozenset()
        self._consumer_factory = consumer_factory or new_consumer
        self._producer_factory = producer_factory or functools.partial(
            _default_producer_factory, tracer_provider=tracer_provider, meter_provider=meter_provider)
        self._tracing = processor_tracing(tracer_provider, self._consumer_settings["group_id"])
        self._log = get_logger("txnproducer.eos").bind(
            transactional_id=self._producer_config.transactional_id, group_id=self._group_id)

        self._consumer: Any = None
        self._producer: Any = None
        self._progress = TxnProgress()
        self._lock = threading.Lock()
        self._metrics = dict.fromkeys(METRIC_NAMES, 0)
        self._stop_requested = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._run_thread: threading.Thread | None = None
        self._closed = False
        self._crash_at: CrashPoint | None = None
        self._listener_error: BaseException | None = None
        # partitions assigned since the last poll: their positions are set from the group's
        # committed offsets before any of their records is processed (see _resync_positions)
        self._resync: set[TopicPartition] = set()

    # -- properties ---------------------------------------------------------------------------

    @property
    def transactional_id(self) -> str:
        return self._producer_config.transactional_id

    @property
    def group_id(self) -> str:
        return self._group_id

    @property
    def producer(self) -> Any:
        """The TransactionalProducer (``None`` before :meth:`start`)."""
        return self._producer

    @property
    def consumer(self) -> Any:
        """The kafka-python KafkaConsumer (``None`` before :meth:`start`); do not poll it yourself."""
        return self._consumer

    @property
    def closed(self) -> bool:
        return self._closed

    def assignment(self) -> frozenset[TopicPartition]:
        """The input partitions this instance owns now (empty before the first rebalance)."""
        return self._assigned

    def metrics(self) -> dict[str, int]:
        """Counters: transactions committed/aborted (and why), records polled, records in and out
        of committed transactions, rebalances (assignments received)."""
        with self._lock:
            return dict(self._metrics)

    def _count(self, **increments: int) -> None:
        with self._lock:
            for name, n in increments.items():
                self._metrics[name] += n

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Create the producer (``init_transactions``: fences an older instance with the same
        transactional id and aborts what it left open) and the subscribed consumer. Idempotent;
        :meth:`run` calls it."""
        if self._closed:
            raise errors.ClosedError("the processor is closed; create a new one")
        if self._producer is None:
            producer = self._producer_factory(self._producer_config)
            try:
                producer.init_transactions(timeout=self._op_s)
            except BaseException:
                producer.close(timeout=self._close_s)
                raise
            self._producer = producer
        if self._consumer is None:
            try:
                consumer = self._consumer_factory(**self._consumer_settings)
            except KafkaError as exc:  # kafka-python's own classes must not escape a public call
                raise as_txn_error(exc, "creating the consumer") from exc
            consumer.subscribe(topics=self._topics, listener=_Listener(self))
            load_metadata_before_join(consumer)
            self._consumer = consumer

    def run(self, stop_event: threading.Event | None = None,
            max_transactions: int | None = None) -> dict[str, int]:
        """Run the loop until :meth:`stop` (the processor is then closed), ``stop_event`` is set or
        ``max_transactions`` transactions were committed by this call (the open transaction is
        committed first; the processor stays open: call :meth:`run` again or :meth:`stop`).

        Returns :meth:`metrics`. Raises a FatalError (the processor is closed), the exception of
        the transform (the transaction was aborted and the consumer rewound: the same input
        records come again on the next :meth:`run` or after a restart), ClosedError, or any other
        unexpected error (the processor is closed).
        """
        with self._lock:
            if self._run_thread is not None:
                raise errors.IllegalStateError("run() is already running on another thread")
            if self._closed:
                raise errors.ClosedError("the processor is closed; create a new one")
            self._run_thread = threading.current_thread()
            self._idle.clear()
        try:
            return self._run(stop_event, max_transactions)
        finally:
            with self._lock:
                self._run_thread = None
            self._idle.set()

    def _run(self, stop_event: threading.Event | None, max_transactions: int | None) -> dict[str, int]:
        committed_before = self.metrics()["transactions_committed"]
        try:
            self.start()
            while True:
                if self._stop_requested.is_set() or (stop_event is not None and stop_event.is_set()):
                    break
                if (max_transactions is not None
                        and self.metrics()["transactions_committed"] - committed_before >= max_transactions):
                    break
                polled = self._poll_and_process()
                if self._progress.open and (polled == 0 or self._progress.records_in >= self._max_records
                                            or self._progress.age_ms() >= self._max_txn_ms):
                    self._commit()
            if self._progress.open:
                self._commit()
            if self._stop_requested.is_set():
                self._shutdown()
            return self.metrics()
        except _Crashed:
            self._log.warning("eos.simulated_crash")
            return self.metrics()
        except _UserCodeError as exc:
            raise exc.original from None
        except _STOPS_THE_LOOP as exc:
            self._log.error("eos.fatal_error", error=repr(exc))
            self._shutdown(after_fatal=True)
            raise
        except BaseException as exc:
            self._log.error("eos.unexpected_error", error=repr(exc))
            self._shutdown(after_fatal=True)
            raise

    def stop(self, timeout: float | None = None) -> bool:
        """Finish (commit) the open transaction - or abort it if it cannot commit - then close the
        consumer (leaving the group) and the producer. Thread-safe and idempotent.

        Called while :meth:`run` is active on another thread, it asks the loop to stop and waits
        up to ``timeout`` seconds (default: ``operation_timeout_ms + 2 * close_timeout_ms`` plus
        one poll) for it; returns False if the loop did not finish in time.
        """
        self._stop_requested.set()
        bound = timeout if timeout is not None else (self._op_s + 2 * self._close_s + self._poll_ms / 1000)
        with self._lock:
            run_thread = self._run_thread
        if run_thread is threading.current_thread():
            return True  # called from the transform: the loop stops after this batch
        if run_thread is not None and not self._idle.wait(bound):
            return False
        self._shutdown()  # no-op if the loop closed already
        return True

    close = stop

    def __enter__(self) -> TransactionalProcessor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def simulate_crash(self, at: CrashPoint = "before_commit") -> None:
        """Testing hook: make the loop die like a killed process at the next crash point.

        ``"after_send"``: right after the outputs of a batch were sent (and flushed);
        ``"before_commit"``: after the offsets were added to the transaction, before the commit.
        The loop then drops its connections without aborting, without leaving the group and
        without closing gracefully, and :meth:`run` returns. The group coordinator removes the
        dead member after its session timeout; the transaction coordinator aborts the open
        transaction on ``transaction_timeout_ms`` or when an instance with the same transactional
        id calls ``init_transactions``. Uses kafka-python internals to close the consumer's
        sockets abruptly.
        """
        self._crash_at = at

    def _maybe_crash(self, point: CrashPoint) -> None:
        if self._crash_at != point:
            return
        self._producer.flush(timeout=self._op_s)  # the data is on the brokers: a txn truly left open
        self._closed = True
        try:
            self._producer.close(timeout=0)  # force: no abort, connections dropped
        finally:
            close_consumer_abruptly(self._consumer)
        raise _Crashed()

    def _shutdown(self, after_fatal: bool = False) -> None:
        """Close both clients (bounded). The open transaction is aborted unless the producer
        failed fatally (then the coordinator aborts it)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._progress.open and not after_fatal:
            try:
                self._abort(reason="close")
            except Exception as exc:  # closing goes on; the coordinator aborts on its timeout
                self._log.warning("eos.abort_on_close_failed", error=repr(exc))
        self._progress.reset()
        try:
            if self._consumer is not None:
                self._consumer.close(autocommit=False, timeout_ms=int(self._close_s * 1000))
        except Exception as exc:  # closing must go on to the producer
            self._log.warning("eos.consumer_close_failed", error=repr(exc))
        finally:
            if self._producer is not None:
                self._producer.close(timeout=self._close_s)
        self._log.info("eos.closed", **self.metrics())

    # -- the loop ---------------------------------------------------------------------------------

    def _poll_and_process(self) -> int:
        """Poll once; transform and send what came. Returns the number of records polled."""
        progress = self._progress
        room = self._max_records - progress.records_in if progress.open else self._max_records
        timeout_ms = self._poll_ms
        if progress.open:
            timeout_ms = min(timeout_ms, max(0, int(self._max_txn_ms - progress.age_ms())))
        try:
            batches = self._consumer.poll(timeout_ms=timeout_ms, max_records=max(1, room))
        except KafkaError as exc:
            raise as_txn_error(exc, "polling the input topics") from exc
        self._raise_listener_error()
        rescue_lost_join(self._consumer)
        if self._resync:
            batches = self._resync_positions(batches)
        records = [record for tp_records in batches.values() for record in tp_records]
        if not records:
            return 0
        self._count(records_polled=len(records))
        if not progress.open:
            self._producer.begin_transaction()
            progress.begin()
        progress.consumed(records)
        try:
            outputs, contexts = apply_transform(records, self._transform, self._transform_batch,
                                                self._tracing, self._producer, progress.records_in)
        except Exception as exc:
            self._log.warning("eos.transform_failed", error=repr(exc))
            self._abort(reason="transform")
            raise _UserCodeError(exc) from exc
        try:
            for i, out in enumerate(outputs):
                with UNTRACED if contexts is None else contexts[i]:  # traced: the input's context
                    self._producer.send(out.topic, value=out.value, key=out.key, partition=out.partition,
                                        timestamp_ms=out.timestamp_ms, headers=out.headers)
        except (errors.ConfigError, errors.SerializationError, errors.RecordTooLargeError) as exc:
            self._log.warning("eos.bad_output_record", error=repr(exc))
            self._abort(reason="transform")
            raise _UserCodeError(exc) from exc
        except (errors.AbortableError, errors.TimeoutError) as exc:
            self._abort(reason="error", cause=exc)
            return len(records)
        progress.records_out += len(outputs)
        self._maybe_crash("after_send")
        return len(records)

    def _commit(self) -> None:
        progress = self._progress
        offsets = progress.next_offsets()
        producer = self._producer
        committing = False
        group_metadata = self._consumer.group_metadata()
        if group_metadata.generation_id < 0 or not group_metadata.member_id:
            # kafka-python reports generation -1 and no member id while it rejoins; a
            # TxnOffsetCommit without them is not fenced by the group (Kafka accepts it as a
            # "simple" commit), so a member that lost its partitions would commit them anyway
            self._abort(reason="error", cause=errors.CommitFailedError(
                "the consumer is not a member of a group generation (it is rejoining): the "
                "transaction's offsets cannot be fenced, so it is aborted and its input processed again"))
            return
        try:
            producer.send_offsets_to_transaction(offsets, group_metadata, timeout=self._op_s)
            self._maybe_crash("before_commit")
            committing = True
            try:
                producer.commit_transaction(timeout=self._op_s)
            except errors.TimeoutError:
                # the commit goes on in the background: wait for the same outcome once more
                producer.commit_transaction(timeout=self._op_s)
        except errors.AbortableError as exc:
            self._abort(reason="error", cause=exc)
            return
        except errors.TimeoutError as exc:
            if committing:
                raise errors.FatalError(
                    f"commit did not complete within 2 x operation_timeout_ms; outcome unknown: {exc}"
                ) from exc
            self._abort(reason="error", cause=exc)
            return
        self._count(transactions_committed=1, records_in=progress.records_in,
                    records_out=progress.records_out)
        self._log.debug("eos.committed", records_in=progress.records_in, records_out=progress.records_out)
        progress.reset()
        if self._on_commit is not None:
            self._on_commit(offsets)

    # -- aborting and rewinding ----------------------------------------------------------------

    def _abort(self, reason: str, cause: BaseException | None = None) -> None:
        """Abort the open transaction and put the consumer back to where it started.

        Runs on the loop's thread, so it may block on the consumer: partitions are rewound to
        their committed offsets (the truth in the group), or where this transaction started on
        them if the group has none.
        """
        start = dict(self._progress.start)
        self._progress.reset()
        self._log.info("eos.aborting", reason=reason, cause=repr(cause) if cause else None)
        set_abort_reason(self._producer, reason)  # the transaction's span says why (when traced)
        try:
            self._producer.abort_transaction(timeout=self._op_s)
        except errors.TimeoutError as exc:
            raise errors.FatalError(f"abort did not complete within operation_timeout_ms: {exc}") from exc
        self._count(transactions_aborted=1, **({"aborts_on_error": 1} if reason == "error" else {}))
        if reason == "close":
            return
        if isinstance(cause, _NEEDS_AN_OPERATOR):
            # abortable for the producer, but every retry would fail the same way until someone
            # changes the ACLs: stop here rather than loop (as Kafka Streams stops its thread)
            raise cause
        assigned = set(self._consumer.assignment() or ())
        for tp, offset in start.items():
            if tp not in assigned:
                continue
            target = offset
            try:
                committed = self._consumer.committed(tp, timeout_ms=int(self._op_s * 1000))
            except Exception as exc:  # the start position is right unless the group moved on
                self._log.warning("eos.committed_lookup_failed", partition=str(tp), error=repr(exc))
                committed = None
            if committed is not None:
                target = int(committed)
            self._consumer.seek(tp, target)

    def _on_partitions_taken(self, partitions: set[TopicPartition], lost: bool) -> None:
        """kafka-python's revocation callback (IO thread, our loop blocked in ``poll``): abort the
        open transaction before the partitions move, and rewind the ones we keep."""
        self._assigned = self._assigned - partitions
        if not self._progress.open or self._closed:
            return
        start = dict(self._progress.start)
        self._progress.reset()
        self._log.info("eos.aborting", reason="lost" if lost else "revoked", partitions=len(partitions))
        set_abort_reason(self._producer, "lost" if lost else "revoked")
        try:
            self._producer.abort_transaction(timeout=self._op_s)
        except BaseException as exc:  # raised from run() after poll returns; kafka-python must go on
            self._listener_error = exc
            return
        self._count(transactions_aborted=1, aborts_on_revocation=1)
        for tp, offset in start.items():
            with contextlib.suppress(ValueError):  # no blocking consumer call on the IO thread
                self._consumer.seek(tp, offset)

    def _on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._assigned = frozenset(partitions)
        self._resync = self._resync | set(partitions)  # replaced, not mutated: read by the loop
        self._count(rebalances=1)
        self._log.info("eos.assigned", partitions=sorted(f"{tp.topic}-{tp.partition}" for tp in partitions))
        if self._on_assigned is not None:
            try:
                self._on_assigned(set(partitions))
            except Exception as exc:  # a user callback must not break the consumer's IO loop
                self._log.warning("eos.on_assigned_failed", error=repr(exc))

    def _resync_positions(self, batches: dict[TopicPartition, list[Any]]) -> dict[TopicPartition, list[Any]]:
        """Start newly assigned partitions at the group's committed offsets; drop what was fetched
        for them meanwhile.

        Why: kafka-python keeps a partition's fetch position across a rebalance when the partition
        is in both the old and the new assignment - even when this member missed a generation in
        between and another member processed and committed records of it. Resuming there would
        process those records a second time (seen in the chaos tier with two instances). The
        group's committed offset is the truth; a partition without one keeps its position (the
        reset policy's, or where an aborted transaction of ours started).
        """
        pending, self._resync = self._resync, set()
        resynced = pending & set(self._consumer.assignment() or ())
        for tp in resynced:
            fetched = batches.get(tp)
            try:
                committed = self._consumer.committed(tp, timeout_ms=int(self._op_s * 1000))
            except Exception as exc:  # try again after the next poll; process nothing of tp meanwhile
                self._log.warning("eos.committed_lookup_failed", partition=str(tp), error=repr(exc))
                self._resync = self._resync | {tp}
                committed = None
            if committed is not None:
                self._consumer.seek(tp, int(committed))
            elif fetched:  # no committed offset: fetch again from where these records started
                self._consumer.seek(tp, fetched[0].offset)
        return {tp: records for tp, records in batches.items() if tp not in resynced}

    def _raise_listener_error(self) -> None:
        exc, self._listener_error = self._listener_error, None
        if exc is None:
            return
        if isinstance(exc, errors.TimeoutError):
            raise errors.FatalError(f"abort on revocation did not complete: {exc}") from exc
        raise exc

