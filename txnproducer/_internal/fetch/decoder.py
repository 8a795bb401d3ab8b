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

Fields are read as the Java client reads them (``DefaultRecord.readFrom``, ``ByteUtils``): the record
length, offset delta, key, value and header lengths and the header count are int32 varints of at most
5 bytes (bits of the 5th byte past the 32nd dropped; a 6th byte is an error), the timestamp delta an
int64 varlong of at most 10 bytes (bits past the 64th dropped); offsets and timestamps add as Java's
longs do, wrapping at 2**63. A negative key, value or header value length is null, as in Java. A
header key that is not UTF-8 is decoded with U+FFFD replacements, as Java's ``new String(bytes,
UTF_8)`` does (Python's decoder decides how many replacement characters a bad sequence becomes), not
refused: refusing would stop the partition where every Java consumer reads on. A negative record count
is an error where Java reads the records (a data batch, or an ABORT/COMMIT marker in read_committed),
as is a control record key of a negative version (``ControlRecordType.parse``).

Decompression is kafka-python's (``kafka.codec``; the codecs' packages must be installed: gzip
always, snappy ``python-snappy``, lz4 ``lz4``, zstd ``zstandard``), only for batches whose records are
read: an aborted transaction's batch is skipped without decompressing it, as the Java consumer does.
Data a codec cannot decompress makes its batch unreadable (:class:`CodecError`: an error naming the
batch, as a bad CRC); anything else - ``MemoryError``, ``KeyboardInterrupt``, a codec that is not
installed (:class:`~txnproducer.ConfigError` naming the package) - propagates, and nothing of the
partition is handed out or skipped meanwhile: those are not damaged data, and the advice for damaged
data (seek past it) would lose committed records.

Columns (``columns=True``) address keys and values with int32 starts: a partition chunk whose keys or
values pass 2 GiB raises ``OverflowError`` saying to read it as records (``poll()``).
"""

from __future__ import annotations

import struct
from array import array
from collections import deque
from collections.abc import Sequence
from operator import index
from typing import Any, NamedTuple

import kafka.codec as codecs
from kafka.record.util import calc_crc32c

from txnproducer._internal.accel import DECODE as _DECODE
from txnproducer.errors import ConfigError

from .records import NO_HEADERS, BytesColumn, ConsumerRecord, Headers, PartitionBatch

__all__ = ["CodecError", "Decoded", "columns_from_records", "decode_partition", "decode_pure", "decompress"]

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
_MASK64 = (1 << 64) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_COLUMN_LIMIT = 2**31 - 1  # the largest key/value start an int32 column holds (tests lower it)
#: the same words as _decode.c's COLUMNS_TOO_LARGE
_COLUMNS_TOO_LARGE = (
    "the keys or values of one partition's fetched records pass 2 GiB, past what a column's int32 starts "
    "can address: read this partition with poll() (records) instead of poll_batch()"
)


class _Corrupt(Exception):
    """A batch cannot be read: stops the walk (reported, never skipped)."""


class CodecError(Exception):
    """A batch's records cannot be decompressed: its data is damaged (or names an unknown codec). The
    batch is reported as unreadable; any other exception of a codec is not taken for damage."""


def decompress(codec: int, data: bytes) -> bytes:
    """The records of a batch compressed with ``codec`` (1 gzip, 2 snappy, 3 lz4, 4 zstd).

    Raises :class:`CodecError` for data the codec cannot decompress, :class:`~txnproducer.ConfigError`
    when the codec's package is not installed; ``MemoryError`` (and what is not an ``Exception``) as is."""
    entry = _CODECS.get(codec)
    if entry is None:
        raise CodecError(f"unknown compression codec {codec}")
    name, function, package = entry
    decode = getattr(codecs, function, None)
    available = getattr(codecs, f"has_{name}", lambda: False)()
    if decode is None or not available:
        raise ConfigError(
            f"fetched records are compressed with {name}, whose codec is not installed: pip install "
            f"{package} and start the consumer again (nothing was skipped: the records stay where they are)"
        )
    try:
        return bytes(decode(data))
    except MemoryError:
        raise
    except Exception as exc:
        raise CodecError(f"{name}: {type(exc).__name__}: {exc}") from exc


def _varint32(buf: Any, pos: int) -> tuple[int, int]:
    """Java's ``ByteUtils.readVarint`` at ``pos``: a zig-zag int32 of at most 5 bytes, the 5th byte's
    bits past the 32nd dropped (Java's int shift)."""
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    value = b & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        if shift == 28:
            if b >= 0x80:
                raise _Corrupt("a varint is longer than 5 bytes")
            value = (value | (b << 28)) & 0xFFFFFFFF
            break
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    return (value >> 1) ^ -(value & 1), pos


def _varlong(buf: Any, pos: int) -> tuple[int, int]:
    """Java's ``ByteUtils.readVarlong`` at ``pos``: a zig-zag int64 of at most 10 bytes, bits past the
    64th dropped (Java's long shift)."""
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
            value &= _MASK64
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > 63:
            raise _Corrupt("a varlong is longer than 10 bytes")


def _long(value: int) -> int:
    """``value`` as Java's long arithmetic leaves it (wrapped at 2**63)."""
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    return ((value - _INT64_MIN) & _MASK64) + _INT64_MIN


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
            if len(buf) > _COLUMN_LIMIT:
                raise OverflowError(_COLUMNS_TOO_LARGE)
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
    if count < 0:
        raise _Corrupt("a negative record count")
    pos = 0
    end = len(body)
    ttype = 1 if log_append else 0
    for _ in range(count):
        length, pos = _varint32(body, pos)
        if length < 6 or length > end - pos:
            raise _Corrupt(f"a record's length {length} does not fit its batch")
        rec_end = pos + length
        pos += 1  # attributes (unused)
        ts_delta, pos = _varlong(body, pos)
        off_delta, pos = _varint32(body, pos)
        key_len, pos = _varint32(body, pos)
        key_at = pos
        if key_len > 0:
            if key_len > rec_end - pos:
                raise _Corrupt("a record's fields do not add up to its length")
            pos += key_len
        value_len, pos = _varint32(body, pos)
        value_at = pos
        if value_len > 0:
            if value_len > rec_end - pos:
                raise _Corrupt("a record's fields do not add up to its length")
            pos += value_len
        n_headers, pos = _varint32(body, pos)
        headers: Headers = NO_HEADERS
        if n_headers:
            if n_headers < 0 or n_headers > rec_end - pos:
                raise _Corrupt(f"a record declares {n_headers} headers")
            items = []
            for _ in range(n_headers):
                hk_len, pos = _varint32(body, pos)
                if hk_len < 0 or hk_len > rec_end - pos:
                    raise _Corrupt("a header key does not fit its record")
                name = str(body[pos : pos + hk_len], "utf-8", "replace")
                pos += hk_len
                hv_len, pos = _varint32(body, pos)
                hv = None
                if hv_len >= 0:
                    if hv_len > rec_end - pos:
                        raise _Corrupt("a header value does not fit its record")
                    hv = bytes(body[pos : pos + hv_len])
                    pos += hv_len
                items.append((name, hv))
            headers = items
        if pos != rec_end:
            raise _Corrupt("a record's fields do not add up to its length")
        offset = _long(base_offset + off_delta)
        if offset < fetch_offset:
            continue
        if key_len < 0:
            key_len = -1  # any negative length is null (Java); the columns say -1
        if value_len < 0:
            value_len = -1
        timestamp = max_ts if log_append else _long(first_ts + ts_delta)
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
    """Whether a control batch's first record is an ABORT marker: its key is (int16 version, int16 type),
    read as Java's ``ControlRecordType.parse`` reads it (at least 4 bytes, a version >= 0)."""
    _length, pos = _varint32(body, 0)
    pos += 1
    _ts, pos = _varlong(body, pos)
    _off, pos = _varint32(body, pos)
    key_len, pos = _varint32(body, pos)
    if key_len < 4:
        raise _Corrupt("a control record without its type")
    if key_len > len(body) - pos:
        raise _Corrupt("its records cannot be read (a control record runs past its batch)")
    version, kind = struct.unpack_from(">hh", body, pos)
    if version < 0:
        raise _Corrupt("a control record of a negative version")
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
    read_committed = aborted is not None
    queue = deque(sorted(_aborted_entries(aborted), key=lambda a: a[1])) if aborted else None
    aborted_pids: set[int] = set()
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
            last_offset = _long(base_offset + last_delta)
            codec = attributes & _CODEC_MASK
            body: Any = view[pos + _HEADER_SIZE : batch_end]
            control = attributes & _CONTROL
            if read_committed and pid >= 0:
                while queue and queue[0][1] <= last_offset:
                    aborted_pids.add(queue.popleft()[0])
                if control:
                    if count < 0:
                        raise _Corrupt("a negative record count")
                    if count and _is_abort_marker(_inflated(codec, body)):
                        aborted_pids.discard(pid)
                elif attributes & _TRANSACTIONAL and pid in aborted_pids:
                    # an aborted transaction's batch: not even decompressed (Java reads past it)
                    next_offset = max(next_offset, _long(last_offset + 1))
                    last_epoch = epoch
                    pos = batch_end
                    continue
            if not control:
                _records(
                    _inflated(codec, body),
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
        except (_Corrupt, IndexError, struct.error) as exc:
            reason = str(exc) if isinstance(exc, _Corrupt) else f"its records cannot be read ({exc})"
            return (out.raw() if columns else out), next_offset, last_epoch, base_offset, reason
        next_offset = max(next_offset, _long(last_offset + 1))
        last_epoch = epoch
        pos = batch_end
    return (out.raw() if columns else out), next_offset, last_epoch, -1, None


def _inflated(codec: int, body: Any) -> Any:
    """A batch's records, decompressed if ``codec`` says so (see the module docstring)."""
    if not codec:
        return body
    try:
        return decompress(codec, bytes(body))
    except CodecError as exc:
        raise _Corrupt(f"it could not be decompressed: {exc}") from None


def _aborted_entries(aborted: Sequence[Any]) -> list[tuple[int, int]]:
    """The aborted transactions as (producer id, first offset) integers, whatever sequences they come
    as (the compiled decoder takes the same)."""
    out = []
    for entry in aborted:
        try:
            pid, first = entry
        except (TypeError, ValueError):
            raise ValueError("an aborted transaction must be (producer id, first offset)") from None
        out.append((index(pid), index(first)))
    return out


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


def _configure_compiled() -> None:
    """Hand the compiled decoder the objects it builds with (again after a test changed the limit)."""
    if _DECODE is not None:
        _DECODE.configure(
            record_type=ConsumerRecord,
            decompress=decompress,
            no_headers=NO_HEADERS,
            codec_error=CodecError,
            column_limit=_COLUMN_LIMIT,
        )


def _set_column_limit(limit: int) -> int:
    """Tests only: make both decoders' columns refuse key/value starts past ``limit`` (a chunk past 2 GiB
    cannot be built in a unit test); returns the previous limit."""
    global _COLUMN_LIMIT
    previous, _COLUMN_LIMIT = _COLUMN_LIMIT, limit
    _configure_compiled()
    return previous


_configure_compiled()
