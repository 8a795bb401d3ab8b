"""The OpenTelemetry SDK's in-memory exporters for the telemetry tests, and a span tree to assert on.

Why providers made per test and handed to the producer (never installed globally): the tests run in
parallel and in any order, and the library must work with providers it is given - a global provider
set by one test would leak into every other test of its worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import txnproducer.otel

__all__ = ["Telemetry", "captured", "span_tree"]


@dataclass
class Telemetry:
    """A tracer provider and a meter provider whose output the test reads."""

    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    tracer_provider: TracerProvider = field(init=False)
    meter_provider: MeterProvider = field(init=False)

    def __post_init__(self) -> None:
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    @property
    def providers(self) -> dict[str, Any]:
        return {"tracer_provider": self.tracer_provider, "meter_provider": self.meter_provider}

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        spans = list(self.exporter.get_finished_spans())
        return spans if name is None else [s for s in spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.spans(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {span_tree(self.spans())}"
        return found[0]

    def children(self, parent: ReadableSpan, name: str | None = None) -> list[ReadableSpan]:
        assert parent.context is not None
        return [s for s in self.spans(name)
                if s.parent is not None and s.parent.span_id == parent.context.span_id]

    def metrics(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        """name -> [(attributes, value or histogram count)] of one collection."""
        out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data is not None else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points = metric.data.data_points
                    out[metric.name] = [(dict(p.attributes or {}), _value(p)) for p in points]
        return out


def _value(point: Any) -> Any:
    return point.value if hasattr(point, "value") else point.count  # a histogram: how many were recorded


@contextmanager
def captured() -> Iterator[Telemetry]:
    """What the ``telemetry`` fixture (tests/conftest.py) yields."""
    found = Telemetry()
    try:
        yield found
    finally:
        txnproducer.otel.uninstrument()  # a test that instrumented must not leave it on for the next
        found.tracer_provider.shutdown()
        found.meter_provider.shutdown()


def span_tree(spans: list[ReadableSpan], keys: tuple[str, ...] = ()) -> str:
    """The spans as an indented tree (children in start order), with the ``keys`` attributes of each."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in by_id else None
        children.setdefault(parent, []).append(s)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda x: x.start_time or 0):
            shown = {k: s.attributes[k] for k in keys if s.attributes and k in s.attributes}
            status = "" if s.status.is_unset else f" [{s.status.status_code.name}]"
            lines.append("  " * depth + s.name + status + (f" {shown}" if shown else ""))
            assert s.context is not None
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)
