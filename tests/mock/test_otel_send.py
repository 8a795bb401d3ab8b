"""A traced producer's records: the ``traceparent`` in their headers, read back by consumers, and the spans of
their sending (per batch by default, per record when asked), ended by the broker's answer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")

from kafka import KafkaConsumer
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from tests._support.otel import Telemetry
from txnproducer import TopicPartition, TransactionalConsumer, TransactionalProducer, errors
from txnproducer.otel import extract_context, names, span_context_of
from txnproducer.testing import MockCluster

TOPIC = "otel-send"


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1) as mock:
        mock.create_topic(TOPIC, partitions=1)
        yield mock


def _producer(cluster: MockCluster, tid: str, **kwargs: Any) -> TransactionalProducer:
    return TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=tid, **kwargs)


def _headers(cluster: MockCluster) -> list[dict[str, bytes]]:
    return [dict(r.headers) for r in cluster.partition_records(TOPIC, 0, read_committed=True)]


def _traceparent(context: trace.SpanContext) -> bytes:
    """What the SDK's own propagator writes for ``context`` (its flags: sampled, and random trace ids)."""
    return b"00-%032x-%016x-%02x" % (context.trace_id, context.span_id, context.trace_flags)


def test_records_carry_the_transactions_context_and_consumers_continue_it(cluster: MockCluster,
                                                                          telemetry: Telemetry) -> None:
    with _producer(cluster, "tx-headers", **telemetry.providers) as p:
        p.init_transactions()
        with p.transaction():
            p.send(TOPIC, b"plain")
            p.send(TOPIC, b"with headers", headers=[("app", b"1")])
            p.send(TOPIC, b"as a mapping", headers={"app": b"2"})
    txn = telemetry.one(names.SPAN_TRANSACTION).context
    expected = _traceparent(txn)
    headers = _headers(cluster)
    assert [h.get(names.TRACEPARENT) for h in headers] == [expected] * 3
    assert [h.get("app") for h in headers] == [None, b"1", b"2"]  # the application's headers are kept

    # our consumer
    consumer = TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers,
                                     auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(TOPIC, 0)])
        records: list[Any] = []
        deadline = time.monotonic() + 20
        while len(records) < 3 and time.monotonic() < deadline:
            records.extend(consumer.poll(timeout=0.5))
    finally:
        consumer.close()
    # kafka-python's
    kp = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, isolation_level="read_committed",
                       enable_auto_commit=False, auto_offset_reset="earliest", consumer_timeout_ms=10_000)
    try:
        kp.assign([TopicPartition(TOPIC, 0)])
        kp_records = [next(kp) for _ in range(3)]
    finally:
        kp.close()
    for record in [*records, *kp_records]:
        found = span_context_of(record)
        assert found is not None and (found.trace_id, found.span_id) == (txn.trace_id, txn.span_id)
        assert found.is_remote
        # a consumer's span continues the producer's trace
        tracer = telemetry.tracer_provider.get_tracer("consumer")
        with tracer.start_as_current_span("process", context=extract_context(record)) as span:
            assert span.get_span_context().trace_id == txn.trace_id
    assert len(records) == 3


def test_an_applications_span_current_at_send_is_the_records_parent(cluster: MockCluster,
                                                                     telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    with _producer(cluster, "tx-app-span", **telemetry.providers) as p:
        p.init_transactions()
        with p.transaction():
            with tracer.start_as_current_span("process input") as work:
                p.send(TOPIC, b"from the input's work")
            p.send(TOPIC, b"from the transaction")
    first, second = _headers(cluster)
    assert first[names.TRACEPARENT] == _traceparent(work.get_span_context())
    assert second[names.TRACEPARENT] == _traceparent(telemetry.one(names.SPAN_TRANSACTION).context)


def test_an_applications_own_traceparent_is_kept(cluster: MockCluster, telemetry: Telemetry) -> None:
    theirs = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with _producer(cluster, "tx-theirs", **telemetry.providers) as p:
        p.init_transactions()
        with p.transaction():
            p.send(TOPIC, b"v", headers=[(names.TRACEPARENT, theirs)])
    assert _headers(cluster) == [{names.TRACEPARENT: theirs}]


def test_per_record_spans_end_on_the_brokers_answer(cluster: MockCluster, telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    with _producer(cluster, "tx-records", record_spans=True, **telemetry.providers) as p:
        p.init_transactions()
        with p.transaction():
            futures = [p.send(TOPIC, b"secret-value-%d" % i, key=f"user-{i}") for i in range(3)]
            futures.append(p.send(TOPIC, None, key=b"bytes-key"))  # a tombstone with a bytes key
            with tracer.start_as_current_span("process input") as work:
                futures.append(p.send(TOPIC, b"child of the work"))
        offsets = [f.get(10).offset for f in futures]
    txn = telemetry.one(names.SPAN_TRANSACTION)
    sends = sorted(telemetry.spans(names.send_span_name(TOPIC)), key=lambda s: s.start_time or 0)
    assert len(sends) == 5
    assert [(s.attributes or {})[names.MESSAGING_KAFKA_OFFSET] for s in sends] == offsets
    assert [(s.attributes or {}).get(names.MESSAGING_KAFKA_MESSAGE_KEY) for s in sends] == [
        "user-0", "user-1", "user-2", None, None]  # a str key only; bytes are never decoded
    assert (sends[3].attributes or {})["messaging.kafka.message.tombstone"] is True
    for span in sends[:4]:
        assert span.parent is not None and span.parent.span_id == txn.context.span_id
        assert (span.attributes or {})[names.MESSAGING_DESTINATION_PARTITION_ID] == "0"
    # the record sent inside the application's span: its child, linked to the transaction
    assert sends[4].parent is not None and sends[4].parent.span_id == work.get_span_context().span_id
    assert [link.context.span_id for link in sends[4].links] == [txn.context.span_id]
    # each record's header names its own span
    assert [h[names.TRACEPARENT] for h in _headers(cluster)] == [_traceparent(s.context) for s in sends]
    assert (txn.attributes or {})[names.RECORD_COUNT] == 5


def test_a_send_that_fails_has_a_failed_span(cluster: MockCluster, telemetry: Telemetry) -> None:
    with _producer(cluster, "tx-bad-send", record_spans=True, **telemetry.providers) as p:
        p.init_transactions()
        with p.transaction():
            with pytest.raises(errors.InvalidRecordError):
                p.send(TOPIC, b"v", partition=7)
            p.send(TOPIC, b"ok")
    spans = sorted(telemetry.spans(names.send_span_name(TOPIC)), key=lambda s: s.start_time or 0)
    assert [s.status.status_code.name for s in spans] == ["ERROR", "UNSET"]
    assert (spans[0].attributes or {})[names.ERROR_TYPE] == "txnproducer.errors.InvalidRecordError"


def test_a_retried_batch_has_a_retry_event(cluster: MockCluster, telemetry: Telemetry) -> None:
    with _producer(cluster, "tx-batch-retry", retry_backoff_ms=10, **telemetry.providers) as p:
        p.init_transactions()
        cluster.inject_error("Produce", 19)  # NOT_ENOUGH_REPLICAS: retriable
        with p.transaction():
            p.send(TOPIC, b"v").get(10)
    (batch,) = telemetry.spans(names.send_span_name(TOPIC))
    assert [(e.name, dict(e.attributes or {})) for e in batch.events] == [
        (names.EVENT_BATCH_RETRY, {names.ERROR_TYPE: "NOT_ENOUGH_REPLICAS", names.ATTEMPT: 2})]
    assert (batch.attributes or {})[names.ATTEMPTS] == 2
    assert batch.status.is_unset


def test_a_sampled_out_transaction_still_propagates_its_decision(cluster: MockCluster) -> None:
    provider = TracerProvider(sampler=ALWAYS_OFF)
    try:
        with _producer(cluster, "tx-unsampled", tracer_provider=provider) as p:
            p.init_transactions()
            with p.transaction():
                p.send(TOPIC, b"v")
    finally:
        provider.shutdown()
    (headers,) = _headers(cluster)
    flags = int(headers[names.TRACEPARENT].rsplit(b"-", 1)[1], 16)
    assert not flags & 0x01  # not sampled: downstream does not record either
