"""Magic-v2 record batch decoding with the Java consumer's read_committed filtering.

Why our own (and not kafka-python's ``MemoryRecords``): kafka-python builds a batch object, a
record object and a ``ConsumerRecord`` per record, through several Python layers - most of the
6.8 us of CPU per record its consumer spends (issue 28). This module is the reference decoder: the
compiled one (``_internal/accel/_decode.c``) does the same work in C and must give the same result
for every input; ``tests/unit/test_record_decoding.py`` compares them batch for batch (random and
edge batches, every codec, control batches, aborted transactions of several producers, corrupt
data). :func:`decode_partition` runs whichever is active (``_internal/accel``).

What one call does, for one partition of one Fetch answer (the Java ``CompletedFetch``):

- walks the complete batches (a batch cut off at the end of the answer - ``max_bytes`` - is left
  for the next fetch, as every client does);
- checks each batch's CRC-32C and framing before reading it: a bad batch stops the walk with an
  error naming its offset; the records before it are returned, nothing after it is read;
- read_committed (``aborted`` is a list, possibly empty): the aborted transactions, ordered by first
  offset, enter the set of aborted producers once a batch reaches their first offset; a
  transactional batch of a producer in the set is dropped; the producer leaves the set at its
  ABORT marker. Control batches are never returned. This is ``CompletedFetch.nextFetchedRecord``;
- records below the fetch offset (the first batch may start before it) are skipped;
- the next fetch offset moves past every batch walked, dropped or not (control batches and aborted
  transactions at the end of the answer included), so a consumer never fetches them again.

Decompression is kafka-python's (``kafka.codec``; the codecs' packages must be installed: gzip
always, snappy ``python-snappy``, lz4 ``lz4``, zstd ``zstandard``).
"""

from __future__ import annotations

import struct
from array import array
from collections import deque
from collections.abc import Sequence
from typing import Any, NamedTuple

import kafka.codec as codecs
from kafka.record.util import calc_crc32c

from txnproducer._internal.accel import DECODE as _DECODE

from .records import NO_HEADERS, BytesColumn, ConsumerRecord, Headers, PartitionBatch

__all__ = ["Decoded", "columns_from_records", "decode_partition", "decode_pure", "decompress"]

_HEADER = struct.Struct(">qiibIhiqqqhii")
_HEADER_SIZE = 61
_CRC_FROM = 21  # the CRC covers attributes..end
_CODEC_MASK = 0x07
_LOG_APPEND_TIME = 0x08
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_ABORT = 0
_CODECS = {
    1: ("gzip", "gzip_decode", ""),
    2: ("snappy", "snappy_decode", "python-snappy"),
    3: ("lz4", "lz4_decode", "lz4"),
    4: ("zstd", "zstd_decode", "zstandard"),
}
_new_record = tuple.__new__


class _Corrupt(Exception):
    """A batch cannot be read: stops the walk (reported, never skipped)."""


def decompress(codec: int, data: bytes) -> bytes:
    """The records of a batch compressed with ``codec`` (1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
    entry = _CODECS.get(codec)
    if entry is None:
        raise ValueError(f"unknown compression codec {codec}")
    name, function, package = entry
    decode = getattr(codecs, function, None)
    available = getattr(codecs, f"has_{name}", lambda: False)()
    if decode is None or not available:
        raise ValueError(
            f"the batch is compressed with {name}, whose codec is not installed "
            f"(pip install {package}); nothing of it was read"
        )
    return bytes(decode(data))


def _varint(buf: Any, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka's signed varint/varlong) at ``pos``."""
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    value = b & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > 63:
            raise _Corrupt("a varint is longer than 10 bytes")


class _Columns:
    """Column builders (the ``columns=True`` output)."""

    def __init__(self) -> None:
        self.offsets = array("q")
        self.timestamps = array("q")
        self.types = array("b")
        self.epochs = array("i")
        self.keys = bytearray()
        self.key_starts = array("i")
        self.key_lengths = array("i")
        self.values = bytearray()
        self.value_starts = array("i")
        self.value_lengths = array("i")
        self.headers: list[Headers] | None = None

    def add(
        self,
        offset: int,
        timestamp: int,
        ttype: int,
        epoch: int,
        body: Any,
        key_at: int,
        key_len: int,
        value_at: int,
        value_len: int,
        headers: Headers,
    ) -> None:
        self.offsets.append(offset)
        self.timestamps.append(timestamp)
        self.types.append(ttype)
        self.epochs.append(epoch)
        for buf, starts, lengths, at, n in (
            (self.keys, self.key_starts, self.key_lengths, key_at, key_len),
            (self.values, self.value_starts, self.value_lengths, value_at, value_len),
        ):
            starts.append(len(buf))
            lengths.append(n)
            if n > 0:
                buf += body[at : at + n]
        if headers:
            if self.headers is None:
                self.headers = [NO_HEADERS] * (len(self.offsets) - 1)
            self.headers.append(headers)
        elif self.headers is not None:
            self.headers.append(NO_HEADERS)

    def raw(self) -> tuple[Any, ...]:
        return (
            self.offsets,
            self.timestamps,
            self.types,
            self.epochs,
            self.keys,
            self.key_starts,
            self.key_lengths,
            self.values,
            self.value_starts,
            self.value_lengths,
            self.headers,
        )


def _records(
    body: Any,
    count: int,
    base_offset: int,
    first_ts: int,
    max_ts: int,
    log_append: bool,
    epoch: int,
    fetch_offset: int,
    topic: str,
    partition: int,
    out: Any,
    columns: bool,
) -> None:
    """Decode ``count`` records of ``body`` (a batch's records, uncompressed) into ``out``."""
    pos = 0
    end = len(body)
    ttype = 1 if log_append else 0
    for _ in range(count):
        length, pos = _varint(body, pos)
        rec_end = pos + length
        if length < 6 or rec_end > end:
            raise _Corrupt(f"a record's length {length} does not fit its batch")
        pos += 1  # attributes (unused)
        ts_delta, pos = _varint(body, pos)
        off_delta, pos = _varint(body, pos)
        key_len, pos = _varint(body, pos)
        key_at = pos
        if key_len > 0:
            pos += key_len
        value_len, pos = _varint(body, pos)
        value_at = pos
        if value_len > 0:
            pos += value_len
        n_headers, pos = _varint(body, pos)
        headers: Headers = NO_HEADERS
        if n_headers:
            if n_headers < 0 or n_headers > rec_end - pos:
                raise _Corrupt(f"a record declares {n_headers} headers")
            items = []
            for _ in range(n_headers):
                hk_len, pos = _varint(body, pos)
                if hk_len < 0 or pos + hk_len > rec_end:
                    raise _Corrupt("a header key does not fit its record")
                try:
                    name = str(body[pos : pos + hk_len], "utf-8")
                except UnicodeDecodeError:
                    raise _Corrupt("a header key is not UTF-8") from None
                pos += hk_len
                hv_len, pos = _varint(body, pos)
                hv = None
                if hv_len >= 0:
                    hv = bytes(body[pos : pos + hv_len])
                    pos += hv_len
                items.append((name, hv))
            headers = items
        if pos != rec_end or key_len < -1 or value_len < -1:
            raise _Corrupt("a record's fields do not add up to its length")
        offset = base_offset + off_delta
        if offset < fetch_offset:
            continue
        timestamp = max_ts if log_append else first_ts + ts_delta
        if columns:
            out.add(offset, timestamp, ttype, epoch, body, key_at, key_len, value_at, value_len, headers)
        else:
            out.append(
                _new_record(
                    ConsumerRecord,
                    (
                        topic,
                        partition,
                        offset,
                        timestamp,
                        ttype,
                        None if key_len < 0 else bytes(body[key_at : key_at + key_len]),
                        None if value_len < 0 else bytes(body[value_at : value_at + value_len]),
                        headers,
                        epoch,
                    ),
                )
            )
    if pos != end:
        raise _Corrupt(f"{end - pos} bytes after the last of its {count} records")


def _is_abort_marker(body: Any) -> bool:
    """Whether a control batch's first record is an ABORT marker (key: int16 version, int16 type)."""
    _length, pos = _varint(body, 0)
    pos += 1
    _ts, pos = _varint(body, pos)
    _off, pos = _varint(body, pos)
    key_len, pos = _varint(body, pos)
    if key_len < 4:
        raise _Corrupt("a control record without its type")
    (kind,) = struct.unpack_from(">h", body, pos + 2)
    return bool(kind == _ABORT)


def decode_pure(
    data: Any,
    fetch_offset: int,
    aborted: Sequence[tuple[int, int]] | None,
    topic: str,
    partition: int,
    columns: bool,
) -> tuple[Any, int, int, int, str | None]:
    """The reference implementation: ``(records or raw columns, next offset, last epoch, error
    offset, error reason)`` (error offset -1 and reason None when every complete batch was read)."""
    view = memoryview(data).cast("B")
    end = view.nbytes
    pos = 0
    next_offset = fetch_offset
    last_epoch = -1
    out: Any = _Columns() if columns else []
    queue = deque(sorted(aborted, key=lambda a: a[1])) if aborted else None
    aborted_pids: set[int] = set()
    read_committed = aborted is not None
    while end - pos >= 12:
        base_offset, length = struct.unpack_from(">qi", view, pos)
        batch_end = pos + 12 + length
        if batch_end > end:
            break  # cut off by the fetch's size limit: the next fetch reads it whole
        try:
            if length < _HEADER_SIZE - 12:
                raise _Corrupt(f"a batch length of {length} bytes is shorter than its header")
            (_, _, epoch, magic, crc, attributes, last_delta, first_ts, max_ts, pid, _pe, _seq, count) = (
                _HEADER.unpack_from(view, pos)
            )
            if magic != 2:
                raise _Corrupt(f"magic {magic} (only magic 2 record batches are read)")
            if calc_crc32c(view[pos + _CRC_FROM : batch_end]) != crc:
                raise _Corrupt("its CRC-32C does not match its contents")
            last_offset = base_offset + last_delta
            codec = attributes & _CODEC_MASK
            body: Any = view[pos + _HEADER_SIZE : batch_end]
            if codec:
                try:
                    body = decompress(codec, bytes(body))
                except Exception as exc:
                    raise _Corrupt(f"it could not be decompressed: {exc}") from None
            control = attributes & _CONTROL
            if read_committed and pid >= 0:
                while queue and queue[0][1] <= last_offset:
                    aborted_pids.add(queue.popleft()[0])
                if control:
                    if count and _is_abort_marker(body):
                        aborted_pids.discard(pid)
                elif attributes & _TRANSACTIONAL and pid in aborted_pids:
                    next_offset = max(next_offset, last_offset + 1)
                    last_epoch = epoch
                    pos = batch_end
                    continue
            if not control:
                _records(
                    body,
                    count,
                    base_offset,
                    first_ts,
                    max_ts,
                    bool(attributes & _LOG_APPEND_TIME),
                    epoch,
                    fetch_offset,
                    topic,
                    partition,
                    out,
                    columns,
                )
        except (_Corrupt, IndexError, struct.error, ValueError) as exc:
            reason = str(exc) if isinstance(exc, _Corrupt) else f"its records cannot be read ({exc})"
            return (out.raw() if columns else out), next_offset, last_epoch, base_offset, reason
        next_offset = max(next_offset, last_offset + 1)
        last_epoch = epoch
        pos = batch_end
    return (out.raw() if columns else out), next_offset, last_epoch, -1, None


class Decoded(NamedTuple):
    """What one partition of one Fetch answer gave."""

    records: list[ConsumerRecord] | PartitionBatch
    next_offset: int  # where the next fetch starts once every record is handed out
    last_epoch: int  # leader epoch of the last batch walked (-1: none)
    error_offset: int  # base offset of a batch that could not be read, -1: none
    error_reason: str | None


def _typed(buf: Any, fmt: str) -> memoryview:
    view = memoryview(buf)
    return view if view.format == fmt else view.cast("B").cast(fmt)  # type: ignore[call-overload]


def _batch(topic: str, partition: int, raw: tuple[Any, ...]) -> PartitionBatch:
    (
        offsets,
        timestamps,
        types,
        epochs,
        keys,
        key_starts,
        key_lengths,
        values,
        value_starts,
        value_lengths,
        headers,
    ) = raw
    return PartitionBatch(
        topic,
        partition,
        _typed(offsets, "q"),
        _typed(timestamps, "q"),
        _typed(types, "b"),
        _typed(epochs, "i"),
        BytesColumn(keys, _typed(key_starts, "i"), _typed(key_lengths, "i")),
        BytesColumn(values, _typed(value_starts, "i"), _typed(value_lengths, "i")),
        headers,
    )


def decode_partition(
    data: Any,
    fetch_offset: int,
    aborted: Sequence[tuple[int, int]] | None,
    topic: str,
    partition: int,
    *,
    columns: bool = False,
    compiled: bool | None = None,
) -> Decoded:
    """Decode one partition's records (see the module docstring) with the active decoder.

    ``aborted``: the answer's aborted transactions as ``(producer id, first offset)`` (read_committed);
    None reads every record (read_uncommitted, kept for tests and tools). ``columns``: a
    :class:`PartitionBatch` instead of a list of records. ``compiled``: force one implementation
    (tests); None takes the active one.
    """
    use_c = _DECODE is not None if compiled is None else compiled
    if use_c:
        if _DECODE is None:
            raise RuntimeError("the compiled decoder is not built")
        raw = _DECODE.decode(data, fetch_offset, aborted, topic, partition, columns)
    else:
        raw = decode_pure(data, fetch_offset, aborted, topic, partition, columns)
    items, next_offset, last_epoch, error_offset, reason = raw
    records = _batch(topic, partition, items) if columns else items
    return Decoded(records, next_offset, last_epoch, error_offset, reason)


def columns_from_records(topic: str, partition: int, records: Sequence[ConsumerRecord]) -> PartitionBatch:
    """Records already made into objects, as columns (a consumer that switches from ``poll`` to
    ``poll_batch`` in the middle of a fetched chunk)."""
    out = _Columns()
    for r in records:
        key_len = -1 if r.key is None else len(r.key)
        value_len = -1 if r.value is None else len(r.value)
        body = (r.key or b"") + (r.value or b"")
        out.add(
            r.offset,
            r.timestamp,
            r.timestamp_type,
            r.leader_epoch,
            body,
            0,
            key_len,
            max(key_len, 0),
            value_len,
            r.headers,
        )
    return _batch(topic, partition, out.raw())


if _DECODE is not None:
    _DECODE.configure(record_type=ConsumerRecord, decompress=decompress, no_headers=NO_HEADERS)
