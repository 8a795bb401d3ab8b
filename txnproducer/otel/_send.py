"""``send()`` with trace context: the record's ``traceparent`` header, and its ``send {topic}`` span.

When a producer is traced, its ``send`` is an instance of :class:`TracedSend` (the producer puts it where
the compiled send path would otherwise be): it decides the record's context, adds it to the record's
headers as W3C ``traceparent`` (and ``tracestate``), and calls the producer's own ``send()``, which then
takes its Python path (headers are not the compiled path's case). An application span that is current
when ``send()`` is called and is not the one current at ``begin_transaction()`` - an input record's
``process`` span, say - is the record's parent, so a consumer of the output continues the input's
trace; otherwise the transaction span is.

Spans, by measurement (docs/guide/observability.md and "Performance"): by default one ``send {topic}`` span
per *batch* (PRODUCER kind, child of the transaction, from the batch's first record to the broker's
acknowledgement, with ``messaging.batch.message_count``, its base offset, its attempts and a ``retry``
event per resend); the records carry their parent's context. With ``record_spans=True`` each record
gets a span of its own that ends when the broker acknowledges it - about four times the cost per
record. Either way a record's span ends on the broker's answer, not when it is queued.

No record value is ever read into an attribute; a key only in per-record mode and only when the
application passed it as ``str`` (``messaging.kafka.message.key``): give bytes to keep a key out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode

from txnproducer._internal.batching.batch import ProducerBatch, RecordFuture, RecordMetadata
from txnproducer._internal.protocol.error_codes import error_name
from txnproducer.otel import names
from txnproducer.otel._common import broker_address, error_type, guarded
from txnproducer.otel._transactions import TransactionTelemetry, Txn

__all__ = ["TracedSend", "traceparent"]

SendFunction = Callable[..., RecordFuture]


def traceparent(context: SpanContext) -> bytes:
    """The W3C ``traceparent`` header value of ``context`` (version 00)."""
    return b"00-%032x-%016x-%02x" % (context.trace_id, context.span_id, context.trace_flags)


class _Batch:
    __slots__ = ("span", "txn")

    def __init__(self, txn: Txn, span: Span | None) -> None:
        self.txn = txn
        self.span = span


class TracedSend:
    """The producer's ``send`` when it is traced (module docstring)."""

    def __init__(self, producer: Any, send: SendFunction, *, tracer: Any,
                 transactions: TransactionTelemetry,
                 cluster: Any, attributes: dict[str, Any], record_spans: bool,
                 retry_signals: tuple[type[BaseException], ...] = ()) -> None:
        self._producer = producer
        self._send = send  # the class's send(), called with the producer
        self._tracer = tracer
        self._txns = transactions
        self._cluster = cluster
        self._base = dict(attributes)
        self._record_spans = record_spans
        # what send() raises to mean "wait, then call again" (txnproducer.aio): not a failed send
        self._retry_signals = retry_signals
        self._lock = threading.Lock()
        self._batches: dict[ProducerBatch, _Batch] = {}
        self._cached: tuple[Any, Any] = (None, ())  # (span context, its headers): one per transaction

    def __call__(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                 timestamp_ms: int | None = None, headers: Any = None) -> RecordFuture:
        txn = self._txns.current
        if txn is None or txn.span is None:  # no transaction open (send() raises), or no tracer
            return self._send(self._producer, topic, value, key, partition, timestamp_ms, headers)
        current = otel_context.get_current()
        app = trace.get_current_span(current).get_span_context()
        txn_context = txn.span.get_span_context()
        own = app.is_valid and app.span_id != txn.app_span_id and app.span_id != txn_context.span_id
        span: Span | None = None
        if self._record_spans:
            span = self._record_span(topic, key, value, current if own else txn.context,
                                     txn_context if own else None)
            record_context = span.get_span_context()
        else:
            record_context = app if own else txn_context
        if record_context.is_valid:
            headers = self._with_context(headers, record_context)
        try:
            future = self._send(self._producer, topic, value, key, partition, timestamp_ms, headers)
        except self._retry_signals:
            raise  # the caller sends this record again: the span (never ended) is dropped
        except BaseException as exc:
            if span is not None:
                _fail(span, exc)
            raise
        self._track(future, txn, topic)
        if span is not None:
            partition_id = str(future.topic_partition.partition)
            span.set_attribute(names.MESSAGING_DESTINATION_PARTITION_ID, partition_id)
            future.add_callback(lambda metadata, exc: self._record_done(span, future, metadata, exc))
        return future

    # -- the record's context in its headers --------------------------------------------------------------

    def _with_context(self, headers: Any, context: SpanContext) -> Any:
        cached_for, ours = self._cached
        if cached_for != context:
            added = [(names.TRACEPARENT, traceparent(context))]
            if context.trace_state:
                added.append((names.TRACESTATE, context.trace_state.to_header().encode()))
            ours = tuple(added)
            self._cached = (context, ours)
        if headers is None:
            return ours
        if isinstance(headers, Mapping):
            items = list(headers.items())
        elif isinstance(headers, (list, tuple)):
            items = list(headers)
        else:
            return headers  # send() checks it (and names what is wrong)
        for item in items:
            if not isinstance(item, tuple) or len(item) != 2:
                return headers  # malformed: send() says so, with the application's own argument
            if item[0] == names.TRACEPARENT:
                return headers  # the application propagates a context of its own: keep it
        return items + list(ours)

    # -- spans -------------------------------------------------------------------------------------------

    def _record_span(self, topic: str, key: Any, value: Any, parent: Any, link: SpanContext | None) -> Span:
        attributes = {**self._base, names.MESSAGING_OPERATION_NAME: names.OPERATION_SEND,
                      names.MESSAGING_OPERATION_TYPE: names.OPERATION_SEND,
                      names.MESSAGING_DESTINATION_NAME: topic}
        if isinstance(key, str):
            attributes[names.MESSAGING_KAFKA_MESSAGE_KEY] = key
        if value is None:
            attributes["messaging.kafka.message.tombstone"] = True
        span: Span = self._tracer.start_span(
            names.send_span_name(topic), context=parent, kind=SpanKind.PRODUCER, attributes=attributes,
            links=None if link is None else [Link(link)])
        return span

    @guarded
    def _record_done(self, span: Span, future: RecordFuture, metadata: RecordMetadata | None,
                     exc: BaseException | None) -> None:
        batch = future._batch
        span.set_attribute(names.ATTEMPTS, int(batch.attempts))
        address = broker_address(self._cluster, batch.sent_to)
        if address is not None:
            span.set_attribute(names.SERVER_ADDRESS, address[0])
            span.set_attribute(names.SERVER_PORT, address[1])
        if metadata is not None:
            span.set_attribute(names.MESSAGING_KAFKA_OFFSET, int(metadata.offset))
        if exc is not None:
            _fail(span, exc)
        else:
            span.end(end_time=getattr(batch, "acknowledged_ns", None))  # the acknowledgement's time

    @guarded
    def _track(self, future: RecordFuture, txn: Txn, topic: str) -> None:
        """Count the record's batch into its transaction once, and (per-batch mode) give it its span."""
        batch = future._batch
        if batch in self._batches:
            return
        with self._lock:
            if batch in self._batches:
                return
            span = None
            if not self._record_spans:
                span = self._tracer.start_span(
                    names.send_span_name(topic), context=txn.context, kind=SpanKind.PRODUCER, attributes={
                        **self._base, names.MESSAGING_OPERATION_NAME: names.OPERATION_SEND,
                        names.MESSAGING_OPERATION_TYPE: names.OPERATION_SEND,
                        names.MESSAGING_DESTINATION_NAME: topic,
                        names.MESSAGING_DESTINATION_PARTITION_ID: str(batch.tp.partition)})
            self._batches[batch] = _Batch(txn, span)
        batch.add_done_callback(lambda: self._batch_done(batch))

    @guarded
    def _batch_done(self, batch: ProducerBatch) -> None:
        with self._lock:
            state = self._batches.pop(batch, None)
        if state is None:
            return
        self._txns.add_records(state.txn, batch.record_count)
        span = state.span
        if span is None:
            return
        span.set_attribute(names.MESSAGING_BATCH_MESSAGE_COUNT, int(batch.record_count))
        span.set_attribute(names.ATTEMPTS, int(batch.attempts))
        address = broker_address(self._cluster, batch.sent_to)
        if address is not None:
            span.set_attribute(names.SERVER_ADDRESS, address[0])
            span.set_attribute(names.SERVER_PORT, address[1])
        if batch.exception is not None:
            _fail(span, batch.exception)
            return
        if batch.base_offset >= 0:
            span.set_attribute(names.MESSAGING_KAFKA_OFFSET, int(batch.base_offset))
        # at the acknowledgement: the futures (and this callback) may run after the EndTxn went out
        span.end(end_time=getattr(batch, "acknowledged_ns", None))

    @guarded
    def batch_retry(self, batch: ProducerBatch, error_code: int) -> None:
        """The Sender sends ``batch`` again after ``error_code``: an event on its span."""
        state = self._batches.get(batch)
        if state is not None and state.span is not None:
            state.span.add_event(names.EVENT_BATCH_RETRY, {
                names.ERROR_TYPE: error_name(error_code), names.ATTEMPT: int(batch.attempts) + 1})


def _fail(span: Span, exc: BaseException) -> None:
    kind = error_type(exc)
    span.set_attribute(names.ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, kind))
    span.end()
