"""The sink's spans: a task attempt's on its executor, a batch's commit on the driver, linked by batch id.

Spark runs the sink's halves in different processes (Python workers next to each executor and next to
the driver), and nothing of OpenTelemetry's context crosses between them. What ties them together:

* each task attempt runs in a ``txnkafka task`` span (its producer's ``transaction`` span is a child)
  whose W3C ``traceparent`` travels to the driver inside the attempt's commit message;
* the driver's ``txnkafka commit`` span (decision, completions, fenced orphans; ``txnkafka recover`` when
  it finishes what a dead driver decided) links to every task span of the batch;
* both carry ``txnproducer.spark.batch_id`` and ``txnproducer.spark.query_id``, so a backend query finds
  a batch's spans even where a link is missing (an attempt that died before reporting).

Where the providers come from, per Python worker process: the sink option ``otel.providers``
(``"package.module:function"``, called once per process, returning a TracerProvider, or a
``(tracer_provider, meter_provider)`` pair, either may be None) - the way to trace executors, whose
processes the application does not start - or else :func:`txnproducer.otel.instrument` called in that
process. Neither: no span is made and OpenTelemetry is not imported.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import ConfigError
from ...otel import instrumentation, names

__all__ = ["SinkTelemetry", "check_providers_option", "sink_telemetry"]

_lock = threading.Lock()


def check_providers_option(spec: str) -> str:
    """``otel.providers`` checked on the driver: ``module:function`` naming a callable that imports."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ConfigError(f"txnkafka option otel.providers must be 'package.module:function', got {spec!r}")
    try:
        target = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"txnkafka option otel.providers: cannot import {spec!r} ({exc})") from None
    if not callable(target):
        raise ConfigError(f"txnkafka option otel.providers: {spec!r} is not callable")
    return spec


@functools.lru_cache(maxsize=8)
def _providers_from(spec: str) -> tuple[Any, Any]:
    """The providers ``spec``'s function returns, once per process (every task and commit reuses them)."""
    module, _, attr = spec.partition(":")
    made = getattr(importlib.import_module(module), attr)()
    if isinstance(made, tuple):
        tracer_provider, meter_provider = made
        return tracer_provider, meter_provider
    return made, None


class SinkTelemetry:
    """The sink's tracer, and the providers its producers get (module docstring)."""

    def __init__(self, tracer: Any, producer_kwargs: dict[str, Any]) -> None:
        self.tracer = tracer
        self.producer_kwargs = producer_kwargs

    # -- a task attempt (executor) -------------------------------------------------------------------

    @contextlib.contextmanager
    def task(self, who: Any, prefix: str) -> Iterator[Any]:
        """The attempt's current span; yields it (its ``traceparent`` goes into the commit message)."""
        if self.tracer is None:
            yield None
            return
        from opentelemetry.trace import SpanKind

        from ...otel.spans import current_span

        attributes = {**_batch_attributes(who.batch, who.query, prefix),
                      names.SPARK_PARTITION_ID: int(who.partition), names.SPARK_ATTEMPT: int(who.attempt)}
        with current_span(self.tracer, names.SPAN_SPARK_TASK, kind=SpanKind.INTERNAL,
                          attributes=attributes) as span:
            yield span

    @staticmethod
    def traceparent(span: Any) -> str | None:
        """``span``'s W3C traceparent (what the commit message carries to the driver), None without one."""
        context = None if span is None else span.get_span_context()
        if context is None or not context.is_valid:
            return None
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

    # -- a batch's decision (driver) -------------------------------------------------------------------

    @contextlib.contextmanager
    def batch(self, name: str, batch: int, query: str, prefix: str, decision: str,
              messages: Sequence[Any] = ()) -> Iterator[Any]:
        """The decision's current span, linked to the task spans of ``messages`` (commit messages)."""
        if self.tracer is None:
            yield None
            return
        from opentelemetry.trace import Link, SpanKind

        from txnproducer.otel.propagation import span_context_of
        from txnproducer.otel.spans import current_span

        links = []
        for message in messages:
            context = getattr(message, "trace_context", None)
            found = span_context_of([(names.TRACEPARENT, context)]) if context else None
            if found is not None:
                links.append(Link(found, {names.SPARK_PARTITION_ID: int(message.partition_id),
                                          names.SPARK_ATTEMPT: int(message.attempt),
                                          names.SPARK_SUPERSEDED: bool(message.superseded)}))
        attributes = {**_batch_attributes(batch, query, prefix), names.SPARK_DECISION: decision}
        with current_span(self.tracer, name, kind=SpanKind.INTERNAL, attributes=attributes,
                          links=links) as span:
            yield span

    @contextlib.contextmanager
    def fence(self, transactional_ids: Sequence[str]) -> Iterator[None]:
        """Fencing the orphans of a decision: a child span counting them (each fence is a producer's
        ``init_transactions`` span under it)."""
        if self.tracer is None or not transactional_ids:
            yield None
            return
        from txnproducer.otel.spans import current_span

        with current_span(self.tracer, names.SPAN_SPARK_FENCE, attributes={
                names.SPARK_FENCED_COUNT: len(transactional_ids)}):
            yield None


def _batch_attributes(batch: int, query: str, prefix: str) -> dict[str, Any]:
    return {names.MESSAGING_SYSTEM: names.MESSAGING_SYSTEM_KAFKA, names.SPARK_BATCH_ID: int(batch),
            names.SPARK_QUERY_ID: str(query), names.SPARK_PREFIX: str(prefix)}


def sink_telemetry(providers_option: str | None) -> SinkTelemetry:
    """This process's telemetry for the sink (module docstring): off unless asked for."""
    kwargs: dict[str, Any] = {}
    if providers_option is not None:
        with _lock:
            tracer_provider, meter_provider = _providers_from(providers_option)
        kwargs = {"tracer_provider": tracer_provider, "meter_provider": meter_provider}
    else:
        tracer_provider = instrumentation.tracer_provider_for(None)
    if tracer_provider is None:
        return SinkTelemetry(None, kwargs)
    return SinkTelemetry(tracer_provider.get_tracer(names.SCOPE, instrumentation.library_version()), kwargs)
