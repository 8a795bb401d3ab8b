"""The record batch decoders: the pure-Python reference and the compiled one agree batch for batch,
and both read exactly what a read_committed Java consumer reads.

Partitions are written through the MockCluster's partition log (``PartitionLog``: the broker's
offsets, leader epochs, COMMIT/ABORT markers and aborted-transaction index) by several transactional
producers whose transactions interleave, with every codec, headers and null keys and values; a
model of what each producer committed says which records a read_committed reader must see. Every
case is read by both decoders (the compiled one where it is built: on the pure path only the
reference runs) in one fetch and in small fetches, as a consumer with a small
``max_partition_fetch_bytes`` reads it.
"""

from __future__ import annotations

import array
import struct
from typing import Any

import kafka.codec as codecs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from txnproducer import ConfigError
from txnproducer._internal.accel import DECODE
from txnproducer._internal.fetch import decoder as decoder_module
from txnproducer._internal.fetch import records as records_module
from txnproducer._internal.fetch.decoder import Decoded, columns_from_records, decode_partition
from txnproducer._internal.fetch.records import PartitionBatch
from txnproducer.testing.partition_log import PartitionLog, parse_batches

CODECS = [0, 1] + [
    c for c, ok in ((2, codecs.has_snappy()), (3, codecs.has_lz4()), (4, codecs.has_zstd())) if ok
]
IMPLEMENTATIONS = [False] + ([True] if DECODE is not None else [])

_value = st.one_of(st.none(), st.just(b""), st.binary(max_size=60))
_headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=12))), max_size=2)
_records = st.lists(st.tuples(_value, _value, _headers), min_size=1, max_size=6)
# (producer index, action, records, codec): action "send", "commit" or "abort"
_op = st.tuples(
    st.integers(0, 3), st.sampled_from(["send", "send", "commit", "abort"]), _records, st.sampled_from(CODECS)
)


def _batch(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    codec: int,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    transactional: bool = False,
    ts: int = 1_700_000_000_000,
    log_append: bool = False,
) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, transactional, pid, epoch, seq, 2**31 - 1)
    for i, (key, value, headers) in enumerate(records):
        builder.append(i, ts + i, key, value, headers)
    data = bytearray(builder.build())
    if log_append:  # the broker's LogAppendTime (the client never writes it)
        attributes = struct.unpack_from(">h", data, 21)[0] | 0x08
        struct.pack_into(">h", data, 21, attributes)
        struct.pack_into(">I", data, 17, calc_crc32c(memoryview(data)[21:]))
    return bytes(data)


class Log:
    """A partition written by producers whose transactions interleave, and what a read_committed
    reader must see of it."""

    def __init__(self) -> None:
        self.log = PartitionLog("t", 0, leader_id=1, leader_epoch=0)
        self.expected: dict[int, tuple[bytes | None, bytes | None, list[Any]]] = {}
        self._open: dict[int, list[tuple[int, tuple[Any, ...]]]] = {}
        self._seq: dict[int, int] = {}

    def send(self, pid: int, records: list[Any], codec: int, transactional: bool = True) -> None:
        seq = self._seq.get(pid, 0)
        batch = _batch(records, codec, pid, 0 if pid >= 0 else -1, seq if pid >= 0 else -1, transactional)
        result = self.log.append(parse_batches(batch), strict_first_sequence=False)
        assert result.error_code == 0
        self._seq[pid] = seq + len(records)
        written = [(result.base_offset + i, r) for i, r in enumerate(records)]
        if transactional:
            self._open.setdefault(pid, []).extend(written)
        else:
            self.expected.update(dict(written))

    def end(self, pid: int, commit: bool) -> None:
        if pid not in self._open:
            return
        self.log.write_marker(pid, 0, commit, 0)
        written = self._open.pop(pid)
        if commit:
            self.expected.update(dict(written))

    def lso(self) -> int:
        return self.log.last_stable_offset

    def read(self, start: int, max_bytes: int) -> tuple[bytes, list[tuple[int, int]]]:
        data, end = self.log.read(start, max_bytes, self.lso(), min_one=True)
        aborted = (
            [(a.producer_id, a.first_offset) for a in self.log.aborted_transactions(start, end)]
            if data
            else []
        )
        return data, aborted


def _same(a: Decoded, b: Decoded) -> None:
    """Both decoders gave the same records (as records or as columns) and the same position."""
    assert (a.next_offset, a.last_epoch, a.error_offset, a.error_reason is None) == (
        b.next_offset,
        b.last_epoch,
        b.error_offset,
        b.error_reason is None,
    )
    ra = a.records if isinstance(a.records, list) else a.records.records()
    rb = b.records if isinstance(b.records, list) else b.records.records()
    assert ra == rb


def _decode_all(data: Any, offset: int, aborted: Any, *, columns: bool = False) -> Decoded:
    """Every implementation's answer, checked equal; the reference's is returned."""
    results = [
        decode_partition(data, offset, aborted, "t", 0, columns=columns, compiled=c) for c in IMPLEMENTATIONS
    ]
    for other in results[1:]:
        _same(results[0], other)
    return results[0]


def _read_committed(log: Log, max_bytes: int, columns: bool) -> list[Any]:
    """Read the partition fetch by fetch, as a consumer does, until the last stable offset."""
    position, out = 0, []
    while position < log.lso():
        data, aborted = log.read(position, max_bytes)
        decoded = _decode_all(data, position, aborted, columns=columns)
        assert decoded.error_reason is None, decoded.error_reason
        assert decoded.next_offset > position, "every fetch must make progress"
        records = decoded.records if isinstance(decoded.records, list) else decoded.records.records()
        out.extend(records)
        position = decoded.next_offset
    return out


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(_op, min_size=1, max_size=25),
    max_bytes=st.sampled_from([1, 300, 1 << 20]),
    columns=st.booleans(),
    end_all=st.booleans(),
)
def test_interleaved_transactions_of_several_producers(
    ops: list[Any], max_bytes: int, columns: bool, end_all: bool
) -> None:
    log = Log()
    for index, action, records, codec in ops:
        pid = 1000 + index
        if action == "send":
            log.send(pid, records, codec, transactional=index != 3)  # producer 3 is not transactional
        else:
            log.end(pid, commit=action == "commit")
    if end_all:
        for index in range(3):
            log.end(1000 + index, commit=index % 2 == 0)
    got = _read_committed(log, max_bytes, columns)
    want = sorted((o, r) for o, r in log.expected.items() if o < log.lso())
    assert [(r.offset, (r.key, r.value, list(r.headers))) for r in got] == [
        (o, (k, v, list(h))) for o, (k, v, h) in want
    ], "0 aborted records returned, 0 committed missing"


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("columns", [False, True])
def test_every_codec_with_headers_and_nulls(codec: int, columns: bool) -> None:
    records = [(None, b"v" * 50, []), (b"k", None, [("h", None), ("\u00e9", b"x")]), (b"", b"", [])]
    data = _batch(records * 20, codec)
    decoded = _decode_all(data, 0, [], columns=columns)
    got = decoded.records if isinstance(decoded.records, list) else decoded.records.records()
    assert [(r.key, r.value, list(r.headers)) for r in got] == [(k, v, h) for k, v, h in records * 20]
    assert decoded.next_offset == 60 and decoded.error_reason is None
    assert [r.timestamp for r in got] == [1_700_000_000_000 + i for i in range(60)]


def test_log_append_time_gives_every_record_the_batch_max_timestamp() -> None:
    data = _batch([(None, b"a", []), (None, b"b", [])], 0, log_append=True)
    decoded = _decode_all(data, 0, None)
    assert [(r.timestamp, r.timestamp_type) for r in decoded.records] == [(1_700_000_000_001, 1)] * 2


def test_a_bad_crc_stops_at_that_batch_and_keeps_what_came_before() -> None:
    first = _batch([(None, b"ok", [])], 0)
    second = bytearray(_batch([(None, b"damaged", [])], 1))
    struct.pack_into(">q", second, 0, 1)  # its base offset: outside the CRC, as the broker writes it
    second[-3] ^= 0xFF  # a flipped bit inside the CRC's range
    third = bytearray(_batch([(None, b"after", [])], 0))
    struct.pack_into(">q", third, 0, 2)
    decoded = _decode_all(first + bytes(second) + bytes(third), 0, [])
    assert [r.value for r in decoded.records] == [b"ok"]
    assert decoded.error_offset == 1 and decoded.next_offset == 1
    assert decoded.error_reason is not None and "CRC" in decoded.error_reason


def test_records_below_the_fetch_offset_are_skipped_but_the_position_moves_past_the_batch() -> None:
    data = _batch([(None, b"%d" % i, []) for i in range(5)], 0)
    decoded = _decode_all(data, 3, [])
    assert [r.offset for r in decoded.records] == [3, 4] and decoded.next_offset == 5


@given(cut=st.integers(0, 400))
def test_a_batch_cut_off_at_the_end_is_left_for_the_next_fetch(cut: int) -> None:
    whole = _batch([(None, b"x" * 40, [])] * 3, 0)
    second = bytearray(whole)
    struct.pack_into(">q", second, 0, 3)
    data = whole + bytes(second)
    decoded = _decode_all(data[:cut], 0, [])
    complete = 0 if cut < len(whole) else 1 if cut < len(data) else 2
    assert decoded.error_reason is None and len(decoded.records) == 3 * complete
    assert decoded.next_offset == 3 * complete


def _with_valid_crc(header_fields: tuple[Any, ...], body: bytes) -> bytes:
    header = bytearray(struct.pack(">qiibIhiqqqhii", *header_fields))
    struct.pack_into(">i", header, 8, 49 + len(body))
    data = header + body
    struct.pack_into(">I", data, 17, calc_crc32c(memoryview(data)[21:]))
    return bytes(data)


@settings(max_examples=300)
@given(
    body=st.binary(max_size=80),
    count=st.integers(-2, 5),
    attributes=st.sampled_from([0, 0x10, 0x30, 0x20]),
    pid=st.sampled_from([-1, 7]),
    columns=st.booleans(),
)
def test_garbage_under_a_valid_crc_is_reported_the_same_by_both(
    body: bytes, count: int, attributes: int, pid: int, columns: bool
) -> None:
    data = _with_valid_crc((0, 0, 3, 2, 0, attributes, max(count - 1, 0), 10, 10, pid, 0, 0, count), body)
    _decode_all(data, 0, [(7, 0)], columns=columns)


def test_columns_from_records_round_trip() -> None:
    data = _batch([(b"k", b"v", [("h", b"1")]), (None, None, [])], 0)
    records = _decode_all(data, 0, []).records
    assert isinstance(records, list)
    batch = columns_from_records("t", 0, records)
    assert batch.records() == records and batch.next_offset == 2
    assert list(batch.values) == [b"v", None] and batch.values.view(0) == b"v"


# -- the edges a Java consumer reads one way (review C1, C2, E): both decoders agree, and agree with Java --

MASK64 = (1 << 64) - 1


def _uvarint(u: int, width: int = 0) -> bytes:
    """``u`` as an unsigned varint, padded with continuation bytes to ``width`` bytes (Java reads padded
    encodings as the same value)."""
    out = bytearray()
    while True:
        byte, u = u & 0x7F, u >> 7
        if u or len(out) + 1 < width:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _zz(v: int) -> int:
    return ((v << 1) ^ (v >> 63)) & MASK64


def _varint(v: int, width: int = 0) -> bytes:
    return _uvarint(_zz(v), width)


def _record(
    *,
    ts_delta: bytes = b"\x00",
    off_delta: bytes = b"\x00",
    key: tuple[bytes, bytes] = (b"\x01", b""),
    value: tuple[bytes, bytes] = (b"\x02", b"v"),
    headers: bytes = b"\x00",
    length: bytes | None = None,
) -> bytes:
    """A record from encoded fields (each a varint's bytes, chosen by the caller); ``length`` defaults to
    the body's true length."""
    body = b"\x00" + ts_delta + off_delta + key[0] + key[1] + value[0] + value[1] + headers
    return (_varint(len(body)) if length is None else length) + body


def _raw_batch(
    records: bytes,
    count: int,
    *,
    base_offset: int = 0,
    first_ts: int = 1_000,
    last_delta: int = 0,
    attributes: int = 0,
    pid: int = -1,
) -> bytes:
    return _with_valid_crc(
        (base_offset, 0, 0, 2, 0, attributes, last_delta, first_ts, first_ts, pid, 0, 0, count), records
    )


# an encoded varint field: a value in some encoding (minimal or padded), or bytes chosen at random
# (10-byte varints with bits past the 64th, 6-byte int32s, lengths near INT64_MAX, ...)
_ints = st.one_of(
    st.integers(-3, 8),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([2**31 - 1, -(2**31), 2**31, 2**32 + 1, 2**63 - 4, 2**63 - 40, -(2**63)]),
)
_encoded = st.one_of(
    st.builds(lambda v, w: _varint(v, w), _ints, st.integers(0, 10)),
    st.builds(
        lambda groups: bytes(g | 0x80 for g in groups[:-1]) + bytes([groups[-1]]),
        st.lists(st.integers(0, 127), min_size=1, max_size=11),
    ),
)
_small_bytes = st.binary(max_size=6)
_field = st.tuples(_encoded, _small_bytes)
_raw_record = st.builds(
    lambda ts, off, key, value, n, hk, hv, length: _record(
        ts_delta=ts,
        off_delta=off,
        key=key,
        value=value,
        headers=n + hk[0] + hk[1] + hv[0] + hv[1],
        length=length,
    ),
    _encoded,
    _encoded,
    _field,
    _field,
    st.sampled_from([b"\x00", b"\x02", _varint(-1), _varint(2**31 - 1)]),
    _field,
    _field,
    st.one_of(st.none(), _encoded),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(_raw_record, min_size=1, max_size=3),
    count_change=st.sampled_from([0, 0, 0, -1, 1, "negative"]),
    base_offset=st.sampled_from([0, 5, 2**63 - 2, -(2**63), 2**62]),
    first_ts=st.sampled_from([1_000, 2**63 - 5, -(2**63) + 3, 0]),
    attributes=st.sampled_from([0, 0x08, 0x10, 0x20, 0x30]),
    pid=st.sampled_from([-1, 7]),
    aborted_as_lists=st.booleans(),
    columns=st.booleans(),
    fetch_offset=st.sampled_from([0, 1, -(2**63)]),
)
def test_java_edge_fields_are_read_the_same_by_both_decoders(
    records: list[bytes],
    count_change: Any,
    base_offset: int,
    first_ts: int,
    attributes: int,
    pid: int,
    aborted_as_lists: bool,
    columns: bool,
    fetch_offset: int,
) -> None:
    """Fields encoded at Java's limits and past them - 5-byte int32 varints with bits past the 32nd, 6-byte
    ones, 10-byte varlongs with bits past the 64th, lengths near INT64_MAX, offsets and timestamps that
    wrap - and aborted transactions as lists or tuples: the compiled decoder answers exactly as the
    reference, records or columns, or both report the same batch unreadable."""
    count = -1 if count_change == "negative" else len(records) + count_change
    data = _raw_batch(
        b"".join(records), count, base_offset=base_offset, first_ts=first_ts, attributes=attributes, pid=pid
    ) + _control_marker(base_offset, 7)
    aborted: Any = [[7, 0]] if aborted_as_lists else [(7, 0)]
    decoded = _decode_all(data, fetch_offset, aborted, columns=columns)
    _same(decoded, _decode_all(data, fetch_offset, [(7, 0)], columns=columns))


def _control_marker(after: int, pid: int, abort: bool = True) -> bytes:
    key = struct.pack(">hh", 0, 0 if abort else 1)
    record = _record(key=(_varint(4), key), value=(_varint(6), struct.pack(">hi", 0, 0)))
    base = (after + 1) & MASK64
    base = base - (1 << 64) if base >= 1 << 63 else base
    return _raw_batch(record, 1, base_offset=base, attributes=0x30, pid=pid)


def _one(data: bytes, **kwargs: Any) -> Decoded:
    return _decode_all(data, kwargs.pop("fetch_offset", 0), kwargs.pop("aborted", []), **kwargs)


def test_int32_fields_take_at_most_five_bytes_and_keep_java_s_32_bits() -> None:
    # offset delta 1 padded to 5 bytes, its 5th byte carrying bits past the 32nd (0x70): Java drops them
    five = bytes([0x82, 0x80, 0x80, 0x80, 0x70])
    decoded = _one(_raw_batch(_record(off_delta=five), 1, base_offset=10))
    assert [r.offset for r in decoded.records] == [11]
    six = bytes([0x82, 0x80, 0x80, 0x80, 0x80, 0x00])  # a 6th byte: Java's readVarint refuses it
    decoded = _one(_raw_batch(_record(off_delta=six), 1))
    assert decoded.records == [] and decoded.error_offset == 0 and decoded.error_reason is not None
    # a header key length near INT64_MAX as a 10-byte varint: an int32 field, so too long (never a
    # MemoryError or an overflowed bounds check)
    headers = b"\x02" + _varint(2**63 - 4) + b"xx" + _varint(-1)
    decoded = _one(_raw_batch(_record(headers=headers), 1))
    assert decoded.error_offset == 0 and decoded.error_reason is not None


def test_the_timestamp_delta_is_a_varlong_that_keeps_64_bits_and_wraps_as_java_longs() -> None:
    # delta 3 as 10 bytes whose last byte carries bits past the 64th (Java's long shift drops them)
    ten = bytes([0x86] + [0x80] * 8 + [0x7E])
    decoded = _one(_raw_batch(_record(ts_delta=ten), 1, first_ts=100))
    assert [r.timestamp for r in decoded.records] == [103]
    decoded = _one(_raw_batch(_record(ts_delta=_varint(10)), 1, first_ts=2**63 - 5))
    assert [r.timestamp for r in decoded.records] == [-(2**63) + 5], "Java's long addition wraps"
    decoded = _one(
        _raw_batch(_record(off_delta=_varint(3)), 1, base_offset=2**63 - 2, last_delta=3),
        fetch_offset=-(2**63),
    )
    assert [r.offset for r in decoded.records] == [-(2**63) + 1]


def test_a_negative_key_or_value_length_is_null_as_in_java() -> None:
    record = _record(key=(_varint(-5), b""), value=(_varint(-2), b""))
    for columns in (False, True):
        decoded = _one(_raw_batch(record, 1), columns=columns)
        got = decoded.records if isinstance(decoded.records, list) else decoded.records.records()
        assert [(r.key, r.value) for r in got] == [(None, None)]
    batch = _one(_raw_batch(record, 1), columns=True).records
    assert not isinstance(batch, list) and list(batch.keys.lengths) == [-1] == list(batch.values.lengths)


def test_a_header_key_that_is_not_utf8_is_read_with_replacement_characters_as_java_does() -> None:
    headers = b"\x02" + _varint(2) + b"\xff\xfe" + _varint(1) + b"x"
    decoded = _one(_raw_batch(_record(headers=headers), 1))
    assert [list(r.headers) for r in decoded.records] == [[("\ufffd\ufffd", b"x")]]


def test_a_negative_record_count_is_an_unreadable_batch_where_java_reads_the_records() -> None:
    assert _one(_raw_batch(b"", -1)).error_offset == 0, "a data batch"
    marker = _control_marker(-1, 7)
    count_at = 57
    bad_marker = bytearray(marker)
    struct.pack_into(">i", bad_marker, count_at, -1)
    bad = _with_valid_crc(struct.unpack_from(">qiibIhiqqqhii", bad_marker), bytes(bad_marker[61:]))
    assert _one(bad, aborted=[(7, 0)]).error_offset == 0, "an ABORT/COMMIT marker read in read_committed"
    assert _one(bad, aborted=None).error_reason is None, "a control batch not read (read_uncommitted)"


def test_aborted_transactions_may_be_lists_or_tuples_and_nothing_else() -> None:
    txn = _raw_batch(_record(), 1, attributes=0x10, pid=7) + _control_marker(0, 7)
    for aborted in ([(7, 0)], [[7, 0]], ((7, 0),)):
        assert _one(txn, aborted=aborted).records == [] and _one(txn, aborted=aborted).next_offset == 2
    for implementation in IMPLEMENTATIONS:
        for bad in ([(7, 0, 1)], [7]):
            with pytest.raises(ValueError, match="producer id, first offset"):
                decode_partition(txn, 0, bad, "t", 0, compiled=implementation)


# -- decompression (review A6) and columns past 2 GiB (review C8) -------------------------------------


def _gzip_batch(values: list[bytes], *, transactional: bool = False, pid: int = -1) -> bytes:
    """A gzip batch of ``values``, each repeated to 200 bytes (kafka-python writes a batch that does not
    shrink uncompressed)."""
    batch = _batch(
        [(None, v * (200 // len(v)), []) for v in values],
        1,
        pid,
        0 if pid >= 0 else -1,
        0 if pid >= 0 else -1,
        transactional,
    )
    assert struct.unpack_from(">h", batch, 21)[0] & 0x07 == 1, "compressed"
    return batch


@pytest.mark.parametrize("raised", [MemoryError, KeyboardInterrupt])
def test_what_a_codec_raises_that_is_not_damaged_data_propagates(
    monkeypatch: pytest.MonkeyPatch, raised: type[BaseException]
) -> None:
    """Out of memory or an interrupt while decompressing is not a corrupt batch: reported as one, its
    advice (seek past the batch) would skip committed records."""

    def fail(_data: bytes) -> bytes:
        raise raised()

    data = _gzip_batch([b"a"])
    monkeypatch.setattr(codecs, "gzip_decode", fail)
    for implementation in IMPLEMENTATIONS:
        with pytest.raises(raised):
            decode_partition(data, 0, [], "t", 0, compiled=implementation)


def test_data_a_codec_cannot_decompress_is_an_unreadable_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    import zlib

    def fail(_data: bytes) -> bytes:
        raise zlib.error("invalid stored block lengths")

    data = _batch([(None, b"ok", [])], 0) + _offset_by(_gzip_batch([b"a"]), 1)
    monkeypatch.setattr(codecs, "gzip_decode", fail)
    decoded = _one(data)
    assert [r.value for r in decoded.records] == [b"ok"] and decoded.error_offset == 1
    assert decoded.error_reason is not None and "invalid stored block lengths" in decoded.error_reason


def test_a_codec_that_is_not_installed_is_a_config_error_naming_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _gzip_batch([b"a"])
    monkeypatch.setattr(codecs, "has_gzip", lambda: False)
    for implementation in IMPLEMENTATIONS:
        with pytest.raises(ConfigError, match="pip install"):
            decode_partition(data, 0, [], "t", 0, compiled=implementation)


def test_an_aborted_transaction_s_batch_is_skipped_without_decompressing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As the Java consumer: an aborted batch is read past, not read (not even decompressed)."""
    data = _gzip_batch([b"aborted"], transactional=True, pid=7) + _control_marker(0, 7)
    monkeypatch.setattr(codecs, "gzip_decode", lambda _data: pytest.fail("decompressed an aborted batch"))
    decoded = _one(data, aborted=[(7, 0)])
    assert decoded.records == [] and decoded.next_offset == 2 and decoded.error_reason is None


def _offset_by(batch: bytes, base_offset: int) -> bytes:
    moved = bytearray(batch)
    struct.pack_into(">q", moved, 0, base_offset)  # outside the CRC, as the broker writes it
    return bytes(moved)


@pytest.fixture
def small_columns() -> Any:
    """Both decoders' columns limited to 8-byte starts (a real 2 GiB chunk is beyond a unit test)."""
    previous = decoder_module._set_column_limit(8)
    yield
    decoder_module._set_column_limit(previous)


def test_columns_past_what_int32_starts_address_raise_instead_of_wrapping(small_columns: Any) -> None:
    """The compiled decoder cast the keys' and values' starts to int32: past 2 GiB in one chunk they
    wrapped and the columns pointed at the wrong bytes (the reference raised OverflowError). Both refuse
    now, with advice; records are not limited."""
    data = _batch([(None, b"12345", []), (None, b"67890", []), (None, b"abcde", [])], 0)
    for implementation in IMPLEMENTATIONS:
        with pytest.raises(OverflowError, match=r"poll\(\) \(records\)"):
            decode_partition(data, 0, [], "t", 0, columns=True, compiled=implementation)
    assert [r.value for r in _one(data).records] == [b"12345", b"67890", b"abcde"]
    fits = _batch([(None, b"1234", []), (None, b"5678", []), (None, b"9", [])], 0)
    assert list(_one(fits, columns=True).records.values) == [b"1234", b"5678", b"9"]


@given(st.lists(_value, min_size=0, max_size=40), st.integers(0, 40), st.integers(0, 40))
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_a_columns_items_are_the_same_compiled_or_not(values: list[bytes | None], lo: int, hi: int) -> None:
    """BytesColumn.to_list (and iteration) - what a column transform reads every value with - gives
    each value as bytes or None, whole or sliced, the same in C as in the reference loop."""
    data = _batch([(v, v, []) for v in values], 0) if values else b""
    batch = decode_partition(data, 0, [], "t", 0, columns=True).records
    assert isinstance(batch, PartitionBatch)
    for column in (batch.values, batch.keys, batch.values[lo:hi]):
        reference = records_module._split(column.buffer, column.starts, column.lengths)
        assert column.to_list() == reference
        assert list(column) == reference == [column[i] for i in range(len(column))]
    if values:
        assert batch.values.to_list() == values and batch.keys.to_list() == values


def test_the_compiled_split_refuses_items_outside_its_buffer() -> None:
    if records_module._SPLIT is None:
        pytest.skip("the compiled extension is not built (pure-Python path)")
    starts, lengths = array.array("i", [0, 5]), array.array("i", [3, 10])
    with pytest.raises(ValueError, match="outside the buffer"):
        records_module._SPLIT(b"abcdefgh", starts, lengths)
    with pytest.raises(ValueError, match="int32 arrays of one length"):
        records_module._SPLIT(b"abc", array.array("i", [0]), array.array("i", [1, 2]))
