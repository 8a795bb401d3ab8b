"""TransactionalProcessor traced: an input record's context reaches its outputs' headers (through a
``process`` span that continues the input's trace), and each transaction's span links to the inputs it
consumed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")

from tests._support.otel import Telemetry
from txnproducer import TransactionalProducer
from txnproducer.eos import OutputRecord, TransactionalProcessor
from txnproducer.otel import names, span_context_of
from txnproducer.testing import MockCluster

IN, OUT = "otel-in", "otel-out"
VALUES = [b"alpha", b"beta", b"gamma"]
CONSUMER = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 100, "fetch_max_wait_ms": 50,
            "auto_offset_reset": "earliest"}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1) as mock:
        mock.create_topic(IN, partitions=1)
        mock.create_topic(OUT, partitions=1)
        yield mock


def _produce_inputs(cluster: MockCluster, telemetry: Telemetry) -> list[Any]:
    """The inputs, each written in a trace of its own (an upstream service handling three requests)."""
    tracer = telemetry.tracer_provider.get_tracer("upstream")
    with TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="upstream",
                               tracer_provider=telemetry.tracer_provider) as p:
        p.init_transactions()
        with p.transaction():
            for value in VALUES:
                with tracer.start_as_current_span(f"request {value.decode()}"):
                    p.send(IN, value, partition=0)
    inputs = cluster.partition_records(IN, 0, read_committed=True)
    assert len({span_context_of(r).trace_id for r in inputs}) == 3  # type: ignore[union-attr]
    return inputs


def _run(cluster: MockCluster, telemetry: Telemetry, **kwargs: Any) -> TransactionalProcessor:
    """A traced processor, run until it committed every input (or 40 s: the asserts then fail)."""
    done = threading.Event()

    def on_commit(offsets: dict[Any, Any]) -> None:
        if sum(int(meta.offset) for meta in offsets.values()) >= len(VALUES):
            done.set()

    consumer = {"group_id": "otel-group", "bootstrap_servers": cluster.bootstrap_servers, **CONSUMER}
    proc = TransactionalProcessor(
        IN, consumer_config=consumer,
        producer_config={"bootstrap_servers": cluster.bootstrap_servers}, transactional_id="otel-proc",
        on_commit=on_commit, tracer_provider=telemetry.tracer_provider, **kwargs)
    bound = threading.Timer(40, done.set)
    bound.start()
    try:
        proc.run(stop_event=done)
    finally:
        bound.cancel()
        proc.stop()
    return proc


def test_each_output_continues_its_inputs_trace(cluster: MockCluster, telemetry: Telemetry) -> None:
    inputs = _produce_inputs(cluster, telemetry)
    _run(cluster, telemetry, transform=lambda r: [OutputRecord(OUT, r.value.upper())])
    outputs = cluster.partition_records(OUT, 0, read_committed=True)
    assert [o.value for o in outputs] == [v.upper() for v in VALUES]

    processed = {int((s.attributes or {})[names.MESSAGING_KAFKA_OFFSET]): s
                 for s in telemetry.spans(f"process {IN}")}
    assert sorted(processed) == [r.offset for r in inputs]
    transactions = [s for s in telemetry.spans(names.SPAN_TRANSACTION)
                    if (s.attributes or {})[names.TRANSACTIONAL_ID] == "otel-proc"]
    committed = [t for t in transactions if (t.attributes or {})[names.OUTCOME] == names.OUTCOME_COMMITTED]
    for record, output in zip(inputs, outputs, strict=True):
        given, written = span_context_of(record), span_context_of(output)
        assert given is not None and written is not None
        process = processed[record.offset]
        # the input's context is the process span's parent, and reached the output's headers
        assert process.parent is not None and process.parent.span_id == given.span_id
        assert process.context.trace_id == given.trace_id == written.trace_id
        assert written.span_id == process.context.span_id
        a = dict(process.attributes or {})
        assert process.kind.name == "CONSUMER" and a[names.MESSAGING_CONSUMER_GROUP_NAME] == "otel-group"
        # the process span links to its transaction, and the transaction to the input
        linked_to = {link.context.span_id for link in process.links}
        (txn,) = [t for t in committed if t.context.span_id in linked_to]
        assert given.span_id in {link.context.span_id for link in txn.links}
    assert sum(int((t.attributes or {})[names.INPUT_RECORD_COUNT]) for t in committed) == len(VALUES)


def test_a_batch_transform_is_one_span_linked_to_each_input(cluster: MockCluster,
                                                           telemetry: Telemetry) -> None:
    inputs = _produce_inputs(cluster, telemetry)
    _run(cluster, telemetry, transform_batch=lambda rs: [OutputRecord(OUT, r.value.upper()) for r in rs])
    outputs = cluster.partition_records(OUT, 0, read_committed=True)
    batches = {s.context.span_id: s for s in telemetry.spans(f"process {IN}")}
    linked: set[int] = set()
    for output in outputs:
        written = span_context_of(output)
        assert written is not None
        batch = batches[written.span_id]  # the output was sent in its poll's span, a child of the transaction
        assert batch.parent is not None
        parent = [t for t in telemetry.spans(names.SPAN_TRANSACTION)
                  if t.context.span_id == batch.parent.span_id]
        assert parent and (parent[0].attributes or {})[names.TRANSACTIONAL_ID] == "otel-proc"
        linked |= {link.context.span_id for link in batch.links}
    assert linked == {span_context_of(r).span_id for r in inputs}  # type: ignore[union-attr]


def test_a_failing_transform_aborts_with_that_reason(cluster: MockCluster, telemetry: Telemetry) -> None:
    _produce_inputs(cluster, telemetry)

    def transform(record: Any) -> list[OutputRecord]:
        raise ValueError(f"cannot transform {record.value!r}")  # quotes the record: must stay out of spans

    with pytest.raises(ValueError, match="cannot transform"):
        _run(cluster, telemetry, transform=transform)
    (txn,) = [s for s in telemetry.spans(names.SPAN_TRANSACTION)
              if (s.attributes or {})[names.TRANSACTIONAL_ID] == "otel-proc"]
    assert (txn.attributes or {})[names.OUTCOME] == names.OUTCOME_ABORTED
    assert (txn.attributes or {})[names.ABORT_REASON] == "transform"
    failed = telemetry.spans(f"process {IN}")[0]
    assert failed.status.status_code.name == "ERROR"
    assert (failed.attributes or {})[names.ERROR_TYPE] == "ValueError"
    assert list(failed.events) == []  # no exception event: its message quotes the record
    assert "alpha" not in "\n".join(s.to_json() for s in telemetry.spans() if s.name != "request alpha")
