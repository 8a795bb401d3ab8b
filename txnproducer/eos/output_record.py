"""OutputRecord: what a consume-transform-produce transform emits, and the shapes a transform may return.

Why a value object rather than ``send()`` arguments: a transform is user code that runs before
the processor decides the transaction; returning immutable records keeps it free of producer
calls (it cannot send outside the transaction, or after a revocation aborted it).

What a transform may return (:func:`outputs_of`): an iterable of OutputRecord (a list, a tuple, a
generator), one OutputRecord, or None - no output, the filter idiom. Bytes or a string are refused
(a value has no topic; iterating it would give ints or characters), and so is anything else that is
not OutputRecords: a :class:`~txnproducer.errors.TransformOutputError` naming what came back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from txnproducer.errors import TransformOutputError

__all__ = ["BatchTransform", "HeadersArg", "OutputRecord", "Transform", "apply_transform", "outputs_of"]

HeadersArg = Sequence[tuple[str, Any]] | Mapping[str, Any] | None


@attrs.frozen
class OutputRecord:
    """One record for the transform to emit; sent with ``TransactionalProducer.send``.

    ``value``/``key`` go through the producer's serializers (bytes and str work without one).
    ``partition=None`` lets the producer's partitioner choose.
    """

    topic: str
    value: Any
    key: Any = None
    partition: int | None = None
    headers: HeadersArg = None
    timestamp_ms: int | None = None


_VALUE_TYPES = (bytes, bytearray, memoryview, str)
_EXPECTED = ("return an iterable of OutputRecord(topic, value, key=None, partition=None, headers=None, "
             "timestamp_ms=None), one OutputRecord, or None for no output")


def outputs_of(result: Any, where: str) -> list[OutputRecord]:
    """What ``where`` (``"transform"`` / ``"transform_batch"``) returned, as a list of OutputRecord;
    TransformOutputError for anything else. A list is returned as it is: the processor checks each
    item as it sends it (a bad one aborts the transaction)."""
    if result is None:
        return []
    if type(result) is list:
        return result  # its items are checked as they are sent
    if isinstance(result, OutputRecord):
        return [result]
    if isinstance(result, _VALUE_TYPES):
        raise TransformOutputError(
            f"{where} returned {type(result).__name__} {result!r:.60}, not output records: a value needs "
            f"its topic - {_EXPECTED}")
    if not isinstance(result, Iterable):
        raise TransformOutputError(f"{where} returned {type(result).__name__} {result!r:.60}: {_EXPECTED}")
    outputs = list(result)
    for item in outputs:
        if not isinstance(item, OutputRecord):
            raise TransformOutputError(
                f"{where} returned an iterable holding {type(item).__name__} {item!r:.60}: {_EXPECTED}")
    return outputs


Transform = Callable[[Any], "Iterable[OutputRecord] | OutputRecord | None"]
BatchTransform = Callable[[list[Any]], "Iterable[OutputRecord] | OutputRecord | None"]


def apply_transform(polled: Mapping[Any, list[Any]], transform: Transform | None,
                    transform_batch: BatchTransform | None) -> list[Any]:
    """The outputs of a poll's records (partition -> records): ``transform_batch`` once over all of
    them, in per-partition order, or ``transform`` per record. The common shapes (a list, one
    OutputRecord, None) are taken as they are; the items of a list are checked as they are sent."""
    if transform_batch is not None:
        parts = list(polled.values())
        records = parts[0] if len(parts) == 1 else [r for part in parts for r in part]
        return outputs_of(transform_batch(records), "transform_batch")
    assert transform is not None
    outputs: list[Any] = []
    add, extend = outputs.append, outputs.extend
    for records in polled.values():
        for record in records:
            result = transform(record)
            if type(result) is list:
                extend(result)
            elif type(result) is OutputRecord:
                add(result)
            elif result is not None:
                extend(outputs_of(result, "transform"))
    return outputs
