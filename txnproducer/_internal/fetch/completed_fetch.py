"""One partition's records from one Fetch answer, waiting to be handed out (the Java ``CompletedFetch``).

Why decoded lazily: the answer arrives during a network poll, but what shape the records take -
record objects for ``poll()``, columns for ``poll_batch()`` - is known only when the application asks.
The records stay a view of the received frame until then, and are decoded once, whole (the compiled
decoder is fastest in one call), in the shape asked for first; a consumer that switches API in the
middle of a chunk gets the rest converted.

Handing out moves the partition's position: past the last record handed out, and once the chunk is
empty to the decoder's next offset, which is past control batches and aborted transactions at its end.
``next_fetch_offset`` is where the chunk continues from (the Java ``CompletedFetch.nextFetchOffset``): the
fetch offset at first, then the position each hand-out moved to. A chunk is used only while the
partition's position is still that offset (the fetcher checks it before every hand-out): a position moved
by anything else - a seek, a reset, a truncation found by KIP-320 validation - makes the rest of the chunk
stale, however much of it was handed out already.

A batch the decoder could not read (bad CRC, ...) ends the chunk: the records before it are handed out
first, then the error is raised - by every ``poll()`` until the application seeks - with the position
left at that batch.

Deserialization (``deserializers``, records only) happens here, record by record, before the position
moves past a record (the Java ``CompletedFetch.fetchRecords``): a key or value deserializer that raises
stops the hand-out at that record. The records before it are handed out and the position stays at the
record after the last of them; the next hand-out tries the failing record again and raises
:class:`~txnproducer.RecordDeserializationError` naming topic, partition and offset (the deserializer's
exception is its ``__cause__``). Nothing is skipped: seek past the record to go on without it.

Thread rule: the polling thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from kafka.structs import TopicPartition

from txnproducer.errors import CorruptRecordError, RecordDeserializationError

from .decoder import Decoded, columns_from_records, decode_partition
from .positions import PartitionState
from .records import ConsumerRecord, PartitionBatch

__all__ = ["CompletedFetch", "Deserializers"]


class Deserializers(NamedTuple):
    """The consumer's key and value deserializers (either may be None: the bytes are handed out)."""

    key: Callable[[bytes], Any] | None
    value: Callable[[bytes], Any] | None


class CompletedFetch:
    """See the module docstring."""

    __slots__ = (
        "_decoded",
        "_index",
        "_records",
        "aborted",
        "fetch_offset",
        "high_watermark",
        "next_fetch_offset",
        "tp",
    )

    def __init__(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        records: Any,
        aborted: list[tuple[int, int]] | None,
        high_watermark: int,
    ) -> None:
        self.tp = tp
        self.fetch_offset = fetch_offset  # the position the fetch was sent from
        self.next_fetch_offset = fetch_offset  # the position this chunk continues from
        self._records: Any = records
        self.aborted = [] if aborted is None else aborted  # read_committed: None from a broker means none
        self.high_watermark = high_watermark
        self._decoded: Decoded | None = None
        self._index = 0

    def _decode(self, columns: bool) -> Decoded:
        decoded = self._decoded
        if decoded is None:
            decoded = decode_partition(
                self._records,
                self.fetch_offset,
                self.aborted,
                self.tp.topic,
                self.tp.partition,
                columns=columns,
            )
            self._decoded = decoded
            self._records = None  # the frame may go
        return decoded

    def take(
        self,
        state: PartitionState,
        max_records: int,
        columns: bool,
        deserializers: Deserializers | None = None,
    ) -> list[ConsumerRecord] | PartitionBatch:
        """Up to ``max_records`` records, as objects or as columns, and move ``state``'s position.
        Raises :class:`CorruptRecordError` once the readable records are handed out, and
        :class:`RecordDeserializationError` when the next record cannot be deserialized (see the
        module docstring; ``deserializers`` apply to records, not to columns)."""
        decoded = self._decode(columns)
        records = decoded.records
        count = len(records)
        start = self._index
        stop = min(count, start + max_records)
        out: list[ConsumerRecord] | PartitionBatch
        if isinstance(records, PartitionBatch):
            out = records.slice(start, stop) if (start, stop) != (0, count) else records
            if not columns:
                out = out.records()
        else:
            out = records[start:stop] if (start, stop) != (0, count) else records
            if columns:
                out = columns_from_records(self.tp.topic, self.tp.partition, out)
        failed: RecordDeserializationError | None = None
        if deserializers is not None and isinstance(out, list) and stop > start:
            out, failed = self._deserialized(out, deserializers)
            stop = start + len(out)
        self._index = stop
        if stop > start:
            if isinstance(out, PartitionBatch):
                last_offset, last_epoch = int(out.offsets[-1]), int(out.leader_epochs[-1])
            else:
                last_offset, last_epoch = out[-1].offset, out[-1].leader_epoch
            state.advance(last_offset + 1, last_epoch)
        if failed is None and stop == count:
            # past the control batches and aborted data after the last record (and, before a batch
            # that cannot be read, up to that batch: where the error says the position stays)
            state.advance(max(decoded.next_offset, state.position or 0), decoded.last_epoch)
        position = state.position
        assert position is not None
        self.next_fetch_offset = position
        if failed is not None:
            if stop == start:
                raise failed
        elif stop == count and stop == start and decoded.error_offset >= 0:
            raise self.error(state)
        return out

    def _deserialized(
        self, records: list[ConsumerRecord], deserializers: Deserializers
    ) -> tuple[list[ConsumerRecord], RecordDeserializationError | None]:
        """``records`` with keys and values deserialized, up to the first that cannot be (and the error
        naming it)."""
        key_of, value_of = deserializers
        out: list[ConsumerRecord] = []
        for record in records:
            key, value = record.key, record.value
            origin = "key"
            try:
                if key_of is not None and key is not None:
                    key = key_of(key)
                origin = "value"
                if value_of is not None and value is not None:
                    value = value_of(value)
            except Exception as exc:
                tp = self.tp
                error = RecordDeserializationError(
                    f"the {origin} of the record at offset {record.offset} of {tp.topic}-{tp.partition} "
                    f"cannot be deserialized ({type(exc).__name__}: {exc}). The records before it were "
                    f"returned and the position stays before it: every poll() tries it again and raises "
                    f"this until you seek past it (seek(tp, {record.offset + 1}) skips it knowingly)",
                    topic=tp.topic,
                    partition=tp.partition,
                    offset=record.offset,
                    origin=origin,
                )
                error.__cause__ = exc
                return out, error
            out.append(record._replace(key=key, value=value) if (key_of or value_of) else record)
        return out, None

    def error(self, state: PartitionState) -> CorruptRecordError:
        decoded = self._decoded
        assert decoded is not None and decoded.error_offset >= 0
        tp = self.tp
        error = CorruptRecordError(
            f"the record batch of {tp.topic}-{tp.partition} at offset {decoded.error_offset} cannot be read: "
            f"{decoded.error_reason}. The records before it were returned; the position stays at "
            f"{state.position} and every poll() raises this until you seek: seek past the batch to skip "
            "its records knowingly, or stop the consumer",
            topic=tp.topic,
            partition=tp.partition,
            offset=decoded.error_offset,
        )
        state.error = error
        return error

    @property
    def exhausted(self) -> bool:
        decoded = self._decoded
        return decoded is not None and self._index >= len(decoded.records) and decoded.error_offset < 0
