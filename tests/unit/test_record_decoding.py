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

from txnproducer._internal.accel import DECODE
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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


@settings(max_examples=300, deadline=None)
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


@given(st.lists(_value, min_size=0, max_size=40), st.integers(0, 40), st.integers(0, 40))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
