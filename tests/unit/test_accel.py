"""The compiled per-record path (``txnproducer._internal.accel``) behaves as the pure-Python one.

The pure-Python modules are the reference; the extension mirrors parts of them. These tests hold it
to that: the same CRC-32C and murmur2 as kafka-python, futures indistinguishable from the ones
``RecordFuture.__init__`` makes, the accumulator's batches byte for byte the same for random
records, and every case it does not take handed back untouched. The record encoder's own property
tests (``test_record_encoding.py``) run against both implementations. Where the extension is not
built these tests skip, except the ones about choosing the path.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.util import calc_crc32c
from kafka.structs import TopicPartition

from txnproducer._internal import accel
from txnproducer._internal.batching import accumulator as accumulator_module
from txnproducer._internal.batching.accumulator import RecordAccumulator
from txnproducer._internal.batching.batch import ProducerBatch, RecordFuture
from txnproducer._internal.protocol.record_batch import BatchEncoder, encode_headers

compiled = pytest.mark.skipif(accel.SPEEDUPS is None, reason=f"accelerator not active: {accel.REASON}")


def _run(code: str, **env: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env={**os.environ, **env}, check=True)
    return result.stdout.strip()


def test_the_environment_variable_selects_pure_python() -> None:
    out = _run("from txnproducer._internal import accel\n"
               "from txnproducer._internal.protocol import record_batch as rb\n"
               "print(accel.PATH, rb.ActiveBatchEncoder is rb.BatchEncoder)",
               TXNPRODUCER_PURE_PYTHON="1")
    assert out == "pure-python True"


def test_make_test_runs_the_compiled_path() -> None:
    """``make test`` sets TXNPRODUCER_REQUIRE_ACCEL=1: a failed build must not pass as compiled."""
    if os.environ.get("TXNPRODUCER_REQUIRE_ACCEL") != "1":
        pytest.skip("TXNPRODUCER_REQUIRE_ACCEL is not set")
    assert accel.PATH == "compiled", accel.describe()


@compiled
@settings(max_examples=200)
@given(st.binary(max_size=3000))
def test_crc32c_is_kafka_pythons(data: bytes) -> None:
    assert accel.SPEEDUPS.crc32c(data) == calc_crc32c(data)


@compiled
@settings(max_examples=200)
@given(st.binary(max_size=200))
def test_murmur2_is_kafka_pythons(data: bytes) -> None:
    assert accel.SPEEDUPS.murmur2(data) == murmur2(data)


class _Gate:
    producer_id_and_epoch = None

    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool:
        return True

    def has_broker_state(self, tp: TopicPartition) -> bool:
        return True

    def assign_sequence(self, tp: TopicPartition, record_count: int) -> int:
        return 0

    def release_sequence(self, tp: TopicPartition, base_sequence: int, record_count: int) -> None:
        pass


def _accumulator(pure: bool, monkeypatch: pytest.MonkeyPatch, **settings_: int) -> RecordAccumulator:
    """A compiled accumulator, or a pure-Python one (while ``monkeypatch`` is not undone: the
    accumulator builds its batch encoders from the module's ActiveBatchEncoder)."""
    if pure:
        monkeypatch.setattr(accumulator_module, "ActiveBatchEncoder", BatchEncoder)
    acc = RecordAccumulator(transaction_manager=_Gate(), **settings_)
    if pure:
        acc.fast_append = None
        acc.appender = None
    return acc


@compiled
def test_a_compiled_future_is_the_one_record_future_init_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    acc = _accumulator(False, monkeypatch)
    tp = TopicPartition("t", 0)
    acc.append(tp, 5, None, b"first", (), 1.0)  # starts the batch (the Python path)
    assert acc.fast_append is not None
    done = acc.fast_append(tp, 7, b"key", b"value", encode_headers([("h", b"1")]))
    assert done is not None
    future, wake = done
    batch = acc._batches[tp][-1]
    expected = RecordFuture(batch, 1, 7, 3, 5)
    assert type(future) is RecordFuture and wake is False
    for name in RecordFuture.__slots__:
        assert getattr(future, name) == getattr(expected, name), name
    assert batch.record_count == 2


@compiled
def test_the_compiled_append_hands_back_what_it_does_not_take(monkeypatch: pytest.MonkeyPatch) -> None:
    acc = _accumulator(False, monkeypatch, batch_size=200)
    assert acc.fast_append is not None
    tp = TopicPartition("t", 0)
    assert acc.fast_append(tp, 1, None, b"v", b"\x00") is None  # no batch yet
    acc.append(tp, 1, None, b"v", (), 1.0)
    batch = acc._batches[tp][-1]
    assert acc.fast_append(tp, 1, None, b"x" * 300, b"\x00") is None  # does not fit: Python's case
    assert batch.record_count == 1 and batch.full is False  # untouched
    acc.close()
    assert acc.fast_append(tp, 1, None, b"v", b"\x00") is None  # closed: Python raises ClosedError
    assert batch.record_count == 1


_records = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 2**41), st.one_of(st.none(), st.binary(max_size=40)),
              st.one_of(st.none(), st.binary(max_size=3000)),
              st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=20))),
                       max_size=2)),
    min_size=1, max_size=60)


@compiled
@settings(max_examples=60)
@given(records=_records, batch_size=st.sampled_from([200, 1000, 16384, 65536, 262144]))
def test_accumulated_batches_are_byte_identical_on_both_paths(records, batch_size) -> None:
    """Random records into a compiled and a pure accumulator: the same batches, byte for byte,
    the same futures (batch, index, sizes) and the same memory reserved (batches over 16 KiB grow
    their reservation on the way); kafka-python decodes them with valid CRCs."""
    out = {}
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as monkeypatch:
            acc = _accumulator(pure, monkeypatch, batch_size=batch_size)
            encoder = BatchEncoder if pure else accel.SPEEDUPS.BatchEncoder
            tps = [TopicPartition("t", p) for p in range(3)]
            futures = [acc.append(tps[p], ts, key, value, headers, 1.0)[0]
                       for p, ts, key, value, headers in records]
            assert all(type(b.builder) is encoder for dq in acc._batches.values() for b in dq)
            batches: list[bytes] = []
            for tp in tps:
                for sequence, batch in enumerate(acc._batches.get(tp, ())):
                    batch.close(7, 1, sequence * 1000)
                    assert batch.buffer is not None
                    batches.append(bytes(batch.buffer))
            shape = [(f._batch.tp, f._index, f._timestamp, f._key_size, f._value_size) for f in futures]
            out[pure] = (batches, shape, acc.used_memory)
    assert out[False] == out[True]
    decoded = [r for data in out[False][0] for r in DefaultRecordBatch(data)]
    for data in out[False][0]:
        assert DefaultRecordBatch(data).validate_crc()
    assert sorted(((r.timestamp, r.key, r.value) for r in decoded), key=repr) == \
        sorted(((ts, key, value) for _, ts, key, value, _ in records), key=repr)


@compiled
def test_producer_batch_slots_the_extension_reads_are_plain_slots() -> None:
    """The extension reads ProducerBatch.full/builder/record_count and fills RecordFuture's slots
    directly; a change to those classes must show up here (and in the extension's checks)."""
    assert {"full", "builder", "record_count"} <= set(ProducerBatch.__slots__)
    assert sorted(RecordFuture.__slots__) == ["_batch", "_callbacks", "_index", "_key_size", "_timestamp",
                                              "_value_size"]


# -- the extension's private types are safe to misuse (issue 33; `make test-asan` runs these under
# AddressSanitizer and UBSan, where each bug they guard against was a report, not just a wrong answer)


@compiled
@pytest.mark.parametrize("name", ["BatchEncoder", "Appender", "SendPath"])
def test_a_type_cannot_be_made_without_its_arguments(name: str) -> None:
    """Each type is made whole in ``__new__``: without arguments it is a TypeError. Made with
    ``__new__`` alone, BatchEncoder.build() copied a negative length, a SendPath called its NULL
    fallback and an Appender locked a NULL mutex."""
    cls = getattr(accel.SPEEDUPS, name)
    with pytest.raises(TypeError, match=f"{name}\\(\\) missing required argument"):
        cls.__new__(cls)
    with pytest.raises(TypeError):
        cls()


def _appender_args(mutex: object) -> tuple[object, ...]:
    return (object(), {}, mutex, 1024, ProducerBatch, RecordFuture)


@compiled
def test_a_failed_appender_releases_only_what_it_took() -> None:
    """A construction that fails (here: a mutex without acquire/release) must not release references
    it never took: the failed Appender.__init__ released the batch and future classes anyway, one
    reference per failure, until the class was freed while in use."""
    before = (sys.getrefcount(ProducerBatch), sys.getrefcount(RecordFuture))
    for _ in range(3):  # each failure released one reference it never took: a few show it
        with pytest.raises(AttributeError):
            accel.SPEEDUPS.Appender(*_appender_args(object()))
    assert (sys.getrefcount(ProducerBatch), sys.getrefcount(RecordFuture)) == before


@compiled
def test_running_init_again_leaks_nothing() -> None:
    """``__init__`` again on a made Appender changes nothing: it took a second reference to each
    class every time, never released."""
    args = _appender_args(accel.SPEEDUPS.Mutex())
    appender = accel.SPEEDUPS.Appender(*args)
    before = [sys.getrefcount(a) for a in args]
    for _ in range(50):
        appender.__init__(*args)  # type: ignore[misc]
    assert [sys.getrefcount(a) for a in args] == before


@compiled
@pytest.mark.parametrize("timeout", [math.inf, -math.inf, math.nan, 1e300, -1e300, threading.TIMEOUT_MAX * 2])
def test_a_mutex_refuses_a_timeout_as_threading_lock_does(timeout: float) -> None:
    """The timeout is checked as a float before it becomes microseconds: inf, nan and 1e300 converted
    to an undefined integer (negative here: "wait for ever") where threading.Lock raises."""
    with pytest.raises((OverflowError, ValueError)) as lock_says:
        threading.Lock().acquire(timeout=timeout)
    mutex = accel.SPEEDUPS.Mutex()
    with pytest.raises(lock_says.type):
        mutex.acquire(timeout=timeout)
    assert not mutex.locked()


@compiled
def test_a_mutex_takes_the_timeouts_threading_lock_takes() -> None:
    mutex = accel.SPEEDUPS.Mutex()
    assert mutex.acquire(timeout=threading.TIMEOUT_MAX) is True
    assert mutex.acquire(timeout=0.001) is False  # held: times out (rounded up to whole microseconds)
    assert mutex.acquire(blocking=False) is False
    mutex.release()
    with pytest.raises(ValueError, match="non-negative"):
        mutex.acquire(timeout=-0.5)
    with pytest.raises(ValueError, match="non-blocking"):
        mutex.acquire(blocking=False, timeout=1)


@compiled
def test_the_compress_callback_cannot_move_the_buffer_build_copies_from() -> None:
    """build() runs the compress callback, which may run any Python: an append there grew (moved) the
    encoder's buffer, and build() then copied the records from the freed one. Appends are refused
    while build() runs, and what it copies comes from bytes it owns."""
    from txnproducer._internal.protocol import record_batch

    encoder = accel.SPEEDUPS.BatchEncoder(1, True, 1 << 20)  # gzip
    encoder.append(1_700_000_000_000, b"k", b"v" * 100, b"\x00")
    refused: list[BaseException] = []

    def compress(codec: int, data: bytes, gzip_level: int) -> bytes:
        try:
            encoder.append(1_700_000_000_001, None, b"x" * 200_000, b"\x00")  # would realloc the buffer
        except RuntimeError as exc:
            refused.append(exc)
        try:
            encoder.set_producer_state(1, 2, 3, True)
        except RuntimeError as exc:
            refused.append(exc)
        return data + b"longer"  # not smaller: build() writes the uncompressed records

    accel.SPEEDUPS.configure(compress=compress)
    try:
        built = bytes(encoder.build())
    finally:
        accel.SPEEDUPS.configure(compress=record_batch._compress)
    assert [str(e) for e in refused] == [
        "BatchEncoder.append() called while its build() runs the compress callback",
        "BatchEncoder.set_producer_state() called while its build() runs the compress callback"]
    batch = DefaultRecordBatch(built)
    assert batch.validate_crc()
    assert [(r.key, r.value) for r in batch] == [(b"k", b"v" * 100)]
    assert encoder.num_records == 1
