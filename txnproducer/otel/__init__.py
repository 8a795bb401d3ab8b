"""OpenTelemetry traces and metrics for transactions, end to end through a pipeline (``[otel]`` extra).

Off unless the application asks: give a producer ``tracer_provider=`` / ``meter_provider=``
(``TransactionalProducer(..., tracer_provider=tp)``, the same for ``AsyncTransactionalProducer`` and
``TransactionalProcessor``), or call :func:`instrument` once to trace and measure every producer created
afterwards (with no arguments: the global providers the application, or ``opentelemetry-instrument``,
installed). The library never installs a global provider, and with tracing off it costs nothing on the
hot path (docs/guide/observability.md has the spans, attributes and metrics, and what they cost).

For consumers: :func:`extract_context` / :func:`span_context_of` / :func:`process_span` read the
``traceparent`` a traced producer writes into every record's headers. For code that drives a producer:
:func:`transaction_span` (the open transaction's span, to link inputs to) and :func:`set_abort_reason`.

What the room holds: the names (``names``), :func:`instrument` (``instrumentation``), header propagation
(``propagation``), and, private, the wiring of a producer (``_attach``), its transaction spans
(``_transactions``), its send spans (``_send``), its instruments (``_instruments``) and what they share
(``_common``). Only ``_attach`` is imported by the producer, and it imports OpenTelemetry only when
telemetry is on.

What it may import: ``txnproducer.errors``, ``txnproducer.config``, ``_internal.log``,
``_internal.metrics`` (the names it mirrors), ``_internal.protocol`` (error names),
``_internal.batching.batch`` (a record's batch, for its span) and ``_internal.txn.state`` - never the
producer or anything built on it (they import this room).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from txnproducer.otel.instrumentation import instrument, is_instrumented, uninstrument

if TYPE_CHECKING:  # pragma: no cover
    from txnproducer.otel.propagation import extract_context, process_span, span_context_of, trace_headers

__all__ = [
    "extract_context",
    "instrument",
    "is_instrumented",
    "process_span",
    "set_abort_reason",
    "span_context_of",
    "trace_headers",
    "transaction_span",
    "uninstrument",
]

_NEEDS_OTEL = {"extract_context", "process_span", "span_context_of", "trace_headers"}


def __getattr__(name: str) -> Any:
    """The helpers that need ``opentelemetry-api``, imported on first use (module docstring)."""
    if name not in _NEEDS_OTEL:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module("txnproducer.otel.propagation")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "txnproducer.otel needs opentelemetry-api: pip install 'txnproducer[otel]'") from exc
    return getattr(module, name)


def _telemetry_of(producer: Any) -> Any:
    """A producer's telemetry (``AsyncTransactionalProducer``: its core's), None when it has none."""
    telemetry = getattr(producer, "_telemetry", None)
    if telemetry is None:
        telemetry = getattr(getattr(producer, "_core", None), "_telemetry", None)
    return telemetry


def transaction_span(producer: Any) -> Any:
    """The span of ``producer``'s open transaction (to add links or attributes to), or None: not traced,
    or no transaction open."""
    telemetry = _telemetry_of(producer)
    return None if telemetry is None else telemetry.transactions.transaction_span()


def set_abort_reason(producer: Any, reason: str) -> None:
    """Say why the application is about to abort ``producer``'s open transaction: its span's
    ``txnproducer.abort_reason`` (an error that made the transaction abortable wins). No-op untraced."""
    telemetry = _telemetry_of(producer)
    if telemetry is not None:
        telemetry.transactions.set_abort_reason(reason)
