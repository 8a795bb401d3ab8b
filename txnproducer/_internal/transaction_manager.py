"""TransactionManager: the transactional producer's state machine and its coordinator traffic.

This follows the Java client's ``TransactionManager`` (KIP-98, KIP-360, KIP-588, KIP-890,
KIP-1050) with snake_case names. Application threads call ``initialize_transactions``,
``begin_transaction``, ``begin_commit``/``begin_abort``, ``send_offsets_to_transaction`` and
``maybe_add_partition`` (from ``send()``); those calls change state and enqueue request handlers.
The Sender thread takes handlers with ``next_request()`` (priority order, one in flight),
sends them and completes them with ``handler.handle_response()`` / ``handler.fail()``; it also
reports produce outcomes (``handle_completed_batch`` / ``handle_failed_batch``) and asks
``can_retry`` / ``is_send_to_partition_allowed``. One lock guards everything.

Transaction versions (KIP-890): the Sender reports the broker's finalized ``transaction.version``
with ``set_transaction_version``; it takes effect at ``init_transactions`` and otherwise only
between transactions. TV1 registers partitions with AddPartitionsToTxn and offsets with
AddOffsetsToTxn, keeps one epoch, and after an abortable produce error bumps the epoch itself with
InitProducerId(pid, epoch) once the abort is done (KIP-360). TV2 adds partitions implicitly
(Produce v12), sends TxnOffsetCommit v5 directly, and adopts the new producer id/epoch every
EndTxn v5 returns (resetting sequences); the coordinator does the bump, the client never does.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from kafka.structs import OffsetAndMetadata, TopicPartition

from .. import errors
from ..prepared import PreparedTxnState
from . import metrics as m
from .metrics import ProducerMetrics
from .txn_errors import (
    as_abortable_produce_error,
    as_fatal_produce_error,
    code_of,
    fenced_error,
    group_authorization_error,
    is_fatal_produce_error,
    reraisable,
)
from .txn_handlers import (
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PRODUCER_FENCED,
    TV2_REQUIRED_VERSIONS,
    UNKNOWN_PRODUCER_ID,
    AddOffsetsToTxnHandler,
    AddPartitionsToTxnHandler,
    CompletePreparedHandler,
    EndTxnHandler,
    FindCoordinatorHandler,
    InitProducerIdHandler,
    Priority,
    TxnOffsetCommitHandler,
    TxnRequestHandler,
    choose_version,
    group_fields,
    is_retriable,
    normalize_offsets,
)
from .txn_result import TransactionalRequestResult
from .txn_sequences import NONE_PRODUCER_ID_AND_EPOCH, ProducerIdAndEpoch, SequenceBook
from .txn_state import State, illegal_call_message, invalid_transition_message, is_transition_valid

__all__ = [
    "Priority",
    "ProducerIdAndEpoch",
    "State",
    "TransactionManager",
    "TransactionalRequestResult",
    "TxnRequestHandler",
]


class TransactionManager:
    """Client-side transaction state, request handlers and sequence bookkeeping (thread-safe)."""

    def __init__(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        retry_backoff_ms: int,
        transaction_retry_backoff_ms: int,
        logger: Any = None,
        metrics: ProducerMetrics | None = None,
        *,
        max_versions: Callable[[int], int | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        enable_2pc: bool = False,
    ) -> None:
        """``max_versions(api_key)`` returns the broker's highest version of an API (None:
        unknown); request versions are ``min(PREFERRED_VERSIONS[tv][api], that)``. ``clock`` is
        the monotonic clock used for retry backoffs (injectable for tests). ``enable_2pc``
        registers with InitProducerId v6 and Enable2Pc (KIP-939: the coordinator applies no
        transaction timeout; needed for ``initialize_transactions(keep_prepared_txn=True)``)."""
        if not transactional_id:
            raise errors.ConfigError("transactional_id must be a non-empty string")
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.transaction_retry_backoff_ms = transaction_retry_backoff_ms
        self._logger: Any = logger if logger is not None else structlog.get_logger("txnproducer.txn")
        self._metrics = metrics
        self._max_versions = max_versions
        self._clock = clock
        self.enable_2pc = enable_2pc

        self._lock = threading.RLock()
        # A plain attribute, not a property: send() reads it without the lock on every record
        # (a property read costs about 70 ns more). Written only under ``_lock``.
        self.state: State = State.UNINITIALIZED
        self._last_error: BaseException | None = None
        self._pid = NONE_PRODUCER_ID_AND_EPOCH
        self._tv = 1
        self._tv_requested: int | None = None
        self._closed = False

        self._queue: list[tuple[int, int, TxnRequestHandler]] = []
        self._queue_seq = 0
        self._in_flight: TxnRequestHandler | None = None
        self._coordinators: dict[tuple[str, str], tuple[int, str, int]] = {}
        self._last_group: str | None = None

        self._new_partitions: set[TopicPartition] = set()
        self._pending_partitions: set[TopicPartition] = set()
        self._partitions_in_txn: set[TopicPartition] = set()
        self._transaction_started = False
        self._epoch_bump_required = False
        self._pending_call: tuple[TransactionalRequestResult, State, str] | None = None
        self._sequences = SequenceBook()
        # partitions where the broker acknowledged a batch of this producer id (any epoch)
        self._broker_state: set[TopicPartition] = set()
        self._broker_state_pid = -1
        # two-phase commit: the (producer id, epoch) the prepared transaction ran under - our own
        # from prepare_transaction(), or the one init_transactions(keep_prepared_txn=True) found
        self._prepared: ProducerIdAndEpoch | None = None

    # ================================================================ properties / queries ======

    @property
    def last_error(self) -> BaseException | None:
        return self._last_error

    @property
    def producer_id_and_epoch(self) -> ProducerIdAndEpoch:
        return self._pid

    @property
    def transaction_version(self) -> int:
        """1 or 2: the KIP-890 transaction version in effect for the current/next transaction."""
        return self._tv

    def is_transactional(self) -> bool:
        return True

    def has_producer_id(self) -> bool:
        return self._pid.is_valid

    def is_completing(self) -> bool:
        return self.state in (State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION)

    def is_committing(self) -> bool:
        return self.state is State.COMMITTING_TRANSACTION

    def is_aborting(self) -> bool:
        return self.state is State.ABORTING_TRANSACTION

    def is_in_transaction(self) -> bool:
        return self.state is State.IN_TRANSACTION

    def has_error(self) -> bool:
        return self.state in (State.ABORTABLE_ERROR, State.FATAL_ERROR)

    def has_fatal_error(self) -> bool:
        return self.state is State.FATAL_ERROR

    def has_abortable_error(self) -> bool:
        return self.state is State.ABORTABLE_ERROR

    def has_ongoing_transaction(self) -> bool:
        return self.state in (
            State.IN_TRANSACTION,
            State.COMMITTING_TRANSACTION,
            State.ABORTING_TRANSACTION,
            State.ABORTABLE_ERROR,
        )

    def is_transaction_started(self) -> bool:
        """True once the coordinator knows of this transaction (a partition or offsets added)."""
        return self._transaction_started

    def has_partitions_to_add(self) -> bool:
        with self._lock:
            return bool(self._new_partitions or self._pending_partitions)

    def is_partition_added(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._partitions_in_txn

    def is_partition_pending_add(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._new_partitions or tp in self._pending_partitions

    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool:
        """May a batch for ``tp`` be drained now? TV1: once AddPartitionsToTxn succeeded for it;
        TV2: once ``send()`` added it to the open transaction (Produce v12 adds it implicitly)."""
        with self._lock:
            return self.state is not State.FATAL_ERROR and tp in self._partitions_in_txn

    # ================================================================ transaction version ======

    def set_transaction_version(self, v: int) -> None:
        """Record the finalized ``transaction.version`` (0/1 -> TV1, >= 2 -> TV2).

        Applied at once when no transaction is open, otherwise when the next one begins.
        """
        with self._lock:
            self._tv_requested = 2 if v >= 2 else 1
            if self.state in (State.UNINITIALIZED, State.INITIALIZING, State.READY):
                self._apply_requested_tv()

    def _apply_requested_tv(self) -> None:
        if self._tv_requested is None:
            return
        tv = self._tv_requested
        if tv == 2 and self._max_versions is not None:
            for api_key, needed in TV2_REQUIRED_VERSIONS.items():
                have = self._max_versions(api_key)
                if have is not None and have < needed:
                    self._log("warning", "txn.tv2_unavailable", api_key=api_key, max_version=have)
                    tv = 1
        if tv != self._tv:
            self._log("info", "txn.transaction_version", old=self._tv, new=tv)
        self._tv = tv

    def _version_for(self, request_cls: Any) -> int:
        return choose_version(request_cls, self._tv, self._max_versions)

    # ================================================================ application calls =========

    def initialize_transactions(self, keep_prepared_txn: bool = False) -> TransactionalRequestResult:
        """Start init_transactions(): find the coordinator and get a producer id/epoch.

        ``keep_prepared_txn`` (KIP-939, needs ``enable_2pc``) keeps a transaction a previous
        instance prepared instead of aborting it; if there is one the state becomes
        PREPARED_TRANSACTION and ``complete_transaction`` decides its fate.
        """
        if keep_prepared_txn and not self.enable_2pc:
            raise errors.ConfigError(
                "init_transactions(keep_prepared_txn=True) needs enable_2pc=True (KIP-939); without"
                " it, complete a prepared transaction with complete_transaction(state) before"
                " init_transactions()"
            )
        with self._lock:
            cached = self._cached_result(State.INITIALIZING, "init_transactions")
            if cached is not None:
                return cached
            self._maybe_fail_with_fatal("init_transactions")
            if self.state is not State.UNINITIALIZED:
                raise errors.IllegalStateError(
                    illegal_call_message("init_transactions", self.state, self.transactional_id)
                )
            self._apply_requested_tv()
            self._transition(State.INITIALIZING)
            self._pid = NONE_PRODUCER_ID_AND_EPOCH
            self._sequences.reset()
            result = self._new_result("init_transactions", m.TXN_INIT_TIME_NS_TOTAL)
            self._enqueue(
                InitProducerIdHandler(self, result, epoch_bump=False, keep_prepared_txn=keep_prepared_txn)
            )
            self._pending_call = (result, State.INITIALIZING, "init_transactions")
            return result

    def begin_transaction(self) -> None:
        start = time.monotonic_ns()
        with self._lock:
            self._throw_if_pending("begin_transaction")
            self._maybe_fail_with_error("begin_transaction")
            if self.state is not State.READY:
                raise errors.IllegalStateError(
                    illegal_call_message("begin_transaction", self.state, self.transactional_id)
                )
            self._apply_requested_tv()
            self._transition(State.IN_TRANSACTION)
        if self._metrics is not None:
            self._metrics.record_time_ns(m.TXN_BEGIN_TIME_NS_TOTAL, time.monotonic_ns() - start)

    def begin_commit(self) -> TransactionalRequestResult:
        """Start commit_transaction(): the EndTxn(commit) goes out once every batch is done."""
        with self._lock:
            cached = self._cached_result(State.COMMITTING_TRANSACTION, "commit_transaction")
            if cached is not None:
                return cached
            self._maybe_fail_with_error("commit_transaction")
            if self.state not in (State.IN_TRANSACTION, State.PREPARED_TRANSACTION):
                raise errors.IllegalStateError(
                    illegal_call_message("commit_transaction", self.state, self.transactional_id)
                )
            self._transition(State.COMMITTING_TRANSACTION)
            result = self._begin_completing(committed=True)
            self._pending_call = (result, State.COMMITTING_TRANSACTION, "commit_transaction")
            return result

    def begin_abort(self) -> TransactionalRequestResult:
        """Start abort_transaction(); under TV1 after an abortable produce error this also bumps
        the epoch (KIP-360), and the returned result completes only after that."""
        with self._lock:
            cached = self._cached_result(State.ABORTING_TRANSACTION, "abort_transaction")
            if cached is not None:
                return cached
            self._maybe_fail_with_fatal("abort_transaction")
            if self.state not in (State.IN_TRANSACTION, State.ABORTABLE_ERROR, State.PREPARED_TRANSACTION):
                raise errors.IllegalStateError(
                    illegal_call_message("abort_transaction", self.state, self.transactional_id)
                )
            self._transition(State.ABORTING_TRANSACTION)
            self._new_partitions.clear()
            self._drop_queued_transaction_requests()
            result = self._begin_completing(committed=False)
            self._pending_call = (result, State.ABORTING_TRANSACTION, "abort_transaction")
            return result

    def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], group_metadata: Any
    ) -> TransactionalRequestResult:
        """Add consumer offsets to the transaction (TV1: AddOffsetsToTxn + TxnOffsetCommit;
        TV2: TxnOffsetCommit v5 alone). ``group_metadata`` is the consumer's
        ``group_metadata()`` (generation and member id let the group fence zombies, KIP-447) or a
        group id string."""
        group_fields(group_metadata)  # validate before changing anything
        offsets = normalize_offsets(offsets)
        with self._lock:
            self._throw_if_pending("send_offsets_to_transaction")
            self._maybe_fail_with_error("send_offsets_to_transaction")
            if self.state is not State.IN_TRANSACTION:
                raise errors.IllegalStateError(
                    illegal_call_message("send_offsets_to_transaction", self.state, self.transactional_id)
                )
            result = self._new_result("send_offsets_to_transaction", m.TXN_SEND_OFFSETS_TIME_NS_TOTAL)
            if not offsets:
                result.set_success()
                return result
            handler: TxnRequestHandler
            if self._tv >= 2:
                handler = TxnOffsetCommitHandler(self, result, offsets, group_metadata)
                self._transaction_started = True
            else:
                handler = AddOffsetsToTxnHandler(self, result, offsets, group_metadata)
            self._enqueue(handler)
            return result

    def prepare_transaction(self) -> PreparedTxnState:
        """Phase one of a two-phase commit: IN_TRANSACTION -> PREPARED_TRANSACTION.

        The caller (``producer.prepare_transaction()``) has flushed and every batch is complete;
        here we check that nothing is still being added, then freeze the transaction: no more
        sends or offsets, only commit/abort/complete. The returned state names the transaction
        for whoever completes it. Under TV1 the epoch is bumped after the transaction completes
        (KIP-360 style) because TV1 keeps one epoch for many transactions, and a recorded
        (producer id, epoch) must never be able to commit a later transaction.
        """
        with self._lock:
            self._throw_if_pending("prepare_transaction")
            self._maybe_fail_with_error("prepare_transaction")
            if self.state is not State.IN_TRANSACTION:
                raise errors.IllegalStateError(
                    illegal_call_message("prepare_transaction", self.state, self.transactional_id)
                )
            adding = (AddPartitionsToTxnHandler, AddOffsetsToTxnHandler, TxnOffsetCommitHandler)
            busy = isinstance(self._in_flight, adding) or any(
                isinstance(h, adding) for _, _, h in self._queue
            )
            if self._new_partitions or self._pending_partitions or busy:
                raise errors.IllegalStateError(
                    f"prepare_transaction() called while partitions or offsets are still being added to"
                    f" the transaction of {self.transactional_id!r}: flush() and wait for"
                    " send_offsets_to_transaction() to return first"
                )
            self._transition(State.PREPARED_TRANSACTION)
            if not self._transaction_started:
                self._prepared = NONE_PRODUCER_ID_AND_EPOCH
                self._log("info", "txn.prepared", empty=True)
                return PreparedTxnState(self.transactional_id)
            self._prepared = self._pid
            if self._tv < 2:
                self._epoch_bump_required = True
            self._log("info", "txn.prepared", empty=False)
            return PreparedTxnState(self.transactional_id, self._pid.producer_id, self._pid.epoch)

    def complete_transaction(
        self, state: PreparedTxnState, commit: bool = True
    ) -> TransactionalRequestResult:
        """Phase two for a prepared transaction: commit it (or abort it with ``commit=False``).

        * PREPARED_TRANSACTION (after ``prepare_transaction()`` or a keep-prepared init): KIP-939
          semantics - commit if ``state`` names the prepared transaction, abort otherwise.
        * UNINITIALIZED (a producer built only to complete, e.g. on a Spark driver or after a
          restart, brokers without KIP-939): EndTxn with the recorded id/epoch after coordinator
          discovery - no InitProducerId, which would abort the transaction. Idempotent: a second
          commit of a committed transaction succeeds; a commit of one the coordinator aborted
          raises :class:`~txnproducer.errors.PreparedTransactionLostError`.
        """
        if not isinstance(state, PreparedTxnState):
            raise TypeError(f"state must be a PreparedTxnState, got {state!r}")
        if state.transactional_id != self.transactional_id:
            raise errors.ConfigError(
                f"the prepared state belongs to transactional_id {state.transactional_id!r}, this"
                f" producer uses {self.transactional_id!r}: complete it with a producer for that id"
            )
        with self._lock:
            self._ensure_open()
            self._maybe_fail_with_fatal("complete_transaction")
            if self.state is State.PREPARED_TRANSACTION:
                prepared = self._prepared
                matches = prepared is not None and (
                    (state.is_empty and not prepared.is_valid)
                    or (state.producer_id == prepared.producer_id and state.epoch == prepared.epoch)
                )
                if commit and matches:
                    return self.begin_commit()
                if commit:
                    self._log(
                        "warning",
                        "txn.prepared_state_mismatch",
                        given=str(state),
                        prepared=None if prepared is None else f"{prepared.producer_id}:{prepared.epoch}",
                    )
                return self.begin_abort()
            if self.state is not State.UNINITIALIZED:
                raise errors.IllegalStateError(
                    illegal_call_message("complete_transaction", self.state, self.transactional_id)
                )
            operation = "commit_prepared" if commit else "abort_prepared"
            result = self._new_result(operation, None)
            if state.is_empty:
                result.set_success()
                return result
            self._enqueue(CompletePreparedHandler(self, result, state.producer_id, state.epoch, commit))
            return result

    def _prepared_identity(self) -> tuple[int, int] | None:
        """(producer id, epoch) of the prepared transaction being completed, if any."""
        if self._prepared is None or not self._prepared.is_valid:
            return None
        return self._prepared.producer_id, self._prepared.epoch

    def is_prepared(self) -> bool:
        return self.state is State.PREPARED_TRANSACTION

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """Called by ``send()``: raise if sending is not allowed now, else note the partition."""
        with self._lock:
            self._check_ready_for_send()
            if self._tv >= 2:
                self._partitions_in_txn.add(tp)
                self._transaction_started = True
            elif tp not in self._partitions_in_txn and tp not in self._pending_partitions:
                self._new_partitions.add(tp)

    def fail_if_not_ready_for_send(self, call: str = "send") -> None:
        """Raise unless records may be added to the open transaction; ``call`` names the API
        call in the message (``send``, ``prepare_transaction``, ...)."""
        with self._lock:
            self._check_ready_for_send(call)

    def _check_ready_for_send(self, call: str = "send") -> None:
        self._throw_if_pending(call)
        self._maybe_fail_with_error(call)
        if not self._pid.is_valid:
            raise errors.IllegalStateError(
                f"{call}() called before init_transactions() completed (state {self.state.name}):"
                " call init_transactions() first"
            )
        if self.state is not State.IN_TRANSACTION:
            raise errors.IllegalStateError(illegal_call_message(call, self.state, self.transactional_id))

    def close(self) -> None:
        """Fail every pending request and waiting call with ClosedError; later calls raise it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            exc = errors.ClosedError(
                f"the producer (transactional_id {self.transactional_id!r}) was closed before the"
                " operation completed; create a new producer"
            )
            self._fail_all_queued(exc)
            if self._pending_call is not None:
                self._pending_call[0].set_error(exc)

    # ================================================================ sender-side queue ==========

    def next_request(self, has_incomplete_batches: bool | Callable[[], bool]) -> TxnRequestHandler | None:
        """The next handler to send, or None (one in flight, backing off, nothing to do, or the
        EndTxn is waiting for this transaction's batches to complete).

        The Sender passes the accumulator's ``has_incomplete`` *method*: it is evaluated under this
        lock, after the queue is known. A value read before taking the lock can be stale: an
        application thread may append a record and call ``commit_transaction()`` in between, and
        the EndTxn would then overtake the record's Produce (the coordinator answers
        INVALID_TXN_STATE under TV2, as the transaction never started there).
        """
        with self._lock:
            if self._closed or self._in_flight is not None:
                return None
            if callable(has_incomplete_batches):
                has_incomplete_batches = has_incomplete_batches()
            if self._new_partitions and self.state in (
                State.IN_TRANSACTION,
                State.COMMITTING_TRANSACTION,
            ):
                self._enqueue_add_partitions()
            while self._queue:
                handler = self._queue[0][2]
                if handler.is_end_txn and has_incomplete_batches:
                    return None
                if handler.not_before > self._clock():
                    return None
                heapq.heappop(self._queue)
                if self._terminate_with_error(handler):
                    continue
                if handler.is_end_txn and not self._transaction_started:
                    # nothing reached the coordinator: no EndTxn (the Java client does the same)
                    self._log("debug", "txn.end_txn_skipped", committed=getattr(handler, "committed", None))
                    self._complete_transaction()
                    handler.result.set_success()
                    continue
                try:
                    handler.prepare()
                except Exception as exc:  # a request we cannot build must not kill the Sender
                    handler.fatal_error(
                        errors.FatalError(f"could not build the {handler.api_name} request: {exc!r}")
                    )
                    continue
                return handler
            return None

    def next_request_delay_ms(self) -> float | None:
        """Milliseconds until the head of the queue may be sent (0: now), None if it is empty."""
        with self._lock:
            if not self._queue:
                return None
            return max(0.0, (self._queue[0][2].not_before - self._clock()) * 1000.0)

    def has_pending_requests(self) -> bool:
        with self._lock:
            return bool(self._queue) or bool(self._new_partitions)

    def in_flight_started(self, handler: TxnRequestHandler) -> None:
        with self._lock:
            self._in_flight = handler
            handler.attempts += 1

    def has_in_flight_request(self) -> bool:
        return self._in_flight is not None

    def retry(self, handler: TxnRequestHandler, backoff_ms: float | None = None) -> None:
        """Put a handler the Sender could not send back in the queue (after ``backoff_ms``,
        default ``retry_backoff_ms``)."""
        with self._lock:
            if self._in_flight is handler:
                self._in_flight = None
            if backoff_ms is None:
                # first time the coordinator was unknown: the FindCoordinator queued ahead of this
                # handler paces it, so no extra wait (the Java client sleeps retry_backoff_ms here)
                lookup_pending = handler.coordinator_type is not None and self._lookup_pending(
                    handler.coordinator_type, handler.coordinator_key
                )
                backoff_ms = 0 if lookup_pending and not handler.is_retry else self.retry_backoff_ms
            self._reenqueue(handler, backoff_ms)

    def _lookup_pending(self, coordinator_type: str, key: str) -> bool:
        handlers = [h for _, _, h in self._queue]
        if self._in_flight is not None:
            handlers.append(self._in_flight)
        return any(
            isinstance(h, FindCoordinatorHandler) and h.key_type == coordinator_type and h.key == key
            for h in handlers
        )

    def coordinator(self, coordinator_type: str, key: str | None = None) -> int | None:
        """Node id of the transaction coordinator, or of the (last used / given) group's."""
        node = self.coordinator_node(coordinator_type, key)
        return None if node is None else node[0]

    def coordinator_node(self, coordinator_type: str, key: str | None = None) -> tuple[int, str, int] | None:
        """(node_id, host, port) of a known coordinator, as FindCoordinator answered."""
        with self._lock:
            if key is None:
                key = self.transactional_id if coordinator_type == "transaction" else self._last_group
            if key is None:
                return None
            return self._coordinators.get((coordinator_type, key))

    def lookup_coordinator(self, coordinator_type: str, key: str) -> None:
        """Forget the coordinator and enqueue a FindCoordinator for it (once)."""
        with self._lock:
            self._coordinators.pop((coordinator_type, key), None)
            if self._lookup_pending(coordinator_type, key):
                return
            result = TransactionalRequestResult("find_coordinator")
            self._enqueue(FindCoordinatorHandler(self, result, coordinator_type, key))

    # ================================================================ sequences / batches ========

    def sequence_number(self, tp: TopicPartition) -> int:
        with self._lock:
            return self._sequences.next_sequence(tp)

    def increment_sequence(self, tp: TopicPartition, increment: int) -> None:
        """The Sender stamped a batch of ``increment`` records with ``sequence_number(tp)``."""
        with self._lock:
            self._sequences.assign(tp, increment)

    def last_acked_sequence(self, tp: TopicPartition) -> int:
        with self._lock:
            return self._sequences.last_acked_sequence(tp)

    def has_in_flight_batches(self, tp: TopicPartition) -> bool:
        with self._lock:
            return self._sequences.has_in_flight(tp)

    def handle_completed_batch(
        self, tp: TopicPartition, base_sequence: int, record_count: int, producer_epoch: int, base_offset: int
    ) -> None:
        with self._lock:
            if producer_epoch == self._pid.epoch:
                self._sequences.completed(tp, base_sequence, record_count, base_offset)
                if self._broker_state_pid != self._pid.producer_id:
                    self._broker_state = set()
                    self._broker_state_pid = self._pid.producer_id
                self._broker_state.add(tp)

    def has_broker_state(self, tp: TopicPartition) -> bool:
        """Has the broker acknowledged a batch of the current producer id on ``tp``? Until then it
        would take any sequence as the first (see RecordAccumulator._head_sendable).

        No lock (the accumulator asks on every drain): the Sender thread is the only one that
        writes the set (batch outcomes) and the only one that asks (ready/drain)."""
        return self._broker_state_pid == self._pid.producer_id and tp in self._broker_state

    def handle_split_batch(self, tp: TopicPartition, base_sequence: int, record_counts: list[int]) -> None:
        """A batch refused as too large was split into parts that keep its sequence range."""
        with self._lock:
            self._sequences.split(tp, base_sequence, record_counts)

    def handle_failed_batch(
        self,
        tp: TopicPartition,
        base_sequence: int,
        record_count: int,
        producer_epoch: int,
        exc: BaseException,
        adjust_sequences: bool,
    ) -> None:
        """A produce batch failed for good: decide what it means for the transaction.

        Authorization of the transactional id/cluster, fencing and unsupported versions are fatal;
        anything else makes the open transaction abortable (the Java client's rule). Under TV1 the
        producer then bumps its epoch after the abort (KIP-360), because the partition's sequence
        state is no longer known; under TV2 the EndTxn(abort) bump does that. INVALID_PRODUCER_EPOCH
        on produce means the coordinator already bumped (e.g. the transaction timed out): abortable
        (KIP-588), unlike the same code from the coordinator, which means fenced.
        """
        with self._lock:
            code = code_of(exc)
            if is_fatal_produce_error(exc, code):
                fenced = self._fenced_error(PRODUCER_FENCED, "Produce")
                self.transition_to_fatal_error(as_fatal_produce_error(exc, code, fenced))
            elif self.state in (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION, State.ABORTABLE_ERROR):
                if self._tv < 2:
                    self._epoch_bump_required = True
                self.transition_to_abortable_error(as_abortable_produce_error(exc, code, tp))
            if self.state is State.FATAL_ERROR or producer_epoch != self._pid.epoch:
                return
            if code == UNKNOWN_PRODUCER_ID:
                # the broker has no state for us: it will accept sequence 0 again
                self._sequences.reset_partition(tp)
                self._broker_state.discard(tp)
            else:
                self._sequences.failed(tp, base_sequence, record_count, adjust_sequences)

    def can_retry(
        self,
        tp: TopicPartition,
        error_code: int,
        batch_epoch: int,
        batch_base_sequence: int,
        *,
        log_start_offset: int | None = None,
    ) -> bool:
        """May the Sender re-send a batch that got ``error_code``?

        UNKNOWN_PRODUCER_ID is retried only when the broker could not tell its log start offset
        (-1); OUT_OF_ORDER_SEQUENCE_NUMBER only when the batch is not the next expected one (an
        earlier batch failed and this one is collateral) and the transaction can still commit;
        otherwise the code's retriability.

        Why not once the transaction is doomed: then an earlier batch of the partition may have
        failed for good, and the broker keeps waiting for that batch's sequence, which never comes
        (this batch's bytes keep theirs). Retrying would last until ``delivery_timeout_ms`` and hold
        up ``abort_transaction()``; the records are aborted either way, and the abort's epoch bump
        (TV2: EndTxn; TV1: KIP-360) starts the partition's sequences again.
        """
        with self._lock:
            if self.state is State.FATAL_ERROR:
                return False
            if error_code == UNKNOWN_PRODUCER_ID:
                return log_start_offset == -1
            if error_code == OUT_OF_ORDER_SEQUENCE_NUMBER:
                if self.state is State.ABORTABLE_ERROR or self.state is State.ABORTING_TRANSACTION:
                    return False
                return batch_epoch == self._pid.epoch and not self._sequences.is_next_sequence(
                    tp, batch_base_sequence
                )
            return is_retriable(error_code)

    # ================================================================ error states ===============

    def transition_to_abortable_error(self, exc: BaseException) -> None:
        """Mark the open transaction uncommittable; ignored while it is already being aborted."""
        with self._lock:
            if self.state is State.ABORTING_TRANSACTION or self.state is State.FATAL_ERROR:
                self._log("debug", "txn.abortable_error_ignored", error=repr(exc))
                return
            if not is_transition_valid(self.state, State.ABORTABLE_ERROR):
                self._log("warning", "txn.abortable_error_ignored", error=repr(exc))
                return
            self._transition(State.ABORTABLE_ERROR, exc)

    def transition_to_fatal_error(self, exc: BaseException) -> None:
        """Enter FATAL_ERROR (first error kept) and fail everything that is waiting."""
        with self._lock:
            if self.state is State.FATAL_ERROR:
                return
            self._transition(State.FATAL_ERROR, exc)
            self._fail_all_queued(exc)
            if self._pending_call is not None:
                self._pending_call[0].set_error(exc)

    # ================================================================ internals: handlers ========

    def _new_result(self, operation: str, metric: str | None) -> TransactionalRequestResult:
        recorder = self._metrics.record_time_ns if self._metrics is not None else None
        return TransactionalRequestResult(operation, metric=metric, record_metric=recorder)

    def _enqueue(self, handler: TxnRequestHandler) -> None:
        self._queue_seq += 1
        heapq.heappush(self._queue, (int(handler.priority), self._queue_seq, handler))

    def _reenqueue(self, handler: TxnRequestHandler, backoff_ms: float) -> None:
        handler.is_retry = True
        handler.retry_backoff_ms = int(backoff_ms)
        handler.not_before = self._clock() + backoff_ms / 1000.0
        handler._request = None
        self._enqueue(handler)

    def _request_finished(self, handler: TxnRequestHandler) -> None:
        if self._in_flight is handler:
            self._in_flight = None

    def _enqueue_add_partitions(self) -> None:
        partitions = set(self._new_partitions)
        self._pending_partitions |= partitions
        self._new_partitions.clear()
        result = TransactionalRequestResult("add_partitions_to_txn")
        self._enqueue(AddPartitionsToTxnHandler(self, result, partitions))

    def _begin_completing(self, committed: bool) -> TransactionalRequestResult:
        if self._new_partitions:
            self._enqueue_add_partitions()
        metric = m.TXN_COMMIT_TIME_NS_TOTAL if committed else m.TXN_ABORT_TIME_NS_TOTAL
        operation = "commit_transaction" if committed else "abort_transaction"
        end_result = self._new_result(operation, metric)
        self._enqueue(EndTxnHandler(self, end_result, committed))
        if not self._epoch_bump_required:
            return end_result
        # KIP-360 (TV1): once the abort is written, bump the epoch with the current id/epoch; the
        # caller waits for the bump, so the next transaction starts on fresh sequences.
        bump_result = self._new_result(operation, metric)
        self._enqueue(
            InitProducerIdHandler(
                self,
                bump_result,
                epoch_bump=True,
                producer_id=self._pid.producer_id,
                producer_epoch=self._pid.epoch,
            )
        )
        return bump_result

    def _drop_queued_transaction_requests(self) -> None:
        """On abort: adds/offset commits not yet sent are pointless; fail their results."""
        keep: list[tuple[int, int, TxnRequestHandler]] = []
        for entry in self._queue:
            h = entry[2]
            if isinstance(h, (AddPartitionsToTxnHandler, AddOffsetsToTxnHandler, TxnOffsetCommitHandler)):
                h.result.set_error(
                    errors.TransactionAbortedError(
                        f"{h.api_name} was not sent because abort_transaction() was called"
                    )
                )
                if isinstance(h, AddPartitionsToTxnHandler):
                    self._pending_partitions -= h.partitions
            else:
                keep.append(entry)
        heapq.heapify(keep)
        self._queue = keep

    def _terminate_with_error(self, handler: TxnRequestHandler) -> bool:
        if not self.has_error():
            return False
        if self.state is State.ABORTABLE_ERROR and isinstance(handler, FindCoordinatorHandler):
            return False  # the abort will need the coordinator anyway
        assert self._last_error is not None
        handler.result.set_error(self._last_error)
        return True

    def _fail_all_queued(self, exc: BaseException) -> None:
        for _, _, h in self._queue:
            h.result.set_error(exc)
        self._queue.clear()

    def _fatal_from_handler(self, handler: TxnRequestHandler, exc: BaseException) -> None:
        handler.result.set_error(exc)
        self.transition_to_fatal_error(exc)

    def _abortable_from_handler(
        self, handler: TxnRequestHandler, exc: BaseException, *, bump_epoch: bool
    ) -> None:
        handler.result.set_error(exc)
        if bump_epoch and self._tv < 2:
            self._epoch_bump_required = True
        if self.state is State.ABORTING_TRANSACTION:
            # the abort itself failed: let the application call abort_transaction() again
            self._transition(State.ABORTABLE_ERROR, exc)
        else:
            self.transition_to_abortable_error(exc)

    def _fenced_error(self, code: int, api: str) -> errors.ProducerFencedError:
        return fenced_error(self.transactional_id, self._pid.producer_id, self._pid.epoch, code, api)

    def _group_authorization_error(self, group_id: str) -> errors.GroupAuthorizationError:
        return group_authorization_error(group_id)

    def _coordinator_found(self, key_type: str, key: str, node_id: int, host: str, port: int) -> None:
        self._coordinators[(key_type, key)] = (node_id, host, port)
        if key_type == "group":
            self._last_group = key
        self._log(
            "info",
            "txn.coordinator_found",
            coordinator_type=key_type,
            key=key,
            node_id=node_id,
            host=host,
            port=port,
        )

    def _producer_id_received(
        self,
        producer_id: int,
        epoch: int,
        handler: InitProducerIdHandler,
        ongoing: tuple[int, int] = (-1, -1),
    ) -> None:
        old = self._pid
        self._pid = ProducerIdAndEpoch(producer_id, epoch)
        self._sequences.reset()
        if handler.epoch_bump:
            self._log(
                "info",
                "txn.epoch_bumped",
                reason="kip360_after_abort",
                old_producer_id=old.producer_id,
                old_epoch=old.epoch,
            )
            if producer_id != old.producer_id:  # epoch exhausted: the coordinator gave a new id
                self._log("info", "txn.producer_id_assigned", reason="epoch_exhausted")
        else:
            self._log("info", "txn.producer_id_assigned")
        if ongoing[0] >= 0 and ongoing[1] >= 0 and self.state is State.INITIALIZING:
            # KIP-939: a prepared transaction survived the init; our new epoch completes it
            self._prepared = ProducerIdAndEpoch(ongoing[0], ongoing[1])
            self._transaction_started = True
            self._transition(State.PREPARED_TRANSACTION)
            self._log("info", "txn.prepared_transaction_kept", prepared_producer_id=ongoing[0],
                      prepared_epoch=ongoing[1])
            return
        if is_transition_valid(self.state, State.READY):
            self._transition(State.READY)
            self._apply_requested_tv()

    def _partitions_add_finished(self, partitions: set[TopicPartition], *, success: bool) -> None:
        self._pending_partitions -= partitions
        if success:
            self._partitions_in_txn |= partitions
            self._transaction_started = True

    def _offsets_added(self, handler: AddOffsetsToTxnHandler) -> None:
        self._transaction_started = True
        self._enqueue(TxnOffsetCommitHandler(self, handler.result, handler.offsets, handler.group_metadata))

    def _offsets_committed(self, handler: TxnOffsetCommitHandler) -> None:
        self._log("debug", "txn.offsets_committed", group_id=handler.group_id)

    def _transaction_ended(self, handler: EndTxnHandler, producer_id: int, epoch: int) -> None:
        if producer_id >= 0 and epoch >= 0:
            # TV2 (EndTxn v5): the coordinator bumped the epoch - or, at epoch exhaustion, issued a
            # new producer id with epoch 0. Either way sequences restart at 0.
            new = ProducerIdAndEpoch(producer_id, epoch)
            old = self._pid
            if new != old:
                self._pid = new
                self._sequences.reset()
                reason = "end_txn" if new.producer_id == old.producer_id else "end_txn_epoch_exhausted"
                self._log(
                    "info",
                    "txn.epoch_bumped",
                    reason=reason,
                    old_producer_id=old.producer_id,
                    old_epoch=old.epoch,
                )
                if new.producer_id != old.producer_id:
                    self._log("info", "txn.producer_id_assigned", reason=reason)
        self._complete_transaction()

    def _complete_transaction(self) -> None:
        target = State.INITIALIZING if self._epoch_bump_required else State.READY
        self._transition(target)
        self._prepared = None
        self._epoch_bump_required = False
        self._transaction_started = False
        self._new_partitions.clear()
        self._pending_partitions.clear()
        self._partitions_in_txn.clear()
        if target is State.READY:
            self._apply_requested_tv()

    # ================================================================ internals: state ==========

    def _transition(self, target: State, error: BaseException | None = None) -> None:
        source = self.state
        if not is_transition_valid(source, target):
            raise errors.IllegalStateError(invalid_transition_message(source, target, self.transactional_id))
        if target in (State.ABORTABLE_ERROR, State.FATAL_ERROR):
            if error is None:
                raise ValueError(f"a transition to {target.name} needs the error that caused it")
            self._last_error = error
        else:
            self._last_error = None
        self.state = target
        if error is not None:
            self._log(
                "warning", "txn.state_transition", source=source.name, target=target.name, error=repr(error)
            )
        else:
            self._log("debug", "txn.state_transition", source=source.name, target=target.name)

    def _cached_result(self, next_state: State, call: str) -> TransactionalRequestResult | None:
        """KIP-691: repeating a call whose wait timed out returns the same in-progress result."""
        self._ensure_open()
        pending = self._pending_call
        if pending is None:
            return None
        result, state, pending_call = pending
        if result.acked:
            self._pending_call = None
            return None
        if state is next_state:
            return result
        raise errors.IllegalStateError(self._pending_message(call, pending_call, self.state))

    def _throw_if_pending(self, call: str) -> None:
        self._ensure_open()
        if self._pending_call is None:
            return
        result, _, pending_call = self._pending_call
        if result.acked:
            self._pending_call = None
            return
        raise errors.IllegalStateError(self._pending_message(call, pending_call, self.state))

    @staticmethod
    def _pending_message(call: str, pending_call: str, state: State) -> str:
        return (
            f"{call}() called in state {state.name} while a previous {pending_call}() has not been seen"
            f" to complete (it timed"
            f" out or is still running): call {pending_call}() again to wait for it first"
        )

    def _ensure_open(self) -> None:
        if self._closed:
            raise errors.ClosedError(
                f"the producer (transactional_id {self.transactional_id!r}) is closed: create a new one"
            )

    def _maybe_fail_with_fatal(self, call: str) -> None:
        if self.state is State.FATAL_ERROR:
            assert self._last_error is not None
            raise reraisable(self._last_error, self.state.name, self.has_fatal_error(), call)

    def _maybe_fail_with_error(self, call: str) -> None:
        if self.state in (State.FATAL_ERROR, State.ABORTABLE_ERROR):
            assert self._last_error is not None
            raise reraisable(self._last_error, self.state.name, self.has_fatal_error(), call)

    def _log(self, level: str, event: str, **fields: Any) -> None:
        getattr(self._logger, level)(
            event,
            transactional_id=self.transactional_id,
            producer_id=self._pid.producer_id,
            epoch=self._pid.epoch,
            **fields,
        )

    def _log_debug(self, event: str, **fields: Any) -> None:
        self._log("debug", event, **fields)
