"""The user's transform applied to one poll's records: the outputs, checked, and - when the processor is
traced - the context each output is sent in (:mod:`txnproducer.eos.tracing`).

Why apart from the loop: tracing changes how a transform is applied (each input in a span of its own),
and the loop should not have to know; untraced, this is the plain call, and OpenTelemetry is not imported.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from txnproducer.eos.output_record import OutputRecord
from txnproducer.otel.instrumentation import library_version, tracer_provider_for

__all__ = ["UNTRACED", "apply_transform", "processor_tracing"]

#: what an output is sent in when the processor is not traced
UNTRACED: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


def processor_tracing(tracer_provider: Any, group_id: str) -> Any:
    """The processor's tracing (``tracer_provider``, else :func:`txnproducer.otel.instrument`'s), or None."""
    provider = tracer_provider_for(tracer_provider)
    if provider is None:
        return None
    from txnproducer.eos.tracing import ProcessorTracing
    from txnproducer.otel import names

    return ProcessorTracing(provider.get_tracer(names.SCOPE, library_version()), group_id)


def apply_transform(records: list[Any], transform: Callable[[Any], Iterable[OutputRecord]] | None,
                    transform_batch: Callable[[list[Any]], Iterable[OutputRecord]] | None, tracing: Any,
                    producer: Any, consumed: int) -> tuple[list[OutputRecord], list[Any] | None]:
    """The outputs of ``records`` (TypeError for anything but OutputRecord) and, traced, for each the
    context manager to send it in; ``consumed``: the open transaction's input records so far."""
    contexts: list[Any] | None = None
    if tracing is not None:
        outputs, contexts = tracing.transform(producer, records, consumed, transform, transform_batch)
    elif transform_batch is not None:
        outputs = list(transform_batch(records))
    else:
        assert transform is not None
        outputs = [out for record in records for out in transform(record)]
    for out in outputs:
        if not isinstance(out, OutputRecord):
            raise TypeError(f"transform must yield OutputRecord objects, got {out!r}")
    return outputs, contexts
