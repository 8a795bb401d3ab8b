"""The transaction manager's core: its state, the one place state changes, and the call guards.

Why a base class of its own: :class:`~.manager.TransactionManager` is the Java client's
``TransactionManager`` with snake_case names, and like it one object under one lock; this module
holds what every part of it relies on - the fields, the transitions (through the table of
:mod:`.state`, nowhere else), the error states, the KIP-691 rule that a call whose wait timed out
is repeated rather than restarted, and structured logging bound with the producer's identity.
:class:`~.produce_side.ProduceSide` adds what the produce path asks and reports, and
:class:`~.manager.TransactionManager` the application calls and the coordinator traffic. The
layers are read top-down; none reaches into a later one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import structlog
from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.log import debug_enabled
from txnproducer._internal.metrics import ProducerMetrics
from txnproducer._internal.txn.error_policy import as_abortable_produce_error, fenced_error, reraisable
from txnproducer._internal.txn.observer import TransitionObserver
from txnproducer._internal.txn.producer_id import NONE_PRODUCER_ID_AND_EPOCH, ProducerIdAndEpoch
from txnproducer._internal.txn.request_queue import TxnRequestQueue
from txnproducer._internal.txn.result import TransactionalRequestResult
from txnproducer._internal.txn.sequences import SequenceBook
from txnproducer._internal.txn.state import (
    COMPLETING,
    TRANSACTION_OPEN,
    State,
    invalid_transition_message,
    is_transition_valid,
)
from txnproducer._internal.txn.versions import TV2_REQUIRED_VERSIONS, choose_version

__all__ = ["TxnCore"]


class TxnCore:
    """State, lock, transitions and guards of the transaction manager (see the module docstring)."""

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
        # Told whether ``state`` is IN_TRANSACTION: False before it leaves that state, True after it
        # enters it, so a listener never says "in a transaction" when the state says otherwise.
        # The producer's compiled send path keeps its own flag this way instead of reading
        # ``state`` on every record (about 20 ns per attribute read, two per record).
        self.in_transaction_listener: Callable[[bool], None] | None = None
        # told every state change (txnproducer.otel's transaction spans); None: tracing is off
        self.observer: TransitionObserver | None = None
        self._last_error: BaseException | None = None
        self._pid = NONE_PRODUCER_ID_AND_EPOCH
        self._tv = 1
        self._tv_requested: int | None = None
        # set by set_transaction_version(): the next point between transactions checks the broker's
        # versions once (not at every transaction: the Sender asks again whenever they change)
        self._tv_check_due = False
        self._closed = False

        self._requests = TxnRequestQueue(clock)

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
        # when the open transaction began (``clock``), to explain a fence that follows a timeout
        self.txn_begun_at: float | None = None

    # -- queries -----------------------------------------------------------------------------------------

    @property
    def last_error(self) -> BaseException | None:
        """What put the producer in ABORTABLE_ERROR or FATAL_ERROR (None in other states)."""
        return self._last_error

    @property
    def producer_id_and_epoch(self) -> ProducerIdAndEpoch:
        return self._pid

    @property
    def transaction_version(self) -> int:
        """1 or 2: the KIP-890 transaction version in effect for the current/next transaction."""
        return self._tv

    def has_producer_id(self) -> bool:
        return self._pid.is_valid

    def is_completing(self) -> bool:
        return self.state in COMPLETING

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

    def has_partitions_to_add(self) -> bool:
        with self._lock:
            return bool(self._new_partitions or self._pending_partitions)

    def is_partition_pending_add(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._new_partitions or tp in self._pending_partitions

    # -- transaction version -----------------------------------------------------------------------------

    def set_transaction_version(self, v: int) -> None:
        """Record the finalized ``transaction.version`` (0/1 -> TV1, >= 2 -> TV2).

        Applied at once when no transaction is open, otherwise when the next one begins.
        """
        with self._lock:
            self._tv_requested = 2 if v >= 2 else 1
            self._tv_check_due = True
            if self.state in (State.UNINITIALIZED, State.INITIALIZING, State.READY):
                self._apply_requested_tv()

    def _apply_requested_tv(self) -> None:
        if not self._tv_check_due or self._tv_requested is None:
            return
        self._tv_check_due = False
        tv = self._tv_requested
        if tv == 2 and self._max_versions is not None:
            for api_key, needed in TV2_REQUIRED_VERSIONS.items():
                have = self._max_versions(api_key)
                if have is not None and have < needed:
                    self.log("warning", "txn.tv2_unavailable", api_key=api_key, max_version=have)
                    tv = 1
        if tv != self._tv:
            self.log("info", "txn.transaction_version", old=self._tv, new=tv)
        self._tv = tv

    # -- error states ------------------------------------------------------------------------------------

    def transition_to_abortable_error(self, exc: BaseException) -> None:
        """Mark the open transaction uncommittable; ignored while it is already being aborted."""
        with self._lock:
            if self.state is State.ABORTING_TRANSACTION or self.state is State.FATAL_ERROR:
                self.log("debug", "txn.abortable_error_ignored", error=repr(exc))
                return
            if not is_transition_valid(self.state, State.ABORTABLE_ERROR):
                self.log("warning", "txn.abortable_error_ignored", error=repr(exc))
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

    # -- what request handlers read (handler.TxnContext) -------------------------------------------------

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @property
    def closed(self) -> bool:
        return self._closed

    def fenced_error(self, code: int, api: str) -> errors.ProducerFencedError:
        """The error that ends a producer a newer instance fenced (``code`` answered on ``api``).

        A transaction open longer than ``transaction_timeout_ms`` gets the same answer once the
        coordinator aborted it and bumped the epoch: the message then says so, so that the first
        error a user sees after a timeout names the timeout, not only "another producer"."""
        return fenced_error(self.transactional_id, self._pid.producer_id, self._pid.epoch, code, api,
                            open_ms=self._overran_ms(), transaction_timeout_ms=self.transaction_timeout_ms)

    def abortable_produce_error(self, exc: BaseException, code: int | None,
                                tp: TopicPartition) -> BaseException:
        """The AbortableError a failed batch makes (see ``error_policy.as_abortable_produce_error``):
        INVALID_PRODUCER_EPOCH names a timeout first only if the transaction ran past it."""
        return as_abortable_produce_error(exc, code, tp, open_ms=self._overran_ms(),
                                          transaction_timeout_ms=self.transaction_timeout_ms)

    def _overran_ms(self) -> int | None:
        """How long the open transaction has been open, if longer than transaction_timeout_ms."""
        if self.txn_begun_at is not None and self.state in TRANSACTION_OPEN:
            open_ms = int((self._clock() - self.txn_begun_at) * 1000)
            if open_ms > self.transaction_timeout_ms:
                return open_ms
        return None

    def version_for(self, request_cls: Any) -> int:
        """The version of ``request_cls`` to send now (transaction version, broker's range)."""
        return choose_version(request_cls, self._tv, self._max_versions)

    def broker_max_version(self, api_key: int) -> int | None:
        return None if self._max_versions is None else self._max_versions(api_key)

    def log(self, level: str, event: str, **fields: Any) -> None:
        """Log ``event`` bound with the transactional id, producer id and epoch (DESIGN: logging)."""
        getattr(self._logger, level)(
            event,
            transactional_id=self.transactional_id,
            producer_id=self._pid.producer_id,
            epoch=self._pid.epoch,
            **fields,
        )

    def log_debug(self, event: str, **fields: Any) -> None:
        self.log("debug", event, **fields)

    # -- internals ---------------------------------------------------------------------------------------

    def _new_result(self, operation: str, metric: str | None) -> TransactionalRequestResult:
        recorder = self._metrics.record_time_ns if self._metrics is not None else None
        return TransactionalRequestResult(operation, metric=metric, record_metric=recorder)

    def _fail_all_queued(self, exc: BaseException) -> None:
        for h in self._requests.clear():
            h.result.set_error(exc)

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
        listener = self.in_transaction_listener
        if listener is not None and source is State.IN_TRANSACTION and target is not State.IN_TRANSACTION:
            listener(False)
        self.state = target
        if listener is not None and target is State.IN_TRANSACTION and source is not State.IN_TRANSACTION:
            listener(True)
        if self.observer is not None:
            self.observer.transition(source, target, error)
        if error is not None:
            self.log(
                "warning", "txn.state_transition", source=source.name, target=target.name, error=repr(error)
            )
        elif debug_enabled(self._logger):
            self.log("debug", "txn.state_transition", source=source.name, target=target.name)

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
