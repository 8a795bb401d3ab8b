"""A producer's transactions as spans (and per-transaction metrics), driven by its state machine.

The trace of one transaction (docs/guide/observability.md shows one rendered)::

    transaction                       INTERNAL  txnproducer.outcome, .record_count, .abort_reason, ...
    ├── send {topic}                  PRODUCER  one per batch (or per record): _send.py
    ├── send_offsets_to_transaction   CLIENT
    │   └── TxnOffsetCommit           CLIENT    one per attempt; error.type of a failed answer
    └── commit_transaction            CLIENT    (or abort_transaction)
        └── EndTxn                    CLIENT    one per attempt; a "retry" event on the parent per resend

Where each comes from: the transaction manager's state changes (:class:`~txnproducer._internal.txn.
observer.TransitionObserver`: begin, commit, abort, abortable error, fenced, prepared, end), the
producer's start of a transactional call (``operation_started``: ``init_transactions``,
``send_offsets_to_transaction``, ``complete_transaction``, which change no state or not only), and the
Sender's coordinator requests (``coordinator_request``: one child span per attempt, ended by the answer).
Every hook is guarded (:func:`~._common.guarded`): telemetry never breaks a transaction.

Parents: the transaction span is a child of the application's current context when it calls
``begin_transaction()`` (a request being handled, an input record being processed); every other span
here is a child of the transaction span or of the call's span - these run on the Sender thread, where
the application's context is not current, so parents are always explicit. Without a tracer (metrics
only) the same hooks record the transaction counter and durations, and no span is made.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from txnproducer import errors
from txnproducer._internal.protocol.error_codes import error_name
from txnproducer._internal.txn.state import State
from txnproducer.otel import names
from txnproducer.otel._common import broker_address, error_type, first_error_code, guarded
from txnproducer.otel._instruments import ProducerInstruments

__all__ = ["TransactionTelemetry"]

_S = State
_ENDED_FROM = (_S.READY, _S.INITIALIZING)
# the calls whose spans operation_started() makes (commit and abort follow the state changes instead)
_OPERATION_SPANS = {"init": names.SPAN_INIT, "offsets": names.SPAN_SEND_OFFSETS,
                    "complete": names.SPAN_COMPLETE}


class _Op:
    """A transactional call (or the commit/abort of the open transaction) being traced."""

    __slots__ = ("context", "name", "span", "started")

    def __init__(self, name: str, span: Span | None) -> None:
        self.name = name
        self.span = span
        self.context = None if span is None else trace.set_span_in_context(span)
        self.started = time.monotonic()


class Txn:
    """The open transaction as the telemetry sees it (``TransactionTelemetry.current``; read without a lock
    by the send hook, replaced - never reused - at each begin)."""

    __slots__ = ("abort_reason", "app_span_id", "completing", "context", "error", "failed", "records",
                 "span", "started")

    def __init__(self, span: Span | None, app_span_id: int) -> None:
        self.span = span
        self.context = None if span is None else trace.set_span_in_context(span)
        # the application's span current at begin_transaction(): a send() inside another span of the
        # application (an input's "process" span) gets that one as its parent instead of this transaction
        self.app_span_id = app_span_id
        self.started = time.monotonic()
        self.records = 0
        self.abort_reason: str | None = None
        self.completing: _Op | None = None
        self.error: BaseException | None = None  # what made it abortable
        self.failed = False


class TransactionTelemetry:
    """The transaction manager's observer, the producer's call hook and the Sender's request hook."""

    def __init__(self, *, tracer: Any, instruments: ProducerInstruments | None, transaction_manager: Any,
                 cluster: Any, attributes: dict[str, Any], closing: Callable[[], bool]) -> None:
        self._tracer = tracer
        self._instruments = instruments
        self._tm = transaction_manager
        self._cluster = cluster
        self._base = dict(attributes)
        self._metric_attributes = dict(attributes)
        self._closing = closing
        self._lock = threading.Lock()
        self.current: Txn | None = None
        self._ops: dict[Any, _Op] = {}
        # each coordinator request's last failed answer, for the "retry" event of its next attempt
        self._last_error: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    # -- what the public API offers (txnproducer.otel) ------------------------------------------------

    def transaction_span(self) -> Span | None:
        txn = self.current
        return None if txn is None else txn.span

    def set_abort_reason(self, reason: str) -> None:
        """Why the application is about to abort the open transaction (TransactionalProcessor: ``transform``,
        ``revoked``, ...); kept unless an error made the transaction abortable first."""
        txn = self.current
        if txn is not None and txn.abort_reason is None:
            txn.abort_reason = reason

    def add_records(self, txn: Txn, count: int) -> None:
        with self._lock:
            txn.records += count

    # -- the transaction manager's state changes -------------------------------------------------------

    @guarded
    def transition(self, source: State, target: State, error: BaseException | None) -> None:
        if target is _S.IN_TRANSACTION:
            self._begin()
        elif target is _S.COMMITTING_TRANSACTION:
            self._completing(names.SPAN_COMMIT)
        elif target is _S.ABORTING_TRANSACTION:
            self._completing(names.SPAN_ABORT)
        elif target is _S.ABORTABLE_ERROR:
            self._abortable(error)
        elif target is _S.FATAL_ERROR:
            self._fatal(error)
        elif target is _S.PREPARED_TRANSACTION:
            self._prepared()
        elif target in _ENDED_FROM and source is _S.COMMITTING_TRANSACTION:
            self._end(names.OUTCOME_COMMITTED)
        elif target in _ENDED_FROM and source is _S.ABORTING_TRANSACTION:
            self._end(names.OUTCOME_ABORTED)

    def _begin(self, kept_prepared: bool = False) -> None:
        span = None
        app_span_id = 0
        if self._tracer is not None:
            current = trace.get_current_span().get_span_context()
            if current.is_valid:
                app_span_id = current.span_id
            pid = self._tm.producer_id_and_epoch
            span = self._tracer.start_span(names.SPAN_TRANSACTION, kind=SpanKind.INTERNAL, attributes={
                **self._base, names.PRODUCER_ID: int(pid.producer_id), names.PRODUCER_EPOCH: int(pid.epoch),
                names.TRANSACTION_VERSION: int(self._tm.transaction_version)})
            if kept_prepared:
                span.add_event(names.EVENT_PREPARED, {"txnproducer.kept_at_init": True})
        self.current = Txn(span, app_span_id)

    def _completing(self, name: str) -> None:
        txn = self.current
        if txn is None:
            return
        if name == names.SPAN_ABORT and txn.abort_reason is None:
            txn.abort_reason = names.ABORT_ON_CLOSE if self._closing() else names.ABORT_BY_APPLICATION
        span = None
        if self._tracer is not None:
            attributes = dict(self._base)
            if name == names.SPAN_ABORT and txn.abort_reason is not None:
                attributes[names.ABORT_REASON] = txn.abort_reason
            span = self._tracer.start_span(name, context=txn.context, kind=SpanKind.CLIENT,
                                           attributes=attributes)
        txn.completing = _Op(name, span)

    def _abortable(self, error: BaseException | None) -> None:
        txn = self.current
        if txn is None:
            return
        kind = error_type(error) if error is not None else "unknown"
        txn.abort_reason = kind  # the error wins over a reason the application gave
        txn.error = error
        if txn.span is not None:
            txn.span.add_event(names.EVENT_ABORTABLE_ERROR, {
                names.ERROR_TYPE: kind, names.EXCEPTION_MESSAGE: str(error) if error is not None else ""})
        self._finish_op(txn.completing, error)  # a commit (or abort) that failed
        txn.completing = None

    def _prepared(self) -> None:
        txn = self.current
        if txn is None:  # init_transactions(keep_prepared_txn=True) found one: this producer ends it
            self._begin(kept_prepared=True)
        elif txn.span is not None:
            txn.span.add_event(names.EVENT_PREPARED)

    def _fatal(self, error: BaseException | None) -> None:
        txn = self.current
        if txn is None:
            return
        fenced = isinstance(error, errors.ProducerFencedError)
        outcome = names.OUTCOME_FENCED if fenced else names.OUTCOME_FAILED
        self._finish_op(txn.completing, error)
        txn.completing = None
        self._end(outcome, error)

    def _end(self, outcome: str, error: BaseException | None = None) -> None:
        txn = self.current
        if txn is None:
            return
        self.current = None
        self._finish_op(txn.completing, None)
        if txn.span is not None:
            span = txn.span
            span.set_attribute(names.RECORD_COUNT, txn.records)
            span.set_attribute(names.OUTCOME, outcome)
            if outcome == names.OUTCOME_ABORTED and txn.abort_reason is not None:
                span.set_attribute(names.ABORT_REASON, txn.abort_reason)
            cause = error or (txn.error if outcome == names.OUTCOME_ABORTED else None)
            if cause is not None:
                span.set_attribute(names.ERROR_TYPE, error_type(cause))
                span.set_status(Status(StatusCode.ERROR, f"{outcome}: {error_type(cause)}"))
            span.end()
        if self._instruments is not None:
            attributes = {**self._metric_attributes, names.OUTCOME: outcome}
            self._instruments.transactions.add(1, attributes)
            self._instruments.transaction_duration.record(time.monotonic() - txn.started, attributes)

    def _finish_op(self, op: _Op | None, error: BaseException | None) -> None:
        if op is None:
            return
        if op.span is not None:
            if error is not None:
                op.span.set_attribute(names.ERROR_TYPE, error_type(error))
                op.span.set_status(Status(StatusCode.ERROR, error_type(error)))
            op.span.end()
        if self._instruments is not None:
            attributes = {**self._metric_attributes, names.OPERATION: op.name}
            if error is not None:
                attributes[names.ERROR_TYPE] = error_type(error)
            self._instruments.operation_duration.record(time.monotonic() - op.started, attributes)

    # -- the producer's calls -------------------------------------------------------------------------

    @guarded
    def operation_started(self, op: str, result: Any) -> None:
        """The producer started the call ``op`` (``"init"``, ``"offsets"``, ``"complete"``, ...), which
        completes ``result``; commit and abort are traced by the state changes instead."""
        name = _OPERATION_SPANS.get(op)
        if name is None:
            return
        span = None
        if self._tracer is not None:
            txn = self.current
            parent = txn.context if op == "offsets" and txn is not None else otel_context.get_current()
            span = self._tracer.start_span(name, context=parent, kind=SpanKind.CLIENT, attributes=self._base)
        traced = _Op(name, span)
        with self._lock:
            self._ops[result] = traced
        result.add_done_callback(lambda: self._operation_done(result))

    @guarded
    def _operation_done(self, result: Any) -> None:
        with self._lock:
            op = self._ops.pop(result, None)
        if op is None:
            return
        if op.span is not None and op.name == names.SPAN_INIT and result.error is None:
            pid = self._tm.producer_id_and_epoch
            op.span.set_attribute(names.PRODUCER_ID, int(pid.producer_id))
            op.span.set_attribute(names.PRODUCER_EPOCH, int(pid.epoch))
            op.span.set_attribute(names.TRANSACTION_VERSION, int(self._tm.transaction_version))
        self._finish_op(op, result.error)

    def closed(self) -> None:
        """The producer stopped: a transaction still open ends as ``prepared`` (its producer prepared it
        and left it to whoever completes it) or ``abandoned`` (a forced close: the coordinator aborts it)."""
        txn = self.current
        if txn is None:
            return
        prepared = self._tm.state is _S.PREPARED_TRANSACTION
        self._end(names.OUTCOME_PREPARED if prepared else names.OUTCOME_ABANDONED)

    # -- the Sender's coordinator requests --------------------------------------------------------------

    def _parent_of(self, handler: Any) -> _Op | Txn | None:
        with self._lock:
            op = self._ops.get(handler.result)
            if op is None and self._ops:
                op = next(reversed(self._ops.values()))
        txn = self.current
        if txn is not None and txn.completing is not None and (op is None or handler.is_end_txn):
            return txn.completing
        return op or txn

    @guarded
    def coordinator_request(self, handler: Any, node: int | str, future: Any) -> None:
        if self._tracer is None:
            return
        parent = self._parent_of(handler)
        if parent is None or parent.span is None:
            return
        api = str(handler.api_name)
        attempt = int(handler.attempts)
        attributes: dict[str, Any] = {**self._base, names.REQUEST: api, names.ATTEMPT: attempt}
        if isinstance(node, int):  # a bootstrap server's connection ("bootstrap-0") has no broker id yet
            attributes[names.BROKER_ID] = node
        address = broker_address(self._cluster, node)
        if address is not None:
            attributes[names.SERVER_ADDRESS], attributes[names.SERVER_PORT] = address
            if handler.coordinator_type is not None:  # the coordinator of the call: say where it is
                parent.span.set_attribute(names.SERVER_ADDRESS, address[0])
                parent.span.set_attribute(names.SERVER_PORT, address[1])
        group = getattr(handler, "group_id", None)
        if isinstance(group, str):
            attributes[names.MESSAGING_CONSUMER_GROUP_NAME] = group
            parent.span.set_attribute(names.MESSAGING_CONSUMER_GROUP_NAME, group)
            pending = getattr(handler, "pending", None) or getattr(handler, "offsets", None)
            if pending is not None and attempt == 1:
                parent.span.set_attribute(names.OFFSET_PARTITION_COUNT, len(pending))
        if api == "EndTxn":
            committed = getattr(handler, "committed", None)
            if isinstance(committed, bool):
                attributes[names.COMMIT] = committed
            if parent.span is not None and isinstance(parent, _Op) and parent.name == names.SPAN_COMPLETE:
                parent.span.set_attribute(names.PREPARED_PRODUCER_ID, int(handler.producer_id))
                parent.span.set_attribute(names.PREPARED_EPOCH, int(handler.producer_epoch))
        if attempt > 1:
            parent.span.add_event(names.EVENT_RETRY, {
                names.REQUEST: api, names.ATTEMPT: attempt,
                names.ERROR_TYPE: self._last_error.get(handler, "unknown")})
        if isinstance(parent, _Op) and parent.span is not None:
            parent.span.set_attribute(names.ATTEMPTS, attempt)
        context = parent.context if isinstance(parent, (_Op, Txn)) else None
        span = self._tracer.start_span(api, context=context, kind=SpanKind.CLIENT, attributes=attributes)
        future.add_callback(lambda answer: self._answered(span, handler, answer))
        future.add_errback(lambda exc: self._unanswered(span, handler, exc))

    @guarded
    def _answered(self, span: Span, handler: Any, answer: Any) -> None:
        code = first_error_code(answer)
        if code:
            kind = error_name(code)
            self._last_error[handler] = kind
            span.set_attribute(names.ERROR_TYPE, kind)
            span.set_status(Status(StatusCode.ERROR, kind))
        span.end()

    @guarded
    def _unanswered(self, span: Span, handler: Any, exc: BaseException) -> None:
        kind = error_type(exc)
        self._last_error[handler] = kind
        span.set_attribute(names.ERROR_TYPE, kind)
        span.set_status(Status(StatusCode.ERROR, kind))
        span.end()
