"""``instrument()``: one call that gives every producer created afterwards traces and metrics.

Why a process-wide switch beside the producer's own ``tracer_provider=`` / ``meter_provider=``: the
producers of a pipeline are often created by code the application does not write - a
:class:`~txnproducer.eos.TransactionalProcessor`, the PySpark sink's tasks and driver - and an
application instrumented with ``opentelemetry-instrument`` expects a library to follow the global
providers. ``instrument()`` with no providers does exactly that: each producer looks the global
providers up when it is created (``opentelemetry.trace.get_tracer_provider()``), so the application
may configure them before or after this call. The library never *sets* a global provider.

Nothing here imports OpenTelemetry; a producer created while nothing is instrumented and without
providers of its own never imports it either (tracing off costs nothing: docs/guide/observability.md).
"""

from __future__ import annotations

import importlib.metadata
import threading
from typing import Any

import attrs

__all__ = ["Instrumentation", "active", "instrument", "is_instrumented", "library_version",
           "meter_provider_for", "tracer_provider_for", "uninstrument"]


@attrs.frozen
class Instrumentation:
    """What :func:`instrument` asked for. ``None`` providers mean "the global one, when a producer is
    created"; ``tracing`` / ``metrics`` False leave that signal off."""

    tracer_provider: Any = None
    meter_provider: Any = None
    tracing: bool = True
    metrics: bool = True
    record_spans: bool = False


_lock = threading.Lock()
_active: Instrumentation | None = None


def instrument(tracer_provider: Any = None, meter_provider: Any = None, *, tracing: bool = True,
               metrics: bool = True, record_spans: bool = False) -> None:
    """Trace and measure every producer (sync and asyncio, those of TransactionalProcessor and of the
    PySpark sink in this process) created from now on, until :func:`uninstrument`.

    ``tracer_provider`` / ``meter_provider``: the providers to use; ``None`` - the global ones, looked up
    when each producer is created (``opentelemetry-instrument`` or your own setup installs them).
    ``tracing=False`` / ``metrics=False`` leave one signal off. ``record_spans=True`` gives every
    record a ``send {topic}`` span of its own that ends when the broker acknowledges it, instead of one
    span per batch (docs/guide/observability.md says what each costs). A producer's own arguments win over
    these. Calling it again replaces the settings; producers already created keep theirs.
    """
    global _active
    with _lock:
        _active = Instrumentation(tracer_provider, meter_provider, tracing, metrics, record_spans)


def uninstrument() -> None:
    """Producers created from now on are not traced or measured unless given providers of their own."""
    global _active
    with _lock:
        _active = None


def is_instrumented() -> bool:
    return _active is not None


def active() -> Instrumentation | None:
    """The settings of the last :func:`instrument` call still in force, or None."""
    return _active


def tracer_provider_for(explicit: Any) -> Any:
    """The tracer provider a component uses: ``explicit`` if given, else :func:`instrument`'s (the global
    one when it named none), else None (tracing off)."""
    if explicit is not None:
        return explicit
    settings = _active
    if settings is None or not settings.tracing:
        return None
    if settings.tracer_provider is not None:
        return settings.tracer_provider
    from opentelemetry import trace

    return trace.get_tracer_provider()


def meter_provider_for(explicit: Any) -> Any:
    """As :func:`tracer_provider_for`, for metrics."""
    if explicit is not None:
        return explicit
    settings = _active
    if settings is None or not settings.metrics:
        return None
    if settings.meter_provider is not None:
        return settings.meter_provider
    from opentelemetry import metrics

    return metrics.get_meter_provider()


def library_version() -> str:
    """txnproducer's version: the version of the instrumentation scope its tracers and meters name."""
    try:
        return importlib.metadata.version("txnproducer")
    except importlib.metadata.PackageNotFoundError:  # a source tree that is not installed
        return "0.0.0+unknown"
