"""Transactions as OpenTelemetry traces and metrics, exported to the console, end to end to a consumer.

An order service handles a batch of orders in one transaction (records plus the consumed offsets), then
a batch it must give up (aborted); a downstream consumer continues each committed record's trace from
the ``traceparent`` the producer wrote into the record's headers. Spans print as they end (one line
each, the SDK's ``ConsoleSpanExporter`` with a compact formatter), the metrics once at the end
(``ConsoleMetricExporter``), and last the traces rendered as trees - what docs/guide/observability.md shows.

The providers are the application's and are handed to the producer: the library installs no global
provider (``txnproducer.otel.instrument()`` would trace every producer created afterwards instead).

Run it with ``python examples/otel_tracing.py`` (``pip install 'txnproducer[otel]' opentelemetry-sdk``).
It uses ``$KAFKA_BOOTSTRAP_SERVERS`` when set, otherwise an in-process ``MockCluster``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from txnproducer import TopicPartition, TransactionalConsumer, TransactionalProducer
from txnproducer.otel import names, process_span
from txnproducer.testing import MockCluster

TOPIC = f"orders-{uuid.uuid4().hex[:6]}"
TIMEOUT_S = 30.0
# what the trees show of each span, and under which short name
SHOWN = {names.OUTCOME: "outcome", names.RECORD_COUNT: "records", names.ABORT_REASON: "abort_reason",
         names.MESSAGING_BATCH_MESSAGE_COUNT: "batch", names.MESSAGING_DESTINATION_PARTITION_ID: "partition",
         names.MESSAGING_KAFKA_OFFSET: "offset", names.MESSAGING_CONSUMER_GROUP_NAME: "group",
         names.ATTEMPT: "attempt"}


@contextlib.contextmanager
def kafka() -> Iterator[str]:
    servers = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if servers:
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=servers)
        try:
            admin.create_topics([NewTopic(TOPIC, 2, 1)])
        finally:
            admin.close()
        yield servers
        return
    with MockCluster(num_brokers=1) as cluster:
        cluster.create_topic(TOPIC, partitions=2)
        yield cluster.bootstrap_servers


def one_line(span: ReadableSpan) -> str:
    """The console exporter's line for a span: name, duration, and a few attributes."""
    shown = {k: v for k, v in (span.attributes or {}).items() if k in SHOWN}
    took = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    return f"span ended: {span.name} ({took:.2f} ms){' ' + str(shown) if shown else ''}\n"


def render(spans: Sequence[ReadableSpan]) -> str:
    """Every trace as an indented tree: name, kind, duration, status, the SHOWN attributes, then the span's
    events (a retry) and links (to a span of another trace, named when it is among ``spans``)."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in by_id else None
        children.setdefault(parent, []).append(s)
    lines: list[str] = []

    def walk(parent: int | None, prefix: str) -> None:
        kids = sorted(children.get(parent, []), key=lambda s: s.start_time or 0)
        for i, s in enumerate(kids):
            last = i == len(kids) - 1
            branch = "" if parent is None else ("└─ " if last else "├─ ")
            took = ((s.end_time or 0) - (s.start_time or 0)) / 1e6
            shown = " ".join(f"{SHOWN[k]}={v}" for k, v in (s.attributes or {}).items() if k in SHOWN)
            status = "" if s.status.is_unset else f" {s.status.status_code.name}"
            error = (s.attributes or {}).get(names.ERROR_TYPE)
            lines.append(f"{prefix}{branch}{s.name} [{s.kind.name.lower()}, {took:.1f} ms]{status}"
                         + (f" error.type={error}" if error else "") + (f" {shown}" if shown else ""))
            inner = prefix + ("" if parent is None else ("   " if last else "│  "))
            note = inner + ("│  " if s.context is not None and children.get(s.context.span_id) else "   ")
            for event in s.events:
                detail = " ".join(f"{k}={v}" for k, v in (event.attributes or {}).items())
                lines.append(f"{note}· event {event.name}{' ' + detail if detail else ''}")
            for link in s.links:
                target = by_id.get(link.context.span_id)
                name = f"'{target.name}'" if target is not None else f"span {link.context.span_id:016x}"
                lines.append(f"{note}· link to {name} in trace {link.context.trace_id:032x}"[:len(note) + 70])
            assert s.context is not None
            walk(s.context.span_id, inner)

    walk(None, "")
    return "\n".join(lines)


def run_demo(out: TextIO = sys.stdout) -> bool:
    """Run the scenario; print spans, metrics and trees to ``out``; True when the traces are right."""
    resource = Resource.create({"service.name": "orders-service"})
    kept = InMemorySpanExporter()  # for the trees at the end
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out, formatter=one_line)))
    tracer_provider.add_span_processor(SimpleSpanProcessor(kept))
    reader = PeriodicExportingMetricReader(ConsoleMetricExporter(out=out, formatter=_metric_lines),
                                           export_interval_millis=60_000)
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    tracer = tracer_provider.get_tracer("orders-service")
    metrics_open = True
    try:
        with kafka() as servers:
            producer = TransactionalProducer(bootstrap_servers=servers,
                                             transactional_id=f"orders-{uuid.uuid4().hex[:6]}",
                                             tracer_provider=tracer_provider, meter_provider=meter_provider)
            try:
                producer.init_transactions(timeout=TIMEOUT_S)
                with tracer.start_as_current_span("handle order batch 1"), producer.transaction():
                    for i in range(5):
                        producer.send(TOPIC, value=b'{"order": %d}' % i, key=b"customer-%d" % (i % 2))
                    producer.send_offsets_to_transaction({TopicPartition("incoming-orders", 0): 5},
                                                         "orders-service")
                with tracer.start_as_current_span("handle order batch 2"):
                    producer.begin_transaction()
                    producer.send(TOPIC, value=b'{"order": "invalid"}', key=b"customer-0")
                    producer.abort_transaction(timeout=TIMEOUT_S)  # the application gives up on this batch
                meter_provider.shutdown()  # exports the metrics once, while the producer still reports them
                metrics_open = False
            finally:
                producer.close(TIMEOUT_S)
            consumed = consume(servers, tracer)
    finally:
        tracer_provider.shutdown()
        if metrics_open:
            meter_provider.shutdown()
    spans = kept.get_finished_spans()
    out.write("\nThe traces:\n" + render(spans) + "\n")
    transaction_trace = {s.context.trace_id for s in spans if s.name == names.SPAN_TRANSACTION}
    processed = [s for s in spans if s.name == names.process_span_name(TOPIC)]
    ok = (consumed == 5 and len(processed) == 5
          and all(s.context.trace_id in transaction_trace for s in processed))
    out.write(f"\n{consumed} committed records consumed, each continuing its producer's trace: {ok}\n")
    return ok


def consume(servers: str, tracer: Any) -> int:
    """A downstream consumer: each record is processed in a span that continues the record's trace."""
    consumer = TransactionalConsumer(bootstrap_servers=servers, auto_offset_reset="earliest")
    seen = 0
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(2)])
        deadline = time.monotonic() + TIMEOUT_S
        while seen < 5 and time.monotonic() < deadline:
            for record in consumer.poll(timeout=0.5):
                with process_span(tracer, record, group_id="billing"):
                    seen += 1  # the work on the record goes here
    finally:
        consumer.close()
    return seen


def _metric_lines(data: Any) -> str:
    wanted = (names.METRIC_TRANSACTIONS, names.METRIC_PREFIX + "txn_commit_time_ns_total",
              names.METRIC_PREFIX + "records_sent", names.METRIC_OPERATION_DURATION)
    lines = []
    for resource_metrics in data.resource_metrics:
        for scope in resource_metrics.scope_metrics:
            for metric in scope.metrics:
                if metric.name not in wanted:
                    continue
                for point in metric.data.data_points:
                    attrs = {k: v for k, v in (point.attributes or {}).items()
                             if k in (names.OUTCOME, names.OPERATION)}
                    value = (point.value if hasattr(point, "value")
                             else f"count={point.count} sum={point.sum:.4f}")
                    lines.append(f"metric: {metric.name} {attrs or ''} {value}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(0 if run_demo() else 1)
