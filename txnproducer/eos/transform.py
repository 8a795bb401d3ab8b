"""The user's transform applied to one poll, and its outputs sent - when the processor is traced, each
in the context of its input (:mod:`txnproducer.eos.tracing`).

Why apart from the loop: tracing changes how a transform is applied (each input in a span of its own),
and the loop should not have to know; untraced, this is the plain call of
:func:`~txnproducer.eos.output_record.apply_transform`, and OpenTelemetry is not imported.

Traced, a record transform runs once per input in the input's trace and a batch transform once per poll
(:mod:`~txnproducer.eos.tracing`); a column transform also runs once per poll, in the transaction's
context, without links to its inputs: a ``PartitionBatch`` has no per-record headers to read a trace
context from, and tracing it record by record would give up what the columns are for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from txnproducer.eos.output_record import (
    BatchTransform,
    ColumnTransform,
    OutputRecord,
    Transform,
    apply_transform,
    outputs_of,
    send_outputs,
)
from txnproducer.otel.instrumentation import library_version, tracer_provider_for

__all__ = ["processor_tracing", "send_poll_outputs", "transform_poll"]


def processor_tracing(tracer_provider: Any, group_id: str) -> Any:
    """The processor's tracing (``tracer_provider``, else :func:`txnproducer.otel.instrument`'s), or None."""
    provider = tracer_provider_for(tracer_provider)
    if provider is None:
        return None
    from txnproducer.eos.tracing import ProcessorTracing
    from txnproducer.otel import names

    return ProcessorTracing(provider.get_tracer(names.SCOPE, library_version()), group_id)


def transform_poll(polled: Any, transform: Transform | None, transform_batch: BatchTransform | None,
                   transform_columns: ColumnTransform | None, tracing: Any, producer: Any,
                   consumed: int) -> tuple[list[Any], list[Any] | None]:
    """The outputs of one poll (``polled``: ``poll_batch``'s list with ``transform_columns``, else
    ``poll_by_partition``'s mapping) and, traced, for each output the context manager to send it in;
    ``consumed``: the open transaction's input records so far."""
    if tracing is None or transform_columns is not None:
        return apply_transform(polled, transform, transform_batch, transform_columns), None
    records = [record for part in polled.values() for record in part]
    per_record = None if transform is None else _one_input(transform)
    per_poll = None if transform_batch is None else _all_inputs(transform_batch)
    outputs, contexts = tracing.transform(producer, records, consumed, per_record, per_poll)
    return outputs, contexts


def send_poll_outputs(send: Callable[..., Any], outputs: list[Any], contexts: list[Any] | None) -> int:
    """Send the outputs of one poll (:func:`~txnproducer.eos.output_record.send_outputs`), traced each in
    its context (:func:`transform_poll`); returns the records sent."""
    if contexts is None:
        return send_outputs(send, outputs)
    sent = 0
    for out, context in zip(outputs, contexts, strict=True):
        with context:
            sent += send_outputs(send, [out])
    return sent


def _one_input(transform: Transform) -> Any:
    def outputs(record: Any) -> list[Any]:
        result = transform(record)
        if type(result) is OutputRecord:
            return [result]
        return outputs_of(result, "transform")

    return outputs


def _all_inputs(transform_batch: BatchTransform) -> Any:
    def outputs(records: list[Any]) -> list[Any]:
        return outputs_of(transform_batch(records), "transform_batch")

    return outputs
