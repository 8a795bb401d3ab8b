"""A current span that records an exception by its type only.

Why not the SDK's default (``start_as_current_span`` records the exception's message and stack trace as an
event): the code inside the spans this library opens is often the application's - a transform, the body of
a consumer's ``process_span`` - and its exception messages may quote the record being processed. No record
value may ever be an attribute (DESIGN, "Logging and metrics"), so the span gets ``error.type`` and an
ERROR status naming the exception's class, and the exception goes on unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode

from txnproducer.otel import names
from txnproducer.otel._common import error_type

__all__ = ["current_span"]


@contextmanager
def current_span(tracer: Any, name: str, **kwargs: Any) -> Iterator[Span]:
    """``tracer.start_as_current_span(name, **kwargs)``, recording an exception as ``error.type`` only."""
    with tracer.start_as_current_span(name, record_exception=False, set_status_on_exception=False,
                                      **kwargs) as span:
        try:
            yield span
        except BaseException as exc:
            kind = error_type(exc)
            span.set_attribute(names.ERROR_TYPE, kind)
            span.set_status(Status(StatusCode.ERROR, kind))
            raise
