"""Reading a record's trace context: every client's record shape, malformed and missing headers."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from txnproducer import ConsumerRecord
from txnproducer.otel import extract_context, names, process_span, span_context_of, trace_headers

PARENT = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class ConfluentMessage:
    """confluent-kafka's Message: headers() is a method."""

    def __init__(self, headers: list[tuple[str, bytes]] | None) -> None:
        self._headers = headers

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers


def _ours(headers: Any) -> ConsumerRecord:
    return ConsumerRecord("t", 3, 42, 0, 0, None, b"v", headers, -1)


@pytest.mark.parametrize("record", [
    _ours([("other", b"x"), (names.TRACEPARENT, PARENT)]),
    ConfluentMessage([(names.TRACEPARENT, PARENT)]),
    [(names.TRACEPARENT, PARENT)],
    {names.TRACEPARENT: PARENT},
    {names.TRACEPARENT: PARENT.decode()},  # a str value (what some clients hand back)
], ids=["txnproducer", "confluent-kafka", "headers", "mapping", "str-value"])
def test_every_shape_of_record_gives_its_context(record: Any) -> None:
    found = span_context_of(record)
    assert found is not None and found.is_remote
    assert (found.trace_id, found.span_id) == (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)
    assert trace.get_current_span(extract_context(record)).get_span_context() == found


@pytest.mark.parametrize("headers", [None, [], [(names.TRACEPARENT, b"not a traceparent")],
                                     [(names.TRACEPARENT, None)], [("only", "junk", "triple")]])
def test_no_or_a_malformed_context_is_none(headers: Any) -> None:
    assert span_context_of(_ours(headers)) is None
    assert not trace.get_current_span(extract_context(_ours(headers))).get_span_context().is_valid


def test_process_span_continues_the_records_trace_and_trace_headers_write_it() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("t")
    try:
        with process_span(tracer, _ours([(names.TRACEPARENT, PARENT)]), group_id="g") as span:
            context = span.get_span_context()
            assert context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
            written = dict(trace_headers())
            expected = b"00-0af7651916cd43dd8448eb211c80319c-%016x" % context.span_id
            assert written[names.TRACEPARENT].startswith(expected)
        attributes = dict(span.attributes or {})  # type: ignore[attr-defined]
        assert attributes[names.MESSAGING_DESTINATION_NAME] == "t"
        assert attributes[names.MESSAGING_DESTINATION_PARTITION_ID] == "3"
        assert attributes[names.MESSAGING_KAFKA_OFFSET] == 42
        assert attributes[names.MESSAGING_CONSUMER_GROUP_NAME] == "g"
        assert trace_headers() == []  # no span current: nothing to propagate
    finally:
        provider.shutdown()
