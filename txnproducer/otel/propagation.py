"""Trace context in Kafka record headers: what a consumer reads to continue a producer's trace.

A traced producer writes the W3C Trace Context of each record (``traceparent``, and ``tracestate`` when
there is one) into the record's headers. A consumer continues the trace with :func:`extract_context`
(a parent for its own ``process`` span) or links to it with :func:`span_context_of` (a batch of inputs:
one span, a link per input). Both accept a record of any client - :class:`txnproducer.ConsumerRecord`,
kafka-python's and aiokafka's ``ConsumerRecord`` (``headers``: a list of ``(str, bytes)``),
confluent-kafka's ``Message`` (``headers()``) - or the headers themselves.

Why W3C Trace Context itself rather than the globally configured propagator: the producer writes this
format (the one every OpenTelemetry SDK reads by default, and the one the Kafka instrumentations of
other languages write), so the reader here reads exactly what the writer wrote, whatever else an
application configured for its HTTP traffic.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from txnproducer.otel import names
from txnproducer.otel.spans import current_span

__all__ = ["extract_context", "process_span", "record_headers", "span_context_of", "trace_headers"]

_PROPAGATOR = TraceContextTextMapPropagator()


def record_headers(record_or_headers: Any) -> list[tuple[str, Any]]:
    """The ``(name, value)`` headers of a record of any client, or of headers given as such."""
    headers = getattr(record_or_headers, "headers", record_or_headers)
    if callable(headers):  # confluent-kafka's Message.headers()
        headers = headers()
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return list(headers.items())
    return [h for h in headers if isinstance(h, tuple) and len(h) == 2]


def _carrier(record_or_headers: Any) -> dict[str, str]:
    carrier: dict[str, str] = {}
    for name, value in record_headers(record_or_headers):
        if name in (names.TRACEPARENT, names.TRACESTATE) and value is not None:
            if isinstance(value, (bytes, bytearray, memoryview)):
                value = bytes(value).decode("ascii", "replace")
            carrier[str(name)] = str(value)
    return carrier


def extract_context(record_or_headers: Any, context: Context | None = None) -> Context:
    """The context the record was produced in (its ``traceparent``), on top of ``context`` (default: the
    current one); unchanged when the record carries none. Use it as the parent of the record's processing."""
    return _PROPAGATOR.extract(_carrier(record_or_headers), context=context)


def span_context_of(record_or_headers: Any) -> SpanContext | None:
    """The span context in the record's ``traceparent``, or None (absent or malformed): for links."""
    carrier = _carrier(record_or_headers)
    if names.TRACEPARENT not in carrier:
        return None
    found = trace.get_current_span(_PROPAGATOR.extract(carrier, context=Context())).get_span_context()
    return found if found.is_valid else None


def trace_headers(context: Context | None = None) -> list[tuple[str, bytes]]:
    """``traceparent`` (and ``tracestate``) headers for the span current in ``context`` (default: the
    current context): for records an application writes with another client; empty without a span."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=context)
    return [(name, value.encode()) for name, value in carrier.items()]


@contextmanager
def process_span(tracer: Any, record: Any, *, group_id: str | None = None,
                 links: list[Link] | None = None) -> Iterator[Span]:
    """A current ``process {topic}`` span (CONSUMER kind) for one input record, a child of the context
    the record was produced in, with the messaging conventions' attributes (topic, partition, offset,
    consumer group). Records without a ``traceparent`` start a new trace. An exception inside is recorded
    by its type only (``txnproducer.otel.spans``)."""
    attributes: dict[str, Any] = {
        names.MESSAGING_SYSTEM: names.MESSAGING_SYSTEM_KAFKA,
        names.MESSAGING_OPERATION_NAME: names.OPERATION_PROCESS,
        names.MESSAGING_OPERATION_TYPE: names.OPERATION_PROCESS,
    }
    topic = getattr(record, "topic", None)
    if isinstance(topic, str):
        attributes[names.MESSAGING_DESTINATION_NAME] = topic
    partition = getattr(record, "partition", None)
    if isinstance(partition, int):
        attributes[names.MESSAGING_DESTINATION_PARTITION_ID] = str(partition)
    offset = getattr(record, "offset", None)
    if isinstance(offset, int):
        attributes[names.MESSAGING_KAFKA_OFFSET] = offset
    if group_id is not None:
        attributes[names.MESSAGING_CONSUMER_GROUP_NAME] = group_id
    name = names.process_span_name(topic if isinstance(topic, str) else "records")
    with current_span(tracer, name, context=extract_context(record), kind=SpanKind.CONSUMER,
                      attributes=attributes, links=links) as span:
        yield span
