"""What a consumer hands out: one :class:`ConsumerRecord` per record, or a partition's records as
columns (:class:`PartitionBatch`) that spare a Python object per record.

Why two shapes: building a tuple, a ``bytes`` for the key and one for the value costs more per
record than decoding it (``benchmarks/README.md``). An application that transforms whole batches
(upper-cases every value, hands a column to numpy or Arrow, writes the values out again) can take
the columns instead: offsets and timestamps as typed ``memoryview`` arrays, keys and values as one
buffer each with a start and a length per record (-1: null), and make a ``bytes`` only for the
records it needs one for.

Both shapes are built by the decoder (:mod:`.decoder`, compiled or pure Python) and are plain
values: safe to keep after the next ``poll()``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, overload

from txnproducer._internal.accel import DECODE

__all__ = ["NO_HEADERS", "BytesColumn", "ConsumerRecord", "Headers", "PartitionBatch"]

Headers = Sequence[tuple[str, "bytes | None"]]
#: The headers of a record without headers (shared, immutable).
NO_HEADERS: tuple[tuple[str, bytes | None], ...] = ()

CREATE_TIME = 0
LOG_APPEND_TIME = 1


class ConsumerRecord(NamedTuple):
    """One record: kafka-python's ``ConsumerRecord`` fields a consumer uses, in our order.

    ``timestamp_type`` is 0 (CreateTime) or 1 (LogAppendTime); ``leader_epoch`` is the partition
    leader epoch the record was written under (-1 when unknown), what ``send_offsets_to_transaction``
    and KIP-320 validation carry along with the offset.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    leader_epoch: int


def _split(buffer: Any, starts: Sequence[int], lengths: Sequence[int]) -> list[bytes | None]:
    """The reference of the compiled ``split``: each item as ``bytes``, None where the length is -1."""
    view = memoryview(buffer)
    return [
        None if length < 0 else bytes(view[start : start + length])
        for start, length in zip(starts, lengths, strict=True)
    ]


_SPLIT = getattr(DECODE, "split", None)


class BytesColumn(Sequence["bytes | None"]):
    """Keys or values of a partition's records: ``buffer[starts[i]:starts[i] + lengths[i]]``,
    ``None`` where ``lengths[i]`` is -1.

    ``column[i]`` makes a ``bytes``; :meth:`view` a ``memoryview`` of the buffer (no copy);
    ``buffer``, ``starts`` and ``lengths`` (typed ``memoryview`` arrays of int32) are there for
    vectorised code.
    """

    __slots__ = ("buffer", "lengths", "starts")

    def __init__(self, buffer: Any, starts: memoryview, lengths: memoryview) -> None:
        self.buffer = buffer
        self.starts = starts
        self.lengths = lengths

    def __len__(self) -> int:
        return len(self.lengths)

    @overload
    def __getitem__(self, index: int) -> bytes | None: ...
    @overload
    def __getitem__(self, index: slice) -> BytesColumn: ...

    def __getitem__(self, index: int | slice) -> bytes | BytesColumn | None:
        if isinstance(index, slice):
            return BytesColumn(self.buffer, self.starts[index], self.lengths[index])
        length = self.lengths[index]
        if length < 0:
            return None
        start = self.starts[index]
        return bytes(self.buffer[start : start + length])

    def view(self, index: int) -> memoryview | None:
        """The ``index``-th item as a view of the buffer (None for null): no copy."""
        length = self.lengths[index]
        if length < 0:
            return None
        start = self.starts[index]
        return memoryview(self.buffer)[start : start + length]

    def __iter__(self) -> Iterator[bytes | None]:
        return iter(self.to_list())

    def to_list(self) -> list[bytes | None]:
        """Every item as ``bytes`` (or None), in one call: what iterating the column gives. Compiled
        where the extension is built (0.04 us an item against 0.2 for the Python loop)."""
        if _SPLIT is not None and self.starts.contiguous and self.lengths.contiguous:
            items: list[bytes | None] = _SPLIT(self.buffer, self.starts, self.lengths)
            return items
        return _split(self.buffer, self.starts, self.lengths)


class PartitionBatch:
    """Consecutive records of one partition as columns (see the module docstring).

    ``offsets``, ``timestamps`` (int64), ``timestamp_types`` (int8) and ``leader_epochs`` (int32) are
    typed ``memoryview`` arrays; ``keys`` and ``values`` are :class:`BytesColumn`; ``headers`` is a
    list with each record's headers, or None when no record of the batch has any. ``len(batch)`` is
    the number of records; :meth:`records` turns them into :class:`ConsumerRecord` objects.
    """

    __slots__ = (
        "headers",
        "keys",
        "leader_epochs",
        "offsets",
        "partition",
        "timestamp_types",
        "timestamps",
        "topic",
        "values",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        offsets: memoryview,
        timestamps: memoryview,
        timestamp_types: memoryview,
        leader_epochs: memoryview,
        keys: BytesColumn,
        values: BytesColumn,
        headers: list[Headers] | None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offsets = offsets
        self.timestamps = timestamps
        self.timestamp_types = timestamp_types
        self.leader_epochs = leader_epochs
        self.keys = keys
        self.values = values
        self.headers = headers

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def next_offset(self) -> int:
        """The offset after the last record (what to commit once the batch is processed)."""
        return int(self.offsets[-1]) + 1 if len(self.offsets) else -1

    def slice(self, start: int, stop: int) -> PartitionBatch:
        """Records ``start`` to ``stop`` (views: nothing is copied)."""
        return PartitionBatch(
            self.topic,
            self.partition,
            self.offsets[start:stop],
            self.timestamps[start:stop],
            self.timestamp_types[start:stop],
            self.leader_epochs[start:stop],
            self.keys[start:stop],
            self.values[start:stop],
            None if self.headers is None else self.headers[start:stop],
        )

    def records(self) -> list[ConsumerRecord]:
        """The records as :class:`ConsumerRecord` objects."""
        headers = self.headers
        topic, partition = self.topic, self.partition
        return [
            ConsumerRecord(
                topic,
                partition,
                offset,
                ts,
                tt,
                key,
                value,
                NO_HEADERS if headers is None else headers[i],
                epoch,
            )
            for i, (offset, ts, tt, epoch, key, value) in enumerate(
                zip(
                    self.offsets,
                    self.timestamps,
                    self.timestamp_types,
                    self.leader_epochs,
                    self.keys,
                    self.values,
                    strict=True,
                )
            )
        ]

    def __repr__(self) -> str:
        first = int(self.offsets[0]) if len(self.offsets) else -1
        return (
            f"PartitionBatch(topic={self.topic!r}, partition={self.partition}, records={len(self)}, "
            f"first_offset={first})"
        )
