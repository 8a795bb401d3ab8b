"""TransactionManager: the transactional producer's state machine and its coordinator traffic.

This follows the Java client's ``TransactionManager`` (KIP-98, KIP-360, KIP-588, KIP-890,
KIP-1050) with snake_case names. Application threads call ``initialize_transactions``,
``begin_transaction``, ``begin_commit``/``begin_abort``, ``send_offsets_to_transaction`` and
``maybe_add_partition`` (from ``send()``); those calls change state and enqueue request handlers.
The Sender thread takes handlers with ``next_request()`` (priority order, one in flight),
sends them and completes them with ``handler.handle_response()`` / ``handler.fail()``; it also
reports produce outcomes (``handle_completed_batch`` / ``handle_failed_batch``) and asks
``can_retry`` / ``is_send_to_partition_allowed``. One lock guards everything.

Where the parts are: the state, transitions and call guards in :mod:`.core`; what the produce
path asks and reports in :mod:`.produce_side` (both base classes of this one); one handler module
per coordinator request (``find_coordinator.py``, ``end_txn.py``, ...), which see this object
only through ``handler.TxnContext``; the queue of their requests in :mod:`.request_queue`. This
module holds the application calls, two-phase commit, what the Sender takes from the queue, and
what the coordinator's answers change.

Transaction versions (KIP-890): the Sender reports the broker's finalized ``transaction.version``
with ``set_transaction_version``; it takes effect at ``init_transactions`` and otherwise only
between transactions. TV1 registers partitions with AddPartitionsToTxn and offsets with
AddOffsetsToTxn, keeps one epoch, and after an abortable produce error bumps the epoch itself with
InitProducerId(pid, epoch) once the abort is done (KIP-360). TV2 adds partitions implicitly
(Produce v12), sends TxnOffsetCommit v5 directly, and adopts the new producer id/epoch every
EndTxn v5 returns (resetting sequences); the coordinator does the bump, the client never does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kafka.structs import OffsetAndMetadata, TopicPartition

from txnproducer import errors
from txnproducer._internal import metrics as m
from txnproducer._internal.txn.add_offsets_to_txn import AddOffsetsToTxnHandler
from txnproducer._internal.txn.add_partitions_to_txn import AddPartitionsToTxnHandler
from txnproducer._internal.txn.end_txn import CompletePreparedHandler, EndTxnHandler
from txnproducer._internal.txn.find_coordinator import FindCoordinatorHandler
from txnproducer._internal.txn.handler import TxnRequestHandler
from txnproducer._internal.txn.init_producer_id import InitProducerIdHandler
from txnproducer._internal.txn.offsets import group_fields, normalize_offsets
from txnproducer._internal.txn.producer_id import NONE_PRODUCER_ID_AND_EPOCH
from txnproducer._internal.txn.producer_identity import ProducerIdentity
from txnproducer._internal.txn.request_queue import CoordinatorNode
from txnproducer._internal.txn.result import TransactionalRequestResult
from txnproducer._internal.txn.state import State, illegal_call_message
from txnproducer._internal.txn.txn_offset_commit import TxnOffsetCommitHandler
from txnproducer.prepared import PreparedTxnState

__all__ = ["TransactionManager"]


class TransactionManager(ProducerIdentity):
    """Client-side transaction state, request handlers and sequence bookkeeping (thread-safe)."""

    # -- application calls -------------------------------------------------------------------------------

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
            self.enqueue(
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
            self.txn_begun_at = self._clock()
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
            self.enqueue(handler)
            return result

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

    # -- two-phase commit (KIP-939) ----------------------------------------------------------------------

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
            busy = isinstance(self._requests.in_flight, adding) or any(
                isinstance(h, adding) for h in self._requests
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
                self.log("info", "txn.prepared", empty=True)
                return PreparedTxnState(self.transactional_id)
            self._prepared = self._pid
            if self._tv < 2:
                self._epoch_bump_required = True
            self.log("info", "txn.prepared", empty=False)
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
                    self.log(
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
            self.enqueue(CompletePreparedHandler(self, result, state.producer_id, state.epoch, commit))
            return result

    def prepared_identity(self) -> tuple[int, int] | None:
        """(producer id, epoch) of the prepared transaction being completed, if any."""
        if self._prepared is None or not self._prepared.is_valid:
            return None
        return self._prepared.producer_id, self._prepared.epoch

    # -- the Sender: coordinator requests ----------------------------------------------------------------

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
            if self._closed or self._requests.in_flight is not None:
                return None
            if callable(has_incomplete_batches):
                has_incomplete_batches = has_incomplete_batches()
            if self._new_partitions and self.state in (
                State.IN_TRANSACTION,
                State.COMMITTING_TRANSACTION,
            ):
                self._enqueue_add_partitions()
            while (handler := self._requests.head()) is not None:
                if handler.is_end_txn and has_incomplete_batches:
                    return None
                if not self._requests.head_is_due():
                    return None
                self._requests.pop()
                if self._terminate_with_error(handler):
                    continue
                if handler.is_end_txn and not self._transaction_started:
                    # nothing reached the coordinator: no EndTxn (the Java client does the same)
                    self.log("debug", "txn.end_txn_skipped", committed=getattr(handler, "committed", None))
                    if self._transaction_completed(handler.result):
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

    def may_have_request(self, has_incomplete_batches: bool) -> bool:
        """False when :meth:`next_request` would return None and change nothing; True when it
        might return a handler. Without the lock: the Sender asks on every loop iteration and
        between two Produce requests, and the answer is nearly always "nothing".

        Why a stale read is safe: True only sends the Sender to :meth:`next_request`, which
        decides under the lock. False needs the queue empty (a request queued by another thread
        afterwards comes with a wake-up) or an EndTxn waiting for batches that only the Sender
        thread completes, or a request in flight (also only the Sender's to end).
        """
        return self.request_outlook(has_incomplete_batches) is True

    def request_outlook(self, has_incomplete_batches: bool) -> bool | None:
        """None while a request is in flight, else :meth:`may_have_request`'s answer: the Sender's one
        question per loop iteration (and per Produce answer of a committing transaction), in one call."""
        requests = self._requests
        if requests.in_flight is not None:
            return None
        if self._closed:
            return False
        if self._new_partitions:
            return True
        head = requests.peek()  # without the lock (may_have_request's docstring says why)
        if head is None:
            return False
        return not (head.is_end_txn and has_incomplete_batches)

    def next_request_delay_ms(self) -> float | None:
        """Milliseconds until the head of the queue may be sent (0: now), None if it is empty."""
        if not self._requests:  # nearly every Sender iteration; one queued by another thread wakes it
            return None
        with self._lock:
            return self._requests.head_delay_ms()

    def in_flight_started(self, handler: TxnRequestHandler) -> None:
        with self._lock:
            self._requests.in_flight = handler
            handler.attempts += 1

    def has_in_flight_request(self) -> bool:
        return self._requests.in_flight is not None

    def retry(self, handler: TxnRequestHandler, backoff_ms: float | None = None) -> None:
        """Put a handler the Sender could not send back in the queue (after ``backoff_ms``,
        default ``retry_backoff_ms``)."""
        with self._lock:
            self._requests.finished(handler)
            if backoff_ms is None:
                # first time the coordinator was unknown: the FindCoordinator queued ahead of this
                # handler paces it, so no extra wait (the Java client sleeps retry_backoff_ms here)
                lookup_pending = handler.coordinator_type is not None and self._requests.lookup_pending(
                    handler.coordinator_type, handler.coordinator_key
                )
                backoff_ms = 0 if lookup_pending and not handler.is_retry else self.retry_backoff_ms
            self._requests.push_after(handler, backoff_ms)

    def coordinator(self, coordinator_type: str, key: str | None = None) -> int | None:
        """Node id of the transaction coordinator, or of the (last used / given) group's."""
        node = self.coordinator_node(coordinator_type, key)
        return None if node is None else node[0]

    def coordinator_node(self, coordinator_type: str, key: str | None = None) -> CoordinatorNode | None:
        """(node_id, host, port) of a known coordinator, as FindCoordinator answered."""
        with self._lock:
            if key is None:
                key = (self.transactional_id if coordinator_type == "transaction"
                       else self._requests.last_group)
            if key is None:
                return None
            return self._requests.coordinator(coordinator_type, key)

    def lookup_coordinator(self, coordinator_type: str, key: str) -> None:
        """Forget the coordinator and enqueue a FindCoordinator for it (once)."""
        with self._lock:
            self._requests.forget_coordinator(coordinator_type, key)
            if self._requests.lookup_pending(coordinator_type, key):
                return
            result = TransactionalRequestResult("find_coordinator")
            self.enqueue(FindCoordinatorHandler(self, result, coordinator_type, key))

    # -- what answers tell (handler.TxnContext) ----------------------------------------------------------

    def reenqueue(self, handler: TxnRequestHandler, backoff_ms: float | None = None) -> None:
        """Send ``handler`` again after ``backoff_ms`` (default ``retry_backoff_ms``)."""
        self._requests.push_after(handler, self.retry_backoff_ms if backoff_ms is None else backoff_ms)

    def request_finished(self, handler: TxnRequestHandler) -> None:
        self._requests.finished(handler)

    # The state changes before the result completes (the Java client's order): a caller woken by
    # the completion may read the state, or call abort_transaction(), at once.

    def handler_failed_fatally(self, handler: TxnRequestHandler, exc: BaseException) -> None:
        self._fail_fatally(handler.result, exc)

    def handler_failed_abortably(
        self, handler: TxnRequestHandler, exc: BaseException, *, bump_epoch: bool
    ) -> None:
        if bump_epoch and self._tv < 2:
            self._epoch_bump_required = True
        if self.state is State.ABORTING_TRANSACTION:
            # the abort itself failed: let the application call abort_transaction() again
            self._transition(State.ABORTABLE_ERROR, exc)
        else:
            self.transition_to_abortable_error(exc)
        handler.result.set_error(exc)

    def init_refused(self, handler: TxnRequestHandler, exc: BaseException) -> None:
        """InitProducerId was refused for authorization: back to UNINITIALIZED, so that
        ``init_transactions()`` can be called again (the waiting call gets ``exc``)."""
        self._transition(State.UNINITIALIZED)
        handler.result.set_error(exc)
        self.log("warning", "txn.init_refused", error=repr(exc))

    def coordinator_found(self, key_type: str, key: str, node_id: int, host: str, port: int) -> None:
        self._requests.set_coordinator(key_type, key, (node_id, host, port))
        self.log(
            "info",
            "txn.coordinator_found",
            coordinator_type=key_type,
            key=key,
            node_id=node_id,
            host=host,
            port=port,
        )

    def partitions_added(self, partitions: set[TopicPartition], *, success: bool) -> None:
        self._pending_partitions -= partitions
        if success:
            self._partitions_in_txn |= partitions
            self._transaction_started = True

    def offsets_added(self, handler: TxnRequestHandler) -> None:
        """AddOffsetsToTxn succeeded (TV1): the coordinator knows the transaction now."""
        self._transaction_started = True

    def offsets_committed(self, group_id: str) -> None:
        self.log("debug", "txn.offsets_committed", group_id=group_id)

    # -- internals ---------------------------------------------------------------------------------------

    def _enqueue_add_partitions(self) -> None:
        partitions = set(self._new_partitions)
        self._pending_partitions |= partitions
        self._new_partitions.clear()
        result = TransactionalRequestResult("add_partitions_to_txn")
        self.enqueue(AddPartitionsToTxnHandler(self, result, partitions))

    def _begin_completing(self, committed: bool) -> TransactionalRequestResult:
        if self._new_partitions:
            self._enqueue_add_partitions()
        metric = m.TXN_COMMIT_TIME_NS_TOTAL if committed else m.TXN_ABORT_TIME_NS_TOTAL
        operation = "commit_transaction" if committed else "abort_transaction"
        # If the epoch must be bumped (KIP-360, TV1), the bump follows the EndTxn and completes this
        # same result (see _transaction_completed): the caller's next transaction starts on fresh
        # sequences. Deciding it once EndTxn is answered also covers a batch that failed meanwhile.
        end_result = self._new_result(operation, metric)
        self.enqueue(EndTxnHandler(self, end_result, committed))
        return end_result

    def _drop_queued_transaction_requests(self) -> None:
        """On abort: adds/offset commits not yet sent are pointless; fail their results."""
        adding = (AddPartitionsToTxnHandler, AddOffsetsToTxnHandler, TxnOffsetCommitHandler)
        for h in self._requests.remove_where(lambda h: isinstance(h, adding)):
            h.result.set_error(
                errors.TransactionAbortedError(
                    f"{h.api_name} was not sent because abort_transaction() was called"
                )
            )
            if isinstance(h, AddPartitionsToTxnHandler):
                self._pending_partitions -= h.partitions

    def _terminate_with_error(self, handler: TxnRequestHandler) -> bool:
        if not self.has_error():
            return False
        if self.state is State.ABORTABLE_ERROR and isinstance(handler, FindCoordinatorHandler):
            return False  # the abort will need the coordinator anyway
        assert self._last_error is not None
        handler.result.set_error(self._last_error)
        return True
