"""``txnproducer perf --otel ...``: what tracing and metrics cost, measured with the real SDK.

Why an SDK setup of our own here: the cost of telemetry is mostly the SDK's (creating, ending and queueing
spans; collecting instruments), so it must be in the measurement; exporting is not - it is the
exporter's, runs on the SDK's own thread and depends on the backend - so the spans and metrics go to
exporters that count and drop them. The providers are given to the benchmarked producer only (never
installed globally). Needs ``opentelemetry-sdk``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["OTEL_MODES", "PerfTelemetry"]

#: ``traces``: spans per transaction and per batch; ``record-spans``: a span per record too;
#: ``metrics``: the instruments, collected every second
OTEL_MODES = ("traces", "record-spans", "metrics")


class PerfTelemetry:
    """SDK providers for the modes asked for, with exporters that count and drop."""

    def __init__(self, modes: Sequence[str]) -> None:
        try:
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import (
                MetricExporter,
                MetricExportResult,
                PeriodicExportingMetricReader,
            )
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
        except ImportError as exc:
            raise SystemExit("txnproducer perf --otel needs the OpenTelemetry SDK: "
                             "pip install opentelemetry-sdk") from exc
        self.modes = tuple(modes)
        self.spans = 0
        self.metric_exports = 0
        outer = self

        class CountingSpans(SpanExporter):
            def export(self, spans: Sequence[Any]) -> Any:
                outer.spans += len(spans)
                return SpanExportResult.SUCCESS

        class CountingMetrics(MetricExporter):
            def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> Any:
                outer.metric_exports += 1
                return MetricExportResult.SUCCESS

            def force_flush(self, timeout_millis: float = 10_000) -> bool:
                return True

            def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
                return None

        self.settings: dict[str, Any] = {}
        self._tracer_provider: Any = None
        self._meter_provider: Any = None
        if "traces" in self.modes or "record-spans" in self.modes:
            self._tracer_provider = TracerProvider()
            processor = BatchSpanProcessor(CountingSpans(), max_queue_size=65536)
            self._tracer_provider.add_span_processor(processor)
            self.settings["tracer_provider"] = self._tracer_provider
            self.settings["record_spans"] = "record-spans" in self.modes
        if "metrics" in self.modes:
            reader = PeriodicExportingMetricReader(CountingMetrics(), export_interval_millis=1000)
            self._meter_provider = MeterProvider(metric_readers=[reader])
            self.settings["meter_provider"] = self._meter_provider

    def finish(self) -> dict[str, Any]:
        """Flush and stop the providers; what they exported (for ``--json``)."""
        if self._tracer_provider is not None:
            self._tracer_provider.force_flush()
            self._tracer_provider.shutdown()
        if self._meter_provider is not None:
            self._meter_provider.shutdown()
        return {"otel": list(self.modes), "otel_spans_exported": self.spans,
                "otel_metric_exports": self.metric_exports}
