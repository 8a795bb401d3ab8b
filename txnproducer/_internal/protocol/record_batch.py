"""Magic-v2 record batch encoding for the send path (replaces kafka-python's per-record append).

Why not kafka-python's ``DefaultRecordBatchBuilder.append``: it validates types, builds each
record in a fresh bytearray one varint byte at a time and costs about 2.7 µs per record plus
a separate ``size_of`` estimate; ``send()`` already validated the types, so here a record is
one ``b"".join`` of pre-encoded zig-zag varints (a lookup table covers the small values that
dominate: offset/timestamp deltas, key/value/header lengths) and its size is known exactly.
The batch header, the CRC-32C and the codecs stay kafka-python's (``HEADER_STRUCT``,
``calc_crc32c``, ``kafka.codec``), and ``tests/unit/test_record_encoding.py`` checks that the
bytes are identical to ``DefaultRecordBatchBuilder``'s for random records.

The measurements that justified replacing kafka-python's encoder (a project rule) are in
``benchmarks/README.md``.

Base sequences (a batch header field) are 31-bit and wrap to 0 after 2**31 - 1, as in the
broker: :func:`add_sequence` is that arithmetic, shared by the accumulator (splitting a batch)
and the transaction manager's sequence book.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Protocol

import kafka.codec as codecs
from kafka.errors import UnsupportedCodecError
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from txnproducer._internal.accel import SPEEDUPS as _SPEEDUPS

__all__ = ["BATCH_HEADER_SIZE", "GZIP_DEFAULT_LEVEL", "MAX_RECORD_OVERHEAD", "NO_HEADERS_ENCODED",
           "SEQUENCE_MODULUS", "ActiveBatchEncoder", "BatchBuilder", "BatchEncoder", "add_sequence",
           "encode_headers", "estimate_record_size", "payload_size", "restamp", "varint"]

_B = DefaultRecordBatchBuilder
_HEADER = _B.HEADER_STRUCT
#: Size of a magic-v2 batch header (the part before the records).
BATCH_HEADER_SIZE: int = _HEADER.size
#: Upper bound of a record's bytes besides key, value and headers (length, attributes, deltas).
MAX_RECORD_OVERHEAD: int = _B.MAX_RECORD_OVERHEAD
_ATTRIBUTES_OFFSET: int = _B.ATTRIBUTES_OFFSET
_CRC_OFFSET: int = _B.CRC_OFFSET
_AFTER_LEN_OFFSET: int = _B.AFTER_LEN_OFFSET
_TRANSACTIONAL: int = _B.TRANSACTIONAL_MASK
_CRC = struct.Struct(">I")

SEQUENCE_MODULUS = 2**31  # sequences run 0 .. 2**31 - 1 and wrap to 0


def add_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` with the broker's wrap-around at 2**31 - 1 (negative increments too)."""
    return (sequence + increment) % SEQUENCE_MODULUS



def _encode_varint(value: int) -> bytes:
    """Zig-zag varint (Kafka's signed varint/varlong) of any 64-bit value."""
    n = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_TABLE_MIN = -1
_TABLE_SIZE = 1 << 14
# index i holds the encoding of i + _TABLE_MIN (so -1, the null length, is index 0)
_TABLE: list[bytes] = [_encode_varint(i + _TABLE_MIN) for i in range(_TABLE_SIZE)]
_TABLE_MAX = _TABLE_SIZE + _TABLE_MIN


def varint(value: int, _table: list[bytes] = _TABLE) -> bytes:
    """Zig-zag varint of ``value``; a table lookup for the common small values."""
    if _TABLE_MIN <= value < _TABLE_MAX:
        return _table[value + 1]
    return _encode_varint(value)


_NULL = _TABLE[0]  # varint(-1): null key/value/header value
_NO_HEADERS = _TABLE[1]  # varint(0): zero headers
NO_HEADERS_ENCODED = _NO_HEADERS  # what encode_headers returns for no headers


def encode_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """The header-count varint followed by the headers, as they appear inside a record."""
    if not headers:
        return _NO_HEADERS
    parts = [varint(len(headers))]
    for name, value in headers:
        raw = name.encode("utf-8")
        parts.append(varint(len(raw)))
        parts.append(raw)
        if value is None:
            parts.append(_NULL)
        else:
            parts.append(varint(len(value)))
            parts.append(value)
    return b"".join(parts)


def estimate_record_size(key: bytes | None, value: bytes | None,
                         headers: Sequence[tuple[str, bytes | None]]) -> int:
    """Upper bound of one record's encoded size inside a batch (without the batch header)."""
    return payload_size(key, value, encode_headers(headers)) + MAX_RECORD_OVERHEAD


def payload_size(key: bytes | None, value: bytes | None, headers_encoded: bytes) -> int:
    """Exact bytes of key, value and headers with their length varints inside a record."""
    size = len(headers_encoded)
    if key is None:
        size += 1
    else:
        n = len(key)
        size += n + (1 if n < 64 else 2 if n < 8192 else 3 if n < 1048576 else 5)
    if value is None:
        size += 1
    else:
        n = len(value)
        size += n + (1 if n < 64 else 2 if n < 8192 else 3 if n < 1048576 else 5)
    return size


def _check_codec(codec: int) -> None:
    checkers = {1: ("gzip", codecs.has_gzip), 2: ("snappy", codecs.has_snappy),
                3: ("lz4", codecs.has_lz4), 4: ("zstd", codecs.has_zstd)}
    if codec not in checkers:
        raise UnsupportedCodecError(f"Unrecognized compression type: {codec}")
    name, checker = checkers[codec]
    if not checker():
        raise UnsupportedCodecError(f"Libraries for {name} compression codec not found")


#: gzip level for ``-1`` ("the codec's default"): zlib's default, which is what the Java client
#: uses (KIP-390). kafka-python's ``gzip_encode`` defaults to 9, which costs about 50 % more CPU
#: for almost the same size (16 KB of JSON-like records, 2026-11-22: 651 -> 431 us per batch,
#: compression ratio 3.43 -> 3.41).
GZIP_DEFAULT_LEVEL = 6


def _compress(codec: int, data: bytes, gzip_level: int = -1) -> bytes:
    _check_codec(codec)
    if codec == 1:
        level = GZIP_DEFAULT_LEVEL if gzip_level == -1 else gzip_level
        return bytes(codecs.gzip_encode(data, compresslevel=level))
    if codec == 2:
        return bytes(codecs.snappy_encode(data))
    if codec == 3:
        return bytes(codecs.lz4_encode(data))
    return bytes(codecs.zstd_encode(data))


class BatchBuilder(Protocol):
    """What the accumulator and its batches use of an encoder: :class:`BatchEncoder` or the compiled
    one (``txnproducer._internal.accel``), which writes the same bytes."""

    batch_size: int

    @property
    def num_records(self) -> int: ...
    def size(self) -> int: ...
    def append(self, timestamp: int, key: bytes | None, value: bytes | None,
               headers_encoded: bytes) -> int: ...
    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int,
                           is_transactional: bool) -> None: ...
    def build(self) -> bytearray: ...


class BatchEncoder:
    """Accumulates records of one magic-v2 batch; :meth:`build` adds header, codec and CRC.

    Same contract as kafka-python's builder: the first record is always taken, a later one
    only while the batch stays within ``batch_size`` bytes (:meth:`append` returns -1 then).
    """

    __slots__ = ("_base_sequence", "_buffer", "_codec", "_first_timestamp", "_gzip_level",
                 "_is_transactional", "_max_timestamp", "_num_records", "_producer_epoch",
                 "_producer_id", "batch_size")

    def __init__(self, compression_type: int, is_transactional: bool, batch_size: int,
                 producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 gzip_level: int = -1) -> None:
        self._codec = compression_type & _B.CODEC_MASK
        self._gzip_level = gzip_level
        self._is_transactional = bool(is_transactional)
        self.batch_size = batch_size
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._first_timestamp = -1
        self._max_timestamp = 0
        self._num_records = 0
        self._buffer = bytearray(BATCH_HEADER_SIZE)

    @property
    def num_records(self) -> int:
        return self._num_records

    def size(self) -> int:
        """Bytes written so far (header included, before compression)."""
        return len(self._buffer)

    def append(self, timestamp: int, key: bytes | None, value: bytes | None,
               headers_encoded: bytes, _table: list[bytes] = _TABLE, _null: bytes = _NULL,
               _join: bytes = b"") -> int:
        """Add a record (offset delta = records so far); return the batch's size with it, or -1
        when it does not fit. ``headers_encoded`` comes from :func:`encode_headers`."""
        offset = self._num_records
        if offset:
            ts_delta = timestamp - self._first_timestamp
            ts_v = _table[ts_delta + 1] if -1 <= ts_delta < _TABLE_MAX else _encode_varint(ts_delta)
        else:
            ts_v = _table[1]  # varint(0)
        if key is None:
            key_v = _null
            key = _join
        else:
            n = len(key)
            key_v = _table[n + 1] if n < _TABLE_MAX else _encode_varint(n)
        if value is None:
            value_v = _null
            value = _join
        else:
            n = len(value)
            value_v = _table[n + 1] if n < _TABLE_MAX else _encode_varint(n)
        # the record after its length prefix: attributes, deltas, key, value, headers
        body = _join.join((b"\x00", ts_v, _table[offset + 1] if offset < _TABLE_MAX
                           else _encode_varint(offset), key_v, key, value_v, value, headers_encoded))
        n = len(body)
        len_v = _table[n + 1] if n < _TABLE_MAX else _encode_varint(n)
        buf = self._buffer
        if offset:
            if len(len_v) + n + len(buf) > self.batch_size:
                return -1
            if timestamp > self._max_timestamp:
                self._max_timestamp = timestamp
        else:
            self._first_timestamp = timestamp
            self._max_timestamp = timestamp
        buf += len_v
        buf += body
        self._num_records = offset + 1
        return len(buf)

    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int,
                           is_transactional: bool) -> None:
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._is_transactional = is_transactional

    def build(self) -> bytearray:
        """Compress (when it helps, as kafka-python does), write the header and the CRC."""
        buf = self._buffer
        attributes = _TRANSACTIONAL if self._is_transactional else 0
        if self._codec:
            data = bytes(memoryview(buf)[BATCH_HEADER_SIZE:])
            compressed = _compress(self._codec, data, self._gzip_level)
            if len(compressed) < len(data):
                buf[BATCH_HEADER_SIZE:] = compressed
                attributes |= self._codec
        first = self._first_timestamp if self._num_records else 0
        _HEADER.pack_into(
            buf, 0,
            0,  # base offset: the broker assigns it
            len(buf) - _AFTER_LEN_OFFSET,
            0,  # partition leader epoch: set by the broker
            2,  # magic
            0,  # CRC, computed below over attributes..end
            attributes,
            max(self._num_records - 1, 0),  # last offset delta
            first,
            self._max_timestamp if self._num_records else 0,
            self._producer_id,
            self._producer_epoch,
            self._base_sequence,
            self._num_records,
        )
        _CRC.pack_into(buf, _CRC_OFFSET, calc_crc32c(memoryview(buf)[_ATTRIBUTES_OFFSET:]))
        return buf


# producer id (int64), producer epoch (int16), base sequence (int32): the header's bytes 43-56
_PRODUCER_STATE = struct.Struct(">qhi")
_PRODUCER_STATE_OFFSET = 43


def restamp(buf: bytearray, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
    """Give a built batch another producer id, epoch and base sequence, and its new CRC.

    Why: when a broker has lost a producer's state (UNKNOWN_PRODUCER_ID after retention, KIP-360)
    the Java client starts the partition's sequences again at 0 and re-stamps the batches already
    sent (``startSequencesAtBeginning``); the records themselves stay as they are. The result is
    the batch :class:`BatchEncoder` would have built with that state.
    """
    if _SPEEDUPS is not None:
        _SPEEDUPS.restamp(buf, producer_id, producer_epoch, base_sequence)
        return
    _PRODUCER_STATE.pack_into(buf, _PRODUCER_STATE_OFFSET, producer_id, producer_epoch, base_sequence)
    _CRC.pack_into(buf, _CRC_OFFSET, calc_crc32c(memoryview(buf)[_ATTRIBUTES_OFFSET:]))


#: The encoder the send path builds its batches with: the compiled one when the accelerator is
#: active (the same bytes: ``tests/unit/test_record_encoding.py`` runs against both), else
#: :class:`BatchEncoder`. Codecs stay kafka-python's either way (``_compress``).
ActiveBatchEncoder: Callable[..., BatchBuilder] = BatchEncoder
if _SPEEDUPS is not None:
    _SPEEDUPS.configure(compress=_compress)
    ActiveBatchEncoder = _SPEEDUPS.BatchEncoder
