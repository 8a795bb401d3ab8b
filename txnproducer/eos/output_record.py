"""What a consume-transform-produce transform emits (:class:`OutputRecord`, :class:`OutputBatch`), the
shapes a transform may return, and how they are sent.

Why value objects rather than ``send()`` arguments: a transform is user code that runs before the
processor decides the transaction; returning immutable records keeps it free of producer calls (it
cannot send outside the transaction, or after a revocation aborted it).

What a transform may return (:func:`outputs_of`): an iterable of outputs (a list, a tuple, a
generator), one output, or None - no output, the filter idiom. An output is an OutputRecord, or (from
any transform, but made for ``transform_columns``) an OutputBatch: many records to one topic as
columns, without an object per record. Bytes or a string are refused (a value has no topic;
iterating it would give ints or characters), and so is anything else that is not an output: a
:class:`~txnproducer.errors.TransformOutputError` naming what came back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from txnproducer.errors import TransformOutputError

__all__ = [
    "BatchTransform",
    "ColumnTransform",
    "HeadersArg",
    "OutputBatch",
    "OutputRecord",
    "Transform",
    "apply_transform",
    "outputs_of",
    "send_outputs",
]

#: A record's headers: ``[(name, value), ...]`` or ``{name: value}``; values are bytes (or str:
#: UTF-8).
HeadersArg = Sequence[tuple[str, Any]] | Mapping[str, Any] | None


class OutputRecord(NamedTuple):
    """One record for the transform to emit; sent with ``TransactionalProducer.send``.

    ``value``/``key`` go through the producer's serializers (bytes and str work without one).
    ``partition=None`` lets the producer's partitioner choose. Immutable; ``_replace(value=...)``
    makes a changed copy.

    A ``NamedTuple`` rather than an attrs class: a transform makes one per record, and that costs
    0.2 us instead of 0.5 (``benchmarks/README.md``, "consume-transform-produce"). It is still not a
    plain tuple: a transform that returns ``(topic, value)`` tuples is told so
    (:class:`~txnproducer.errors.TransformOutputError`).
    """

    topic: str
    value: Any
    key: Any = None
    partition: int | None = None
    headers: HeadersArg = None
    timestamp_ms: int | None = None


class OutputBatch(NamedTuple):
    """Many records for one topic, as columns: ``values[i]`` (with ``keys[i]`` when keys are given:
    the same length) is one record, sent in order. ``partition=None`` lets the producer's
    partitioner choose for each. What a column transform returns to spare an object per record:
    ``OutputBatch("out", [v.upper() for v in batch.values])``. Headers and timestamps: use
    OutputRecords."""

    topic: str
    values: Sequence[Any]
    keys: Sequence[Any] | None = None
    partition: int | None = None


Output = OutputRecord | OutputBatch
#: ``transform=``: one input record in, its outputs out (an iterable of outputs, one output, or None).
Transform = Callable[[Any], "Iterable[Output] | Output | None"]
#: ``transform_batch=``: a poll's records in (per-partition order), their outputs out.
BatchTransform = Callable[[list[Any]], "Iterable[Output] | Output | None"]
#: ``transform_columns=``: one PartitionBatch of a poll in (columns), its outputs out; typically
#: OutputBatch values, so that no object is made per record.
ColumnTransform = Callable[[Any], "Iterable[Output] | Output | None"]

_OUTPUTS = (OutputRecord, OutputBatch)
_VALUE_TYPES = (bytes, bytearray, memoryview, str)
_EXPECTED = ("return an iterable of OutputRecord(topic, value, key=None, partition=None, headers=None, "
             "timestamp_ms=None) or OutputBatch(topic, values, keys=None, partition=None), one of them, "
             "or None for no output")


def outputs_of(result: Any, where: str) -> list[Any]:
    """What ``where`` (``"transform"``, ``"transform_batch"``, ``"transform_columns"``) returned, as
    a list of outputs; TransformOutputError for anything else. A list is returned as it is: each
    item is checked as it is sent (:func:`send_outputs`; a bad one aborts the transaction)."""
    if result is None:
        return []
    if type(result) is list:
        return result
    if isinstance(result, _OUTPUTS):
        return [result]
    if isinstance(result, _VALUE_TYPES):
        raise TransformOutputError(
            f"{where} returned {type(result).__name__} {result!r:.60}, not output records: a value needs "
            f"its topic - {_EXPECTED}")
    if not isinstance(result, Iterable):
        raise TransformOutputError(f"{where} returned {type(result).__name__} {result!r:.60}: {_EXPECTED}")
    outputs = list(result)
    for item in outputs:
        if not isinstance(item, _OUTPUTS):
            raise TransformOutputError(
                f"{where} returned an iterable holding {type(item).__name__} {item!r:.60}: {_EXPECTED}")
    return outputs


def apply_transform(polled: Any, transform: Transform | None, transform_batch: BatchTransform | None,
                    transform_columns: ColumnTransform | None = None) -> list[Any]:
    """The outputs of one poll: ``transform_columns`` per PartitionBatch (``polled`` is the list of
    ``poll_batch``), or ``transform_batch`` once over all records in per-partition order, or
    ``transform`` per record (``polled``: partition -> records, of ``poll_by_partition``). The common
    shapes (a list, one output, None) are taken as they are."""
    if transform_columns is not None:
        outputs: list[Any] = []
        for batch in polled:
            result = transform_columns(batch)
            if type(result) is OutputBatch:
                outputs.append(result)
            elif result is not None:
                outputs.extend(outputs_of(result, "transform_columns"))
        return outputs
    if transform_batch is not None:
        parts = list(polled.values())
        records = parts[0] if len(parts) == 1 else [r for part in parts for r in part]
        return outputs_of(transform_batch(records), "transform_batch")
    assert transform is not None
    outputs = []
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


def send_outputs(send: Callable[..., Any], outputs: list[Any]) -> int:
    """Send every output with ``send`` (``TransactionalProducer.send``); returns the records sent.
    Raises TransformOutputError at the first item that is not an output (an OutputBatch whose keys
    and values differ in length included), and what ``send`` raises."""
    count = 0
    for out in outputs:
        kind = type(out)
        if kind is OutputRecord or (kind is not OutputBatch and isinstance(out, OutputRecord)):
            topic, value, key, partition, headers, timestamp_ms = out
            if key is None and partition is None and headers is None and timestamp_ms is None:
                send(topic, value)  # the producer's compiled common case, fewest arguments
            else:
                send(topic, value, key, partition, timestamp_ms, headers)
            count += 1
        elif kind is OutputBatch or isinstance(out, OutputBatch):
            topic, values, keys, partition = out
            if keys is None:
                if partition is None:
                    for value in values:
                        send(topic, value)
                else:
                    for value in values:
                        send(topic, value, None, partition)
            else:
                if len(keys) != len(values):
                    raise TransformOutputError(
                        f"an OutputBatch for {topic!r} has {len(keys)} keys for {len(values)} values: give "
                        "one key per value, or keys=None")
                for key, value in zip(keys, values, strict=True):
                    send(topic, value, key, partition)
            count += len(values)
        else:
            raise TransformOutputError(
                f"the transform's output holds {type(out).__name__} {out!r:.80}: every item must be an "
                "OutputRecord(topic, value, key=None, partition=None, headers=None, timestamp_ms=None) or "
                "an OutputBatch(topic, values, keys=None, partition=None)")
    return count
