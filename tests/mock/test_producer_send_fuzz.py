"""A differential fuzz of send(): whatever the arguments, a record is stored as sent or refused with
the same typed error on both hot paths, and the Sender never stops.

Hypothesis draws send() calls (keys and values of every buffer kind: bytes, bytearray, memoryviews
of array("i"/"d"/...) and of several dimensions, non-contiguous and released views, a bytes subclass
whose len() lies, text with and without lone surrogates, empty, 1 MiB, wrong types; headers of every
shape; timestamps and partitions in and out of Kafka's ranges, bools, floats, strings; topics of the
wrong type or with invalid names), ten per transaction. Each transaction goes through a producer on
the compiled path and one on the pure-Python path (where the extension is built; else the pure one
alone) against one MockCluster. Every call must either return a future whose record kafka-python's
decoder reads back byte for byte (key, value, headers, timestamp, the partition asked for or the
Java client's partition of the key, the serialized sizes in bytes) or raise the typed error that an
independent model of the rules below expects; the two paths must answer alike, class and message.
Every transaction commits, no Sender loop error is logged, no thread dies.

``TXNPRODUCER_FUZZ_SENDS`` sets the number of send() calls per path (default 200, a few seconds);
``make test-asan`` runs 10,000 per path against the extension built with AddressSanitizer and UBSan.
"""

from __future__ import annotations

import array
import math
import os
import time
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from tests._support.hot_paths import PATHS, hot_path
from tests._support.producers import ProducerFactory
from txnproducer import errors
from txnproducer._internal.partitioner import key_partition
from txnproducer.testing import MockCluster

SENDS = int(os.environ.get("TXNPRODUCER_FUZZ_SENDS", "200"))
PER_TRANSACTION = 10
TOPIC = "fuzz"
PARTITIONS = 3
MIB = 1 << 20

# what the model expects of one argument: its bytes (or None), or the error it must raise
SERIALIZATION, INVALID, TOO_LARGE = errors.SerializationError, errors.InvalidRecordError, \
    errors.RecordTooLargeError


@attrs.frozen
class Arg:
    """An argument as passed, and what the rules make of it: ``value`` (bytes, None, an int, a list
    of headers) or ``error``, the class send() must raise for it."""

    passed: Any
    value: Any = None
    error: type[Exception] | None = None


class _LenLies(bytes):
    """len() says 0: the record must hold its buffer's bytes all the same."""

    def __len__(self) -> int:
        return 0


def _released() -> memoryview:
    view = memoryview(b"released")
    view.release()
    return view


# -- keys and values ------------------------------------------------------------------------------


@st.composite
def _buffers(draw: st.DrawFn, max_size: int = 300) -> Arg:
    """A bytes-like argument and its bytes (or SerializationError for one that is not one run)."""
    raw = draw(st.binary(max_size=max_size))
    kind = draw(st.sampled_from(["bytes", "bytes", "bytes", "bytearray", "view", "slice", "array",
                                 "2d", "strided", "lenlies", "empty-view"]))
    if kind == "bytes":
        return Arg(raw, raw)
    if kind == "bytearray":
        return Arg(bytearray(raw), raw)
    if kind == "view":
        return Arg(memoryview(raw), raw)
    if kind == "slice":
        start = draw(st.integers(0, len(raw)))
        stop = draw(st.integers(start, len(raw)))
        return Arg(memoryview(bytearray(raw))[start:stop], raw[start:stop])
    if kind == "array":
        code = draw(st.sampled_from("bBhHiIlLqQfd"))
        items = array.array(code)
        items.frombytes(raw[: len(raw) - len(raw) % items.itemsize])
        return Arg(memoryview(items), items.tobytes())
    if kind == "2d":
        rows = draw(st.integers(1, 4))
        data = raw[: len(raw) - len(raw) % rows] or b"\x00" * rows  # no zero in a cast's shape
        return Arg(memoryview(data).cast("B", (rows, len(data) // rows)), data)
    if kind == "strided":
        view = memoryview(raw)[::2]
        return Arg(view, raw[::2]) if view.c_contiguous else Arg(view, error=SERIALIZATION)
    if kind == "lenlies":
        return Arg(_LenLies(raw), raw)
    return Arg(memoryview(b""), b"")


_WRONG_TYPES = st.sampled_from([5, 1.5, True, [b"x"], {"k": b"v"}, array.array("i", [1]), object()])

_text = st.one_of(
    st.text(max_size=50).map(lambda s: Arg(s, s.encode())),
    st.sampled_from(["\ud800", "lone \udfff surrogate"]).map(lambda s: Arg(s, error=SERIALIZATION)),
)


def _record_bytes(big: bool) -> st.SearchStrategy[Arg]:
    options = [st.just(Arg(None, None)), _buffers(), _buffers(), _buffers(), _text,
               _WRONG_TYPES.map(lambda v: Arg(v, error=SERIALIZATION)),
               st.builds(_released).map(lambda v: Arg(v, error=SERIALIZATION))]
    if big:  # one record alone: just under max_request_size with everything else, or over it
        options.append(st.sampled_from([MIB - 2048, MIB]).map(
            lambda n: Arg(b"\xa5" * n, b"\xa5" * n) if n < MIB else Arg(b"\xa5" * n, error=TOO_LARGE)))
    return st.one_of(*options)


# -- headers, timestamps, partitions, topics ---------------------------------------------------------


def _header_value() -> st.SearchStrategy[Arg]:
    return st.one_of(
        st.just(Arg(None, None)),
        _buffers(max_size=100).map(lambda a: a if a.error is None else Arg(a.passed, error=INVALID)),
        _text.map(lambda a: a if a.error is None else Arg(a.passed, error=INVALID)),
        _WRONG_TYPES.map(lambda v: Arg(v, error=INVALID)),
    )


_header_name = st.one_of(
    st.text(max_size=10).map(lambda s: Arg(s, s)),
    st.sampled_from(["\udc80", 7, b"name", None]).map(lambda n: Arg(n, error=INVALID)),
)


@st.composite
def _headers(draw: st.DrawFn) -> Arg:
    shape = draw(st.sampled_from(["none", "none", "empty", "list", "list", "dict", "wrong"]))
    if shape == "none":
        return Arg(None, [])
    if shape == "empty":
        return Arg([], [])
    if shape == "wrong":
        return Arg(draw(st.sampled_from([5, "ab", b"ab", [("a",)], ["ab"], [("a", b"1", b"2")]])),
                   error=INVALID)
    pairs = draw(st.lists(st.tuples(_header_name, _header_value()), max_size=3))
    if shape == "dict":
        pairs = [(n, v) for n, v in pairs if isinstance(n.passed, str)]
        names = [n.passed for n, _ in pairs]
        if len(set(names)) != len(names):  # a dict keeps one value per name
            return Arg([], [])
        passed: Any = {n.passed: v.passed for n, v in pairs}
    else:
        passed = [(n.passed, v.passed) for n, v in pairs]
    for name, value in pairs:  # the first bad pair decides, name before value
        if name.error is not None or value.error is not None:
            return Arg(passed, error=INVALID)
    return Arg(passed, [(n.value, v.value) for n, v in pairs])


_timestamps = st.one_of(
    st.just(Arg(None, None)), st.just(Arg(None, None)),
    st.integers(0, 2**63 - 1).map(lambda t: Arg(t, t)),
    st.sampled_from([0, 2**63 - 1, 1_700_000_000_000]).map(lambda t: Arg(t, t)),
    st.sampled_from([-1, 2**63, 2**70, -(2**63), True, False, 1.5, "1700000000000"]).map(
        lambda t: Arg(t, error=INVALID)),
)

_partitions = st.one_of(
    st.just(Arg(None, None)), st.just(Arg(None, None)),
    st.integers(0, PARTITIONS - 1).map(lambda p: Arg(p, p)),
    st.sampled_from([PARTITIONS, -1, 2**31, 2**70, True, False, 1.0, "1"]).map(
        lambda p: Arg(p, error=INVALID)),
)

# a topic of the wrong type, then invalid names (found when its metadata would be fetched)
_BAD_TOPIC_TYPES = ["", None, 5, b"fuzz"]
_BAD_TOPIC_NAMES = ["bad topic!", "x" * 300, "\udc80"]
_topics = st.one_of(*[st.just(Arg(TOPIC, TOPIC))] * 8,
                    st.sampled_from(_BAD_TOPIC_TYPES + _BAD_TOPIC_NAMES).map(lambda t: Arg(t, error=INVALID)))


@attrs.frozen
class Call:
    topic: Arg
    key: Arg
    value: Arg
    partition: Arg
    timestamp: Arg
    headers: Arg
    positional: bool

    def invoke(self, producer: Any) -> Any:
        if self.positional:
            return producer.send(self.topic.passed, self.value.passed, self.key.passed, self.partition.passed,
                                 self.timestamp.passed, self.headers.passed)
        kwargs = {"value": self.value.passed, "key": self.key.passed}
        for name, arg in (("partition", self.partition), ("timestamp_ms", self.timestamp),
                          ("headers", self.headers)):
            if arg.passed is not None:
                kwargs[name] = arg.passed
        return producer.send(self.topic.passed, **kwargs)

    def expected_error(self) -> type[Exception] | None:
        """The model of send()'s order of checks: the topic's type; key, value, headers, timestamp;
        the topic's name (when its metadata would be fetched); the partition; the record's size."""
        if self.topic.error is not None and self.topic.passed not in _BAD_TOPIC_NAMES:
            return self.topic.error
        for arg in (self.key, self.value, self.headers, self.timestamp, self.topic, self.partition):
            if arg.error is not None and arg.error is not TOO_LARGE:
                return arg.error
        return self.value.error


_calls = st.builds(Call, topic=_topics, key=_record_bytes(big=False), value=_record_bytes(big=True),
                   partition=_partitions, timestamp=_timestamps, headers=_headers(), positional=st.booleans())


# -- reading back ---------------------------------------------------------------------------------


class Reader:
    """The committed records of the topic that appeared since the last call, decoded by kafka-python
    (MemoryRecords), with every batch's CRC checked: (partition, offset) -> record."""

    def __init__(self, cluster: MockCluster) -> None:
        self._cluster = cluster
        self._next = dict.fromkeys(range(PARTITIONS), 0)

    def new_records(self) -> dict[tuple[int, int], Any]:
        out: dict[tuple[int, int], Any] = {}
        for partition in range(PARTITIONS):
            with self._cluster.state.lock:
                log = self._cluster.state.partition_log(TOPIC, partition)
                assert log is not None
                data, end = log.read(self._next[partition], 2**62, log.last_stable_offset, min_one=True)
            records = MemoryRecords(bytes(data))
            while records.has_next():
                batch = records.next_batch()
                assert batch.validate_crc()
                if not batch.is_control_batch:
                    out.update(((partition, r.offset), r) for r in batch)
            self._next[partition] = max(self._next[partition], end)
        return out


def _answer(call: Call, outcome: Any, stored: dict[tuple[int, int], Any]) -> tuple[Any, ...]:
    """What one call did, checked against the model; comparable between the paths."""
    expected = call.expected_error()
    if isinstance(outcome, BaseException):
        assert type(outcome) is expected, (call, outcome)
        return ("refused", type(outcome).__name__, str(outcome))
    assert expected is None, (call, expected)
    md = outcome.get(0)
    record = stored.pop((md.partition, md.offset))
    key, value = call.key.value, call.value.value
    assert (record.key, record.value) == (key, value)
    assert [(k, v) for k, v in record.headers] == call.headers.value
    assert (md.serialized_key_size, md.serialized_value_size) == (
        -1 if key is None else len(key), -1 if value is None else len(value))
    assert md.timestamp == record.timestamp
    if call.timestamp.value is not None:
        assert record.timestamp == call.timestamp.value
    if call.partition.value is not None:
        assert md.partition == call.partition.value
    elif key is not None:
        assert md.partition == key_partition(key, PARTITIONS)
    return ("stored", md.serialized_key_size, md.serialized_value_size, record.key, record.value,
            list(record.headers), None if call.timestamp.value is None else record.timestamp,
            md.partition if call.partition.value is not None or key is not None else None)


@pytest.fixture
def producers(mock_cluster: MockCluster) -> Iterator[dict[str, Any]]:
    mock_cluster.create_topic(TOPIC, partitions=PARTITIONS)
    factory = ProducerFactory(mock_cluster, "tx-fuzz")
    made = {}
    for path in PATHS:
        with hot_path(path):
            made[path] = factory(f"tx-fuzz-{path}", linger_ms=100)  # a transaction's sends share batches
        made[path].init_transactions()
    yield made
    factory.close_all(5)


@pytest.mark.timeout(120 + SENDS // 10)  # the suite's 120 s, and room for make test-asan's 10,000 sends
def test_send_stores_or_refuses_alike_on_both_paths(mock_cluster: MockCluster, producers: dict[str, Any],
                                                    caplog: pytest.LogCaptureFixture) -> None:
    reader = Reader(mock_cluster)
    sends = dict.fromkeys(producers, 0)
    answers_checked = 0

    @settings(max_examples=math.ceil(SENDS / PER_TRANSACTION), database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(_calls, min_size=PER_TRANSACTION, max_size=PER_TRANSACTION))
    def one_transaction_per_path(calls: list[Call]) -> None:
        nonlocal answers_checked
        answers: dict[str, list[tuple[Any, ...]]] = {}
        for path, producer in producers.items():
            outcomes: list[Any] = []
            producer.begin_transaction()
            for call in calls:
                try:
                    outcomes.append(call.invoke(producer))
                except errors.TxnProducerError as exc:  # anything else is a failure of the test
                    outcomes.append(exc)
                sends[path] += 1
            producer.commit_transaction(30)
            stored = reader.new_records()
            answers[path] = [_answer(call, outcome, stored)
                             for call, outcome in zip(calls, outcomes, strict=True)]
            assert stored == {}, "records stored that no send() returned a future for"
            assert producer._sender.crashed is None and producer._sender.is_alive()
        first, *others = answers.values()
        for other in others:
            assert other == first
        answers_checked += len(first)

    started = time.monotonic()
    one_transaction_per_path()
    elapsed = time.monotonic() - started
    assert all(n >= SENDS for n in sends.values()), sends
    for event in ("txn.sender_loop_error", "txn.sender_crashed", "txn.batch_encoding_failed"):
        assert event not in caplog.text
    print(f"\nsend() fuzz: {sends} sends per path ({answers_checked} calls answered alike), "
          f"{elapsed:.1f} s")
