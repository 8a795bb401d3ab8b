"""The send path's own record encoders must produce exactly kafka-python's batch bytes.

Brokers and every consumer decode these bytes; the encoder replaced kafka-python's per-record
append for speed only, so any difference (a varint, a delta, the header, the CRC) is a bug. Every
test runs against both implementations: the pure-Python reference and, where it is built, the
compiled one (``txnproducer._internal.accel``).
"""

from __future__ import annotations

import gzip
from unittest import mock

import kafka.codec as codecs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from txnproducer._internal.accel import SPEEDUPS
from txnproducer._internal.protocol import record_batch
from txnproducer._internal.protocol.record_batch import (
    BATCH_HEADER_SIZE,
    BatchEncoder,
    encode_headers,
    varint,
)

ENCODERS = [pytest.param(BatchEncoder, id="pure")]
if SPEEDUPS is not None:
    ENCODERS.append(pytest.param(SPEEDUPS.BatchEncoder, id="compiled"))

_bytes_or_none = st.one_of(
    st.none(), st.just(b""), st.binary(max_size=200),
    st.integers(min_value=8000, max_value=20000).map(lambda n: bytes(i % 251 for i in range(n))))
_headers = st.lists(st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=300))),
                    max_size=4)
_timestamp = st.integers(min_value=0, max_value=2**45)
_record = st.tuples(_timestamp, _bytes_or_none, _bytes_or_none, _headers)
_producer_state = st.one_of(
    st.just((-1, -1, -1, False)),
    st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1),
              st.booleans()))

_CODECS = [0, 1] + [c for c, ok in ((2, codecs.has_snappy()), (3, codecs.has_lz4()),
                                      (4, codecs.has_zstd())) if ok]


def _both(encoder: type, codec: int, records: list[tuple[int, bytes | None, bytes | None,
                                          list[tuple[str, bytes | None]]]],
          state: tuple[int, int, int, bool], batch_size: int) -> tuple[bytes, bytes, int]:
    ours = encoder(codec, True, batch_size, gzip_level=9)  # kafka-python's gzip level
    theirs = DefaultRecordBatchBuilder(2, codec, True, -1, -1, -1, batch_size)
    taken = 0
    for offset, (ts, key, value, headers) in enumerate(records):
        before = ours.size()
        size = ours.append(ts, key, value, encode_headers(headers))
        md = theirs.append(offset, ts, key, value, headers)
        assert (size < 0) == (md is None), "both encoders must agree on when a batch is full"
        if md is None:
            assert ours.size() == before  # a record that does not fit leaves the batch as it was
            break
        assert size == ours.size() and size - before == md.size  # the batch's size, grown by the record
        taken += 1
    pid, epoch, seq, transactional = state
    if transactional and pid < 0:
        transactional = False
    ours.set_producer_state(pid, epoch, seq, transactional)
    theirs.set_producer_state(pid, epoch, seq, transactional)
    return bytes(ours.build()), bytes(theirs.build()), taken


@pytest.mark.parametrize("encoder", ENCODERS)
@settings(max_examples=150)
@given(records=st.lists(_record, min_size=1, max_size=30), state=_producer_state,
       batch_size=st.sampled_from([100, 16384, 1 << 20]))
def test_uncompressed_batch_is_byte_identical_to_kafka_python(encoder, records, state, batch_size) -> None:
    ours, theirs, taken = _both(encoder, 0, records, state, batch_size)
    assert ours == theirs
    batch = DefaultRecordBatch(ours)
    assert batch.validate_crc()
    decoded = list(batch)
    assert len(decoded) == taken
    for i, (rec, (ts, key, value, headers)) in enumerate(zip(decoded, records, strict=False)):
        assert rec.offset == i
        assert rec.timestamp == ts
        assert rec.key == key
        assert rec.value == value
        assert [(k, v) for k, v in rec.headers] == headers


class _FrozenClock:
    """gzip writes the current second into each stream's header (MTIME), so two equal batches
    encoded on either side of a second boundary differ in their bytes and CRC: frozen here."""

    @staticmethod
    def time() -> float:
        return 1_700_000_000.0


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("codec", _CODECS)
@settings(max_examples=25)
@given(records=st.lists(_record, min_size=1, max_size=20), state=_producer_state)
def test_compressed_batch_round_trips(encoder, codec, records, state) -> None:
    with mock.patch.object(gzip, "time", _FrozenClock):
        ours, theirs, taken = _both(encoder, codec, records, state, 1 << 20)
    if codec in (0, 1):  # gzip output is deterministic for equal input; snappy/lz4/zstd may vary
        assert ours == theirs
    batch = DefaultRecordBatch(ours)
    assert batch.validate_crc()
    assert [(r.key, r.value, r.timestamp, list(r.headers)) for r in batch] == \
        [(k, v, t, h) for t, k, v, h in records[:taken]]


@pytest.mark.parametrize("encoder", ENCODERS)
def test_compressible_gzip_batch_is_actually_compressed(encoder) -> None:
    records = [(1_700_000_000_000 + i, b"k", b"a" * 500, []) for i in range(50)]
    with mock.patch.object(gzip, "time", _FrozenClock):
        ours, theirs, _ = _both(encoder, 1, records, (7, 1, 0, True), 1 << 20)
    assert ours == theirs
    batch = DefaultRecordBatch(ours)
    assert batch.compression_type == 1 and batch.is_transactional
    assert batch.producer_id == 7 and batch.base_sequence == 0
    assert [r.value for r in batch] == [b"a" * 500] * 50


@pytest.mark.parametrize("encoder_class", ENCODERS)
def test_gzip_level_is_the_configured_one_and_defaults_to_zlibs(encoder_class) -> None:
    """-1 means zlib's default level (6), as the Java client; kafka-python would use 9."""
    records = [(1_700_000_000_000 + i, None, b"event-%d " % i * 20, []) for i in range(60)]

    def build(level: int) -> bytes:
        encoder = encoder_class(1, True, 1 << 20, gzip_level=level)
        for ts, key, value, headers in records:
            encoder.append(ts, key, value, encode_headers(headers))
        encoder.set_producer_state(7, 1, 0, True)
        return bytes(encoder.build())

    batches = {level: build(level) for level in (-1, 1, 9)}
    # byte 8 of a gzip header (XFL) tells the effort: 2 = level 9, 4 = level 1, 0 = anything else
    assert {level: b[BATCH_HEADER_SIZE + 8] for level, b in batches.items()} == {-1: 0, 1: 4, 9: 2}
    for data in batches.values():
        batch = DefaultRecordBatch(data)
        assert batch.validate_crc() and batch.compression_type == 1
        assert [r.value for r in batch] == [value for _, _, value, _ in records]


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_matches_kafka_python(value: int) -> None:
    from kafka.record.util import encode_varint
    out = bytearray()
    encode_varint(value, out.append)
    assert varint(value) == bytes(out)


@pytest.mark.parametrize("encoder_class", ENCODERS)
def test_restamp_gives_the_batch_another_producer_state_byte_for_byte(encoder_class, monkeypatch) -> None:
    """A batch re-stamped with another producer id, epoch and base sequence is the batch the
    encoder builds with them (UNKNOWN_PRODUCER_ID after retention restarts sequences at 0)."""
    from txnproducer._internal.protocol.record_batch import NO_HEADERS_ENCODED, restamp

    if encoder_class is BatchEncoder:  # the reference: restamp() without the compiled CRC path
        monkeypatch.setattr(record_batch, "_SPEEDUPS", None)

    def build(pid: int, epoch: int, seq: int) -> bytearray:
        encoder = encoder_class(0, True, 16384)
        for i in range(5):
            encoder.append(1_700_000_000_000 + i, b"k%d" % i, b"value-%d" % i, NO_HEADERS_ENCODED)
        encoder.set_producer_state(pid, epoch, seq, True)
        return encoder.build()

    batch = build(7, 3, 1234)
    restamp(batch, 7, 3, 0)
    assert batch == build(7, 3, 0)
    decoded = DefaultRecordBatch(bytes(batch))
    assert decoded.base_sequence == 0 and decoded.validate_crc()
