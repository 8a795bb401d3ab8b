"""Exactly-once consume-transform-produce: :class:`TransactionalProcessor`.

A processor reads input topics with a :class:`~txnproducer.TransactionalConsumer` in a consumer group,
transforms each record into output records, and writes the outputs *and* the consumed input offsets
in one Kafka transaction (KIP-98 with KIP-447 group fencing). Either both become visible or neither
does, so a read_committed reader of the outputs sees every input exactly once, across crashes,
restarts and rebalances. The design follows franz-go's ``GroupTransactSession``:

* one loop: ``poll -> begin -> transform -> send -> send_offsets_to_transaction -> commit``; a
  transaction spans one or more polls and commits when it holds ``max_records_per_txn`` input
  records, when it is ``max_txn_time_ms`` old, or when a poll finds no more input (so output
  latency stays low when input is sparse);
* rebalances happen inside the loop's own ``poll`` (our group member runs its hooks on the polling
  thread), before the partitions taken away can reach another member: with the classic protocol
  (eager: every partition is revoked) the open transaction is aborted before the member sends
  JoinGroup; with the consumer protocol (KIP-848: only the partitions that move are revoked, and
  only once this member acknowledges) a transaction that read from them is committed first - or
  aborted, ``commit_on_revocation=False`` - and one that did not goes on, the partitions kept never
  stopping; lost partitions (the member was dropped) always abort it. The new owner never races our
  commit: newly assigned partitions start at the group's committed offsets, read only when no open
  transaction is about to change them (KIP-447);
* an :class:`~txnproducer.errors.AbortableError` (for example ``CommitFailedError`` when the
  group's generation moved on) aborts, rewinds the consumer to the last committed offsets and
  continues; a :class:`~txnproducer.errors.FatalError` (fenced by a newer instance with the same
  transactional id or group instance id, ...) closes the processor and is raised from :meth:`run`,
  and so does an authorization error (``GroupAuthorizationError``, ``TopicAuthorizationError``:
  abortable for the producer, but no retry succeeds until the ACLs change), after the abort;
* an exception from the user's transform - or an output it cannot have meant
  (:class:`~txnproducer.errors.TransformOutputError`) - aborts the transaction, rewinds, and is
  raised from :meth:`run`: the input records of that transaction are not consumed (their offsets
  are not committed), so they are processed again by the next :meth:`run` or after a restart.

Every wait is bounded: ``poll`` by ``poll_timeout_ms``, producer and offset calls by
``operation_timeout_ms``, closing by ``close_timeout_ms``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from kafka.structs import OffsetAndMetadata, TopicPartition

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer.config import ProducerConfig
from txnproducer.consumer import SubscriptionPattern, TransactionalConsumer
from txnproducer.consumer_config import ConsumerConfig
from txnproducer.eos.failures import BAD_OUTPUT, NEEDS_AN_OPERATOR, STOPS_THE_LOOP, Crashed, UserCodeError
from txnproducer.eos.output_record import BatchTransform, ColumnTransform, Transform
from txnproducer.eos.positions import InputPositions, caught_up
from txnproducer.eos.progress import METRIC_NAMES, TxnProgress
from txnproducer.eos.rebalance import AssignCallback, Rebalances
from txnproducer.eos.settings import processor_settings
from txnproducer.eos.transform import processor_tracing, send_poll_outputs, transform_poll
from txnproducer.otel import set_abort_reason
from txnproducer.producer import TransactionalProducer

__all__ = ["CrashPoint", "TransactionalProcessor"]

#: ``on_commit(offsets)``: called after each committed transaction with the offsets it committed
#: (the next offsets to read), on the loop's thread.
CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata]], None]
CrashPoint = Literal["after_send", "before_commit"]


def _default_producer_factory(config: ProducerConfig, **telemetry: Any) -> Any:
    return TransactionalProducer(config, **telemetry)


class TransactionalProcessor:
    """A consume-transform-produce loop with exactly-once results (see the module docstring).

    ``input_topics``: topic name or names to subscribe to. ``consumer_config``: a mapping of
    :class:`~txnproducer.ConsumerConfig` settings in Python (kafka-python's ``KafkaConsumer``
    keyword names) or Java spelling; ``group_id`` is required, ``isolation_level`` other than
    ``"read_committed"`` and ``enable_auto_commit=True`` are a :class:`~txnproducer.errors.ConfigError`,
    ``auto_offset_reset`` defaults to ``"earliest"``. ``producer_config``: a
    :class:`~txnproducer.ProducerConfig` or a mapping of its settings.

    The transactional id identifies this *instance*: stable across its restarts (a restarted
    instance fences its crashed predecessor, whose open transaction the coordinator then aborts)
    and distinct between instances. It is ``transactional_id`` if given, else
    ``f"{group_id}-{instance_name}"``, else the one in ``producer_config``. It is also the group
    instance id by default (``group_instance_id``: static membership, KIP-345): a restarted instance
    takes its partitions back at once, without a rebalance, instead of after the dead instance's
    ``session_timeout_ms`` (45 s by default). ``group_instance_id=False`` makes a dynamic member; a
    string chooses the id.

    Give exactly one of ``transform(record)`` (called per input record), ``transform_batch(records)``
    (called per poll, records in per-partition order) or ``transform_columns(batch)`` (called per
    :class:`~txnproducer.PartitionBatch` of a poll: columns, no object per record - the fastest);
    each returns an iterable of :class:`OutputRecord` / :class:`OutputBatch`, one of them, or None
    (no output: a filter). Anything else (bytes, a tuple of fields, ...) is a
    :class:`~txnproducer.errors.TransformOutputError`.
    ``on_commit(offsets)`` is called on the loop's thread after every committed transaction with the
    input offsets it committed; ``on_assigned(partitions)`` after every rebalance with the new
    assignment (on the loop's thread, inside its poll; an exception from it is logged).

    ``consumer_config={"group_protocol": "consumer"}`` takes part in a KIP-848 consumer group
    (``input_topics`` may then be a :class:`~txnproducer.SubscriptionPattern`). ``commit_on_revocation``
    (consumer protocol only): when partitions the open transaction read from are taken away, commit
    it before they are released (True, the default: the kept partitions lose nothing and the new
    owner starts where it ended) or abort it (False: the kept partitions it read are processed again).

    Threads: :meth:`run` runs the loop on the calling thread; :meth:`stop` may be called from any
    thread. The consumer and producer are created by the first :meth:`run` (or :meth:`start`);
    ``consumer_factory(config)`` (a :class:`~txnproducer.ConsumerConfig`) / ``producer_factory(config)``
    replace :class:`~txnproducer.TransactionalConsumer` / :class:`~txnproducer.TransactionalProducer`
    (for tests with fakes).
    ``tracer_provider``, ``meter_provider``: OpenTelemetry, for it and its producer
    (docs/guide/observability.md).
    """

    def __init__(
        self,
        input_topics: str | Sequence[str] | SubscriptionPattern,
        *,
        consumer_config: Mapping[str, Any],
        producer_config: ProducerConfig | Mapping[str, Any],
        transform: Transform | None = None,
        transform_batch: BatchTransform | None = None,
        transform_columns: ColumnTransform | None = None,
        instance_name: str | None = None,
        transactional_id: str | None = None,
        group_instance_id: str | bool | None = None,
        max_records_per_txn: int = 500,
        max_txn_time_ms: int = 1000,
        poll_timeout_ms: int = 100,
        operation_timeout_ms: int = 30000,
        close_timeout_ms: int = 10000,
        commit_on_revocation: bool = True,
        on_commit: CommitCallback | None = None,
        on_assigned: AssignCallback | None = None,
        consumer_factory: Callable[[ConsumerConfig], Any] | None = None,
        producer_factory: Callable[[ProducerConfig], Any] | None = None,
        tracer_provider: Any = None, meter_provider: Any = None,
    ) -> None:
        if sum(t is not None for t in (transform, transform_batch, transform_columns)) != 1:
            raise errors.ConfigError("give exactly one of transform=, transform_batch= or transform_columns=")
        if not isinstance(commit_on_revocation, bool):
            raise errors.ConfigError(
                f"commit_on_revocation must be True or False, got {commit_on_revocation!r}")
        settings = processor_settings(
            input_topics, consumer_config, producer_config, instance_name=instance_name,
            transactional_id=transactional_id, group_instance_id=group_instance_id,
            max_records_per_txn=max_records_per_txn, max_txn_time_ms=max_txn_time_ms,
            poll_timeout_ms=poll_timeout_ms, operation_timeout_ms=operation_timeout_ms,
            close_timeout_ms=close_timeout_ms)
        self._group_id = settings.consumer.group_id or ""
        self._producer_config = settings.producer
        self._consumer_config = settings.consumer
        self._topics = settings.topics
        self._transform = transform
        self._transform_batch = transform_batch
        self._transform_columns = transform_columns
        self._max_records = max_records_per_txn
        self._max_txn_ms = max_txn_time_ms
        self._poll_s = poll_timeout_ms / 1000
        self._op_s = operation_timeout_ms / 1000
        self._close_s = close_timeout_ms / 1000
        self._on_commit = on_commit
        self._consumer_factory: Callable[[ConsumerConfig], Any] = consumer_factory or TransactionalConsumer
        self._producer_factory: Callable[[ProducerConfig], Any] = producer_factory or functools.partial(
            _default_producer_factory, tracer_provider=tracer_provider, meter_provider=meter_provider)
        self._tracing = processor_tracing(tracer_provider, self._group_id)
        self._log = get_logger("txnproducer.eos").bind(
            transactional_id=self._producer_config.transactional_id, group_id=self._group_id)

        self._consumer: Any = None
        self._producer: Any = None
        self._progress = TxnProgress()
        self._positions = InputPositions()
        self._rebalances = Rebalances(
            progress=self._progress, positions=self._positions,
            clients=lambda: (self._producer, self._consumer), commit=self._commit, count=self._count,
            closed=lambda: self._closed, log=self._log,
            incremental=settings.consumer.group_protocol == "consumer",
            commit_on_revocation=commit_on_revocation, on_assigned=on_assigned, op_timeout_s=self._op_s)
        self._lock = threading.Lock()
        self._metrics = dict.fromkeys(METRIC_NAMES, 0)
        self._stop_requested = threading.Event()
        self._leave_group: bool | None = None  # stop()'s choice, for the close
        self._idle = threading.Event()
        self._idle.set()
        self._run_thread: threading.Thread | None = None
        self._closed = False
        self._crash_at: CrashPoint | None = None

    # -- properties ---------------------------------------------------------------------------

    @property
    def transactional_id(self) -> str:
        return self._producer_config.transactional_id

    @property
    def group_id(self) -> str:
        return self._group_id

    @property
    def group_instance_id(self) -> str | None:
        """The group instance id (static membership), or None for a dynamic member."""
        return self._consumer_config.group_instance_id

    @property
    def consumer_config(self) -> ConsumerConfig:
        """The consumer's settings, as validated (with what the processor forces or derives)."""
        return self._consumer_config

    @property
    def producer(self) -> Any:
        """The TransactionalProducer (``None`` before :meth:`start`)."""
        return self._producer

    @property
    def consumer(self) -> Any:
        """The TransactionalConsumer (``None`` before :meth:`start`); do not poll it yourself."""
        return self._consumer

    @property
    def closed(self) -> bool:
        return self._closed

    def assignment(self) -> frozenset[TopicPartition]:
        """The input partitions this instance owns now (empty before the first rebalance)."""
        return self._rebalances.assigned

    def metrics(self) -> dict[str, int]:
        """Counters since the processor was created (docs/guide/pipelines.md lists them):
        ``transactions_committed``, ``transactions_aborted`` (of which ``aborts_on_revocation``:
        partitions revoked or lost while a transaction was open, and ``aborts_on_error``: an
        abortable error, e.g. ``CommitFailedError``; the rest were transform errors and closes),
        ``records_polled`` (input records polled, reprocessed ones again), ``records_in`` /
        ``records_out`` (input records and outputs of committed transactions), ``rebalances``
        (assignments received)."""
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
            consumer = self._consumer_factory(self._consumer_config)
            consumer.subscribe(self._topics, listener=self._rebalances)
            self._consumer = consumer

    def run(self, stop_event: threading.Event | None = None, max_transactions: int | None = None,
            until_idle: float | None = None) -> dict[str, int]:
        """Run the loop until :meth:`stop` (the processor is then closed), ``stop_event`` is set,
        ``max_transactions`` transactions were committed by this call, or - ``until_idle`` seconds -
        the input is caught up: no record came for that long while the group was stable and every
        assigned partition was being fetched. The open transaction is committed first; except after
        :meth:`stop`, the processor stays open: call :meth:`run` again or :meth:`stop`.

        Returns :meth:`metrics`. Raises a FatalError (the processor is closed), the exception of
        the transform or a TransformOutputError (the transaction was aborted and the consumer
        rewound: the same input records come again on the next :meth:`run` or after a restart),
        ClosedError, or any other unexpected error (the processor is closed).
        """
        if until_idle is not None and (isinstance(until_idle, bool) or until_idle < 0
                                       or not isinstance(until_idle, (int, float))):
            raise errors.ConfigError(f"until_idle must be seconds >= 0 or None, got {until_idle!r}")
        with self._lock:
            if self._run_thread is not None:
                raise errors.IllegalStateError("run() is already running on another thread")
            if self._closed:
                raise errors.ClosedError("the processor is closed; create a new one")
            self._run_thread = threading.current_thread()
            self._idle.clear()
        try:
            return self._run(stop_event, max_transactions, until_idle)
        finally:
            with self._lock:
                self._run_thread = None
            self._idle.set()

    def _run(self, stop_event: threading.Event | None, max_transactions: int | None,
             until_idle: float | None) -> dict[str, int]:
        committed_before = self.metrics()["transactions_committed"]
        idle_since: float | None = None
        try:
            self.start()
            while True:
                if self._stop_requested.is_set() or (stop_event is not None and stop_event.is_set()):
                    break
                if (max_transactions is not None
                        and self.metrics()["transactions_committed"] - committed_before >= max_transactions):
                    break
                polled = self._poll_and_process()
                progress = self._progress
                if progress.open and (polled == 0 or progress.records_in >= self._max_records
                                      or progress.age_ms() >= self._max_txn_ms):
                    self._commit()
                if polled or progress.open or not caught_up(self._consumer):
                    idle_since = None
                elif idle_since is None:
                    idle_since = time.monotonic()
                    self._commit_positions_past_markers()
                elif until_idle is not None and time.monotonic() - idle_since >= until_idle:
                    break
            if self._progress.open:
                self._commit()
            if self._stop_requested.is_set():
                self._shutdown()
            return self.metrics()
        except Crashed:
            self._log.warning("eos.simulated_crash")
            return self.metrics()
        except UserCodeError as exc:
            raise exc.original from None
        except STOPS_THE_LOOP as exc:
            self._log.error("eos.fatal_error", error=repr(exc))
            self._shutdown(after_fatal=isinstance(exc, errors.FatalError))
            raise
        except BaseException as exc:
            self._log.error("eos.unexpected_error", error=repr(exc))
            self._shutdown(after_fatal=isinstance(exc, errors.FatalError))
            raise

    def stop(self, timeout: float | None = None, leave_group: bool | None = None) -> bool:
        """Finish (commit) the open transaction - or abort it if it cannot commit - then close the
        consumer and the producer. Thread-safe and idempotent.

        A dynamic member leaves its group; a static one (the default, see ``group_instance_id``)
        stays in it so that a restart takes its partitions back at once - if none comes, the group
        moves them after ``session_timeout_ms``. ``leave_group=True`` leaves in either case (scaling
        down: the partitions move at once); False leaves nothing.

        Called while :meth:`run` is active on another thread, it asks the loop to stop and waits
        up to ``timeout`` seconds (default: ``operation_timeout_ms + 2 * close_timeout_ms`` plus
        one poll) for it; returns False if the loop did not finish in time.
        """
        if leave_group is not None:
            self._leave_group = leave_group
        self._stop_requested.set()
        bound = timeout if timeout is not None else (self._op_s + 2 * self._close_s + self._poll_s)
        with self._lock:
            run_thread = self._run_thread
        if run_thread is threading.current_thread():
            return True  # called from the transform: the loop stops after this batch
        if run_thread is not None and not self._idle.wait(bound):
            return False
        self._shutdown()  # no-op if the loop closed already
        return True

    def close(self, timeout: float | None = None, leave_group: bool | None = None) -> bool:
        """The same as :meth:`stop`."""
        return self.stop(timeout, leave_group)

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
        dead member after its session timeout (a restart with the same group instance id takes
        its place at once); the transaction coordinator aborts the open transaction on
        ``transaction_timeout_ms`` or when an instance with the same transactional id calls
        ``init_transactions``.
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
            self._consumer.close(timeout=0, leave_group=False)  # no listener, no LeaveGroup
        raise Crashed()

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
                self._consumer.close(timeout=self._close_s, leave_group=self._leave_group)
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
        timeout = self._poll_s
        if progress.open:
            timeout = min(timeout, max(0.0, (self._max_txn_ms - progress.age_ms()) / 1000))
        columns = self._transform_columns is not None
        polled: Any = (self._consumer.poll_batch(timeout, max(1, room)) if columns
                       else self._consumer.poll_by_partition(timeout, max(1, room)))
        if not polled:
            return 0
        if not progress.open:
            self._producer.begin_transaction()
            progress.begin()
        count = progress.consumed_batches(polled) if columns else progress.consumed(polled)
        self._count(records_polled=count)
        try:
            outputs, contexts = transform_poll(
                polled, self._transform, self._transform_batch, self._transform_columns, self._tracing,
                self._producer, progress.records_in)
        except Exception as exc:
            self._log.warning("eos.transform_failed", error=repr(exc))
            self._abort(reason="transform")
            raise UserCodeError(exc) from exc
        try:
            sent = send_poll_outputs(self._producer.send, outputs, contexts)
        except BAD_OUTPUT as exc:
            self._log.warning("eos.bad_output_record", error=repr(exc))
            self._abort(reason="transform")
            raise UserCodeError(exc) from exc
        except (errors.AbortableError, errors.TimeoutError) as exc:
            self._abort(reason="error", cause=exc)
            return count
        progress.records_out += sent
        self._maybe_crash("after_send")
        return count

    def _commit_positions_past_markers(self) -> None:
        """Caught up: commit positions that moved past markers or aborted input alone (no record
        came to commit them), in a transaction of offsets only, so that an idle loop shows no lag."""
        if self._positions.behind(self._consumer, self._op_s):
            self._producer.begin_transaction()
            self._progress.begin()
            self._commit()

    def _commit(self) -> None:
        progress = self._progress
        offsets = self._positions.to_commit(self._consumer, progress.next_offsets())
        producer = self._producer
        committing = False
        group_metadata = self._consumer.group_metadata()
        if group_metadata.generation_id < 0 or not group_metadata.member_id:
            # a TxnOffsetCommit without a generation is not fenced by the group (Kafka accepts it as a
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
        self._positions.committed(offsets)
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
        if isinstance(cause, NEEDS_AN_OPERATOR):
            # abortable for the producer, but every retry would fail the same way until someone
            # changes the ACLs: stop here rather than loop (as Kafka Streams stops its thread)
            raise cause
        assigned = set(self._consumer.assignment() or ())
        targets = {tp: offset for tp, offset in start.items() if tp in assigned}
        if not targets:
            return
        try:
            committed: Mapping[TopicPartition, Any] = self._consumer.committed(list(targets),
                                                                               timeout=self._op_s)
        except (errors.TimeoutError, errors.RetriableError) as exc:  # then the start is where to go
            self._log.warning("eos.committed_lookup_failed", partitions=sorted(map(str, targets)),
                              error=repr(exc))
            committed = {}
        for tp, offset in targets.items():
            found = committed.get(tp)
            self._consumer.seek(tp, found if found is not None else offset)
