"""send() delivers every kind of record as written, on whichever hot path runs.

``make test`` runs this module on the compiled path (where ``send()``'s common case is the
extension's) and again with ``TXNPRODUCER_PURE_PYTHON=1``; the records the broker stores (decoded by
kafka-python, CRC-checked by the MockCluster on the way in) must be the ones sent, keyed records on
the Java client's partition, and concurrent senders must lose or duplicate nothing.
"""

from __future__ import annotations

import array
import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.hot_paths import PATHS, hot_path
from tests._support.producers import ProducerFactory
from txnproducer import errors
from txnproducer._internal import accel
from txnproducer._internal.partitioner import key_partition
from txnproducer.testing import MockCluster


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-paths")
    yield factory
    factory.close_all(1)


def _stored(cluster: MockCluster, topic: str, partitions: int) -> dict[tuple[int, int], Any]:
    return {(p, r.offset): r for p in range(partitions)
            for r in cluster.partition_records(topic, p, read_committed=True)}


@contextlib.contextmanager
def python_send_calls() -> Iterator[list[Any]]:
    """The value of every record that reaches the Python ``TransactionalProducer.send`` on this thread
    meanwhile (this thread's profiler sees every call of a Python function; patching the class's send()
    would rightly stop a producer from installing its compiled path)."""
    from txnproducer.producer import TransactionalProducer

    python_send = TransactionalProducer.send.__code__
    calls: list[Any] = []

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is python_send:
            calls.append(frame.f_locals["value"])

    sys.setprofile(profiler)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def test_every_kind_of_record_is_stored_as_sent(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("mixed", partitions=3)
    producer = make_producer(batch_size=2048)  # several batches per partition
    assert (producer._fast_send is not None) == (accel.PATH == "compiled")
    producer.init_transactions()
    sent = []
    with producer.transaction():
        for i in range(600):
            kind = i % 6
            key = None if kind in (0, 3, 5) else b"key-%d" % (i % 17)
            value: Any = b"value-%d" % i
            kwargs: dict[str, Any] = {}
            if kind == 3:
                value = f"text-{i}"  # a str: the serializer's case
            elif kind == 4:
                kwargs["headers"] = [("h", b"%d" % i), ("n", None)]
            elif kind == 5:
                kwargs["timestamp_ms"] = 1_700_000_000_000 + i
            if i % 50 == 49:
                value = None  # a tombstone
            if i % 40 == 39:
                kwargs["partition"] = 2
            sent.append((producer.send("mixed", value, key=key, **kwargs), key, value, kwargs))
    stored = _stored(mock_cluster, "mixed", 3)
    assert len(stored) == len(sent)
    for future, key, value, kwargs in sent:
        md = future.get(5)
        record = stored[(md.partition, md.offset)]
        if "partition" in kwargs:
            assert md.partition == 2
        elif key is not None:
            assert md.partition == key_partition(key, 3)
        assert record.key == key
        assert record.value == (value.encode() if isinstance(value, str) else value)
        assert [(k, v) for k, v in record.headers] == kwargs.get("headers", [])
        assert record.timestamp == md.timestamp
        if "timestamp_ms" in kwargs:
            assert md.timestamp == kwargs["timestamp_ms"]
        assert md.serialized_key_size == (-1 if key is None else len(key))


def test_concurrent_senders_lose_and_duplicate_nothing(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("many", partitions=3)
    producer = make_producer(batch_size=4096)
    producer.init_transactions()
    threads, per_thread = 6, 1500
    futures: list[list[Any]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)

    def run(n: int) -> None:
        start.wait(10)
        for i in range(per_thread):
            key = b"k%d" % i if i % 3 == 0 else None
            futures[n].append(producer.send("many", b"%d-%d" % (n, i), key=key))

    producer.begin_transaction()
    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    producer.commit_transaction(30)
    stored = _stored(mock_cluster, "many", 3)
    values = sorted(r.value for r in stored.values())
    assert values == sorted(b"%d-%d" % (n, i) for n in range(threads) for i in range(per_thread))
    places = [(f.get(5).partition, f.get(5).offset) for fs in futures for f in fs]
    assert len(set(places)) == threads * per_thread
    for n, fs in enumerate(futures):
        for i, f in enumerate(fs):
            assert stored[(f.get(5).partition, f.get(5).offset)].value == b"%d-%d" % (n, i)


compiled_only = pytest.mark.skipif(accel.PATH != "compiled",
                                   reason="the compiled send path is not built here")


@compiled_only
def test_the_compiled_path_takes_records_only_while_a_transaction_is_open(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The fast path keeps its own flag of the TM's state (pushed on every transition, not read per
    record): it must be open exactly while a transaction is, so that every record outside one goes
    the Python way and gets its IllegalStateError there."""
    from txnproducer import errors
    from txnproducer._internal.txn.state import State

    mock_cluster.create_topic("gate", partitions=1)
    producer = make_producer()
    fast = producer._fast_send
    seen: list[tuple[bool, State]] = []  # (what the listener was told, the TM's state right then)
    told = producer._tm.in_transaction_listener

    def listener(in_transaction: bool) -> None:
        seen.append((in_transaction, producer._tm.state))
        told(in_transaction)

    producer._tm.in_transaction_listener = listener
    assert not fast.is_open()
    with pytest.raises(errors.IllegalStateError):
        producer.send("gate", b"before init")
    producer.init_transactions()
    assert not fast.is_open()
    producer.begin_transaction()
    assert fast.is_open()
    first = producer.send("gate", b"in the first")
    producer.commit_transaction(10)
    assert not fast.is_open() and first.get(5).offset >= 0
    with pytest.raises(errors.IllegalStateError):
        producer.send("gate", b"between transactions")
    producer.begin_transaction()
    assert fast.is_open()
    producer.send("gate", b"aborted")
    producer.abort_transaction(10)
    assert not fast.is_open()
    # told True only once IN_TRANSACTION, False while still IN_TRANSACTION (before it leaves)
    assert [flag for flag, _ in seen] == [True, False, True, False]
    assert all(state is State.IN_TRANSACTION for _, state in seen)
    producer.begin_transaction()
    producer._tm.in_transaction_listener = None  # from here on, only close() may shut the fast path
    producer.close(5)
    assert not fast.is_open()
    with pytest.raises(errors.ClosedError):
        producer.send("gate", b"after close")
    stored = [r.value for r in mock_cluster.partition_records("gate", 0, read_committed=True)]
    assert stored == [b"in the first"]


class _SenderDied(BaseException):
    """Not an Exception: the Sender's loop does not retry it, its last line of defence catches it."""


@compiled_only
def test_the_compiled_path_stops_when_the_sender_thread_dies(
        mock_cluster: MockCluster, make_producer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from txnproducer import errors

    mock_cluster.create_topic("crash", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    assert producer._fast_send.is_open()
    sender = producer._sender
    died = threading.Event()
    real_on_crash = sender.on_crash

    def on_crash() -> None:
        real_on_crash()
        died.set()

    def crash() -> None:
        raise _SenderDied("simulated crash of the network thread")

    sender.on_crash = on_crash
    monkeypatch.setattr(sender, "run_once", crash)
    producer._net.wakeup()
    assert died.wait(10)
    sender.join(10)
    assert not producer._fast_send.is_open()
    with pytest.raises(errors.ClosedError):
        producer.send("crash", b"after the crash")


def test_send_takes_its_arguments_as_the_python_method_declares_them(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """On the compiled path ``producer.send`` is the extension's object, which parses send()'s
    arguments itself: every way of passing them must mean what it means to the Python method, and
    every wrong call must fail with the Python method's own TypeError, queueing nothing."""
    from txnproducer.producer import TransactionalProducer

    mock_cluster.create_topic("args", partitions=2)
    producer = make_producer()
    producer.init_transactions()
    with producer.transaction():
        futures = [
            producer.send("args", b"positional"),
            producer.send("args", b"all six", b"k", 1, 1_700_000_000_001, [("h", b"v")]),
            producer.send(topic="args", value=b"keywords", timestamp_ms=1_700_000_000_002),
            producer.send("args", key=b"k2", value=b"out of order"),
            producer.send("args", None, None, None, None, None),
            producer.send("args", b"headers, empty", headers=[]),
            producer.send("args", b"to 0", partition=0),
        ]
        for wrong_args, wrong_kwargs in [((), {}), (("args", b"v"), {"valeu": b"x"}),
                                         (("args", b"v"), {"value": b"twice"}),
                                         (("args", b"1", None, None, None, None, "seventh"), {}),
                                         ((), {"value": b"no topic"})]:
            with pytest.raises(TypeError) as ours:
                producer.send(*wrong_args, **wrong_kwargs)
            with pytest.raises(TypeError) as python:
                TransactionalProducer.send(producer, *wrong_args, **wrong_kwargs)
            assert str(ours.value) == str(python.value)
    got = [f.get(5) for f in futures]
    stored = _stored(mock_cluster, "args", 2)
    records = [stored[(m.partition, m.offset)] for m in got]
    assert [r.value for r in records] == [b"positional", b"all six", b"keywords", b"out of order", None,
                                          b"headers, empty", b"to 0"]
    assert [r.key for r in records] == [None, b"k", None, b"k2", None, None, None]
    assert (got[1].partition, got[6].partition) == (1, 0)
    assert (records[1].timestamp, records[2].timestamp) == (1_700_000_000_001, 1_700_000_000_002)
    assert [(k, v) for k, v in records[1].headers] == [("h", b"v")]
    assert len(stored) == len(futures)


@compiled_only
def test_the_compiled_path_is_send_itself_and_hands_back_only_what_it_does_not_take(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """``producer.send`` skips the Python method for the common record (a Python frame less per
    record); the method still runs for what the extension hands back: a topic's first record, a
    partition's first explicit record. (Counted with this thread's profiler, which sees
    every call of a Python function: patching the class's send() would rightly stop the producer from
    installing its compiled path.)"""

    mock_cluster.create_topic("itself", partitions=1)
    producer = make_producer(linger_ms=10_000)  # one batch (~12 KB), sent by the commit
    assert producer.send is producer._fast_send
    producer.init_transactions()
    with producer.transaction():
        answers_before = producer._net._metadata_answers
        with python_send_calls() as calls:
            futures = [producer.send("itself", b"%d" % i) for i in range(1000)]
            futures.append(producer.send("itself", b"explicit", partition=0))
        metadata_answers = producer._net._metadata_answers - answers_before
    assert [f.get(5).offset for f in futures] == list(range(1001))
    # the first record (metadata, the first batch); not the 999 others nor the explicit partition (its
    # partition is known), except one for each metadata answer that arrived meanwhile (it empties the
    # partition cache)
    assert calls[0] == b"0" and b"explicit" not in calls[:len(calls) - metadata_answers], calls
    assert 1 <= len(calls) <= 1 + metadata_answers, (calls, metadata_answers)


@compiled_only
def test_a_transactions_first_record_of_each_partition_stays_on_the_compiled_path(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """Every transaction starts a new batch in each partition it writes to (the last one was sent by
    the commit): the compiled path starts it (``RecordAccumulator.try_new_batch``) instead of handing
    the record to the Python send() - explicit, keyed and keyless records alike - and the partitions
    join the transaction as they do there (read_committed sees every record after the commit)."""
    mock_cluster.create_topic("restarts", partitions=3)
    producer = make_producer(linger_ms=10_000)
    producer.init_transactions()

    def transaction(n: int) -> list[Any]:
        with producer.transaction():
            futures = [producer.send("restarts", b"explicit-%d" % n, partition=2),
                       producer.send("restarts", b"keyed-%d" % n, b"key"),
                       producer.send("restarts", b"keyless-%d" % n)]
        return [f.get(5) for f in futures]

    transaction(0)  # the partitions' first records: their TopicPartitions, the sticky choice
    answers_before = producer._net._metadata_answers
    with python_send_calls() as calls:
        got = [transaction(n) for n in (1, 2)]
    metadata_answers = producer._net._metadata_answers - answers_before
    assert len(calls) <= metadata_answers, calls  # (a metadata answer empties the partition cache)
    keyed = key_partition(b"key", 3)
    assert [[m.partition for m in t] for t in got] == [[2, keyed, got[0][2].partition]] * 2
    stored = _stored(mock_cluster, "restarts", 3)
    for n, metadata in zip((1, 2), got, strict=True):
        for m, value in zip(metadata, (b"explicit-%d", b"keyed-%d", b"keyless-%d"), strict=True):
            assert stored[(m.partition, m.offset)].value == value % n


@compiled_only
def test_an_explicit_partition_takes_the_compiled_path_once_the_partition_has_a_batch(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """``send(..., partition=p)``: a plain int naming one of the topic's partitions is the compiled
    path's once p's TopicPartition exists (the Python send() made it for p's first record); what it
    does not take as it is - a bool, an int subclass, a partition the topic does not have - goes to the
    Python send(), which raises the same InvalidRecordError as on the pure-Python path."""

    class Two(int):
        pass

    mock_cluster.create_topic("explicit", partitions=2)
    producer = make_producer(linger_ms=10_000)
    assert producer.send is producer._fast_send
    producer.init_transactions()
    with producer.transaction(), python_send_calls() as calls:
        futures = [producer.send("explicit", b"p1-%d" % i, partition=1) for i in range(3)]
        futures.append(producer.send("explicit", b"p1-subclass", partition=Two(1)))
        futures.append(producer.send("explicit", b"p1-keyed", b"key", 1))
        for wrong in (True, 2, -1, 2**70):
            with pytest.raises(errors.InvalidRecordError, match="does not exist in topic 'explicit'"):
                producer.send("explicit", b"wrong", partition=wrong)
    got = [f.get(5) for f in futures]
    assert [m.partition for m in got] == [1] * 5 and [m.offset for m in got] == list(range(5))
    # the partition's first record (metadata, its TopicPartition, the first batch) and the int
    # subclass; every wrong partition was raised by the Python send()
    assert calls[:1] == [b"p1-0"] and not {b"p1-1", b"p1-2", b"p1-keyed"} & set(calls)
    assert b"p1-subclass" in calls and calls.count(b"wrong") == 4


@compiled_only
def test_a_subclass_or_a_patched_class_keeps_its_send(mock_cluster: MockCluster,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A subclass that overrides send(), or a patch of the class's send() (a mock, a tracing
    wrapper), sees every record: the producer then leaves its compiled path out of ``send``."""
    from tests._support.producers import TEST_DEFAULTS
    from txnproducer.producer import TransactionalProducer

    seen: list[bytes] = []

    class Traced(TransactionalProducer):
        def send(self, topic: str, value: Any = None, *args: Any, **kwargs: Any) -> Any:
            seen.append(value)
            return super().send(topic, value, *args, **kwargs)

    python_send = TransactionalProducer.send

    def patched(self: Any, topic: str, value: Any = None, *args: Any, **kwargs: Any) -> Any:
        seen.append(value)
        return python_send(self, topic, value, *args, **kwargs)

    mock_cluster.create_topic("traced", partitions=1)
    for make in (lambda: Traced, lambda: (monkeypatch.setattr(TransactionalProducer, "send", patched),
                                          TransactionalProducer)[1]):
        seen.clear()
        producer = make()(bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="tx-traced",
                          **TEST_DEFAULTS)
        try:
            assert producer._fast_send is not None  # the fast path runs, behind the override
            producer.init_transactions()
            with producer.transaction():
                futures = [producer.send("traced", b"%d" % i) for i in range(5)]
            offsets = [f.get(5).offset for f in futures]
            assert offsets == list(range(offsets[0], offsets[0] + 5))  # all stored, in order
            assert seen == [b"%d" % i for i in range(5)]
        finally:
            producer.close(5)


def test_a_metadata_update_empties_the_partition_cache_the_send_path_holds(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The compiled path holds the network client's partition cache (one lookup per record, no
    attribute read), so a metadata update must empty that very dict, never replace it: otherwise
    records would keep the partitions of the first metadata forever."""
    mock_cluster.create_topic("cached", partitions=2)
    producer = make_producer()
    producer.init_transactions()
    cache = producer._net.partition_cache
    with producer.transaction():
        first = producer.send("cached", b"before")
        assert cache == {"cached": [0, 1]}
        producer._net._on_metadata(producer._net.cluster)  # what every metadata answer runs
        assert producer._net.partition_cache is cache and cache == {}
        second = producer.send("cached", b"after")  # the Python path looks the topic up again
        assert cache == {"cached": [0, 1]}
    assert first.get(5).offset >= 0 and second.get(5).offset >= 0


class _LenLies(bytes):
    """A bytes subclass whose len() is not its size: its buffer is what goes into the record."""

    def __len__(self) -> int:
        return 0


@pytest.mark.parametrize("path", PATHS)
def test_every_buffer_is_stored_as_its_bytes(mock_cluster: MockCluster, make_producer: Any,
                                             path: str) -> None:
    """Regression (issue 33): ``memoryview(array("i", [1, 2, 3]))`` has len 3 for 12 bytes, and the
    pure-Python encoder wrote 3 as the value's length before its 12 bytes: a corrupt record, which the
    batch's CRC vouched for, so the broker stored it and every consumer of the partition failed at that
    offset (CorruptRecordError). A key, value or header value is taken by its bytes on both paths: read
    back as sent by kafka-python's decoder, with the sizes in RecordMetadata counted in bytes."""
    mock_cluster.create_topic("buffers", partitions=1)
    with hot_path(path):
        producer = make_producer(f"tx-buffers-{path}")
    producer.init_transactions()
    ints = array.array("i", [1, 2, 3])
    grid = bytes(range(12))
    # what is sent (key, value, headers), what must be stored (key, value)
    cases: list[tuple[Any, Any, Any, bytes | None, bytes | None]] = [
        (None, memoryview(ints), None, None, ints.tobytes()),
        (memoryview(array.array("h", [7, -7])), memoryview(array.array("d", [1.5])), None,
         array.array("h", [7, -7]).tobytes(), array.array("d", [1.5]).tobytes()),
        (None, memoryview(grid).cast("B", (3, 4)), None, None, grid),  # 2-dimensional, contiguous
        (None, memoryview(bytearray(b"abcdef"))[1:4], None, None, b"bcd"),
        (None, memoryview(b""), None, None, b""),
        (_LenLies(b"key"), _LenLies(b"lying value"), None, b"key", b"lying value"),
        (None, bytearray(b"a bytearray"), [("h", memoryview(ints)), ("s", bytearray(b"x"))], None,
         b"a bytearray"),
    ]
    with producer.transaction():
        futures = [producer.send("buffers", value, key=key, headers=headers)
                   for key, value, headers, _, _ in cases]
    stored = _stored(mock_cluster, "buffers", 1)  # kafka-python decodes every record
    assert len(stored) == len(cases)
    for future, (_, _, headers, key, value) in zip(futures, cases, strict=True):
        md = future.get(5)
        record = stored[(md.partition, md.offset)]
        assert (record.key, record.value) == (key, value)
        assert (md.serialized_key_size, md.serialized_value_size) == (
            -1 if key is None else len(key), -1 if value is None else len(value))
        if headers:
            assert [(k, v) for k, v in record.headers] == [("h", ints.tobytes()), ("s", b"x")]


@pytest.mark.parametrize("path", PATHS)
def test_a_buffer_that_is_not_one_run_of_bytes_is_refused_and_nothing_queued(
        mock_cluster: MockCluster, make_producer: Any, path: str) -> None:
    """A strided view is not one run of bytes: refused with the typed error of its argument (the
    pure-Python encoder raised BufferError from deep in the accumulator)."""
    mock_cluster.create_topic("strided", partitions=1)
    with hot_path(path):
        producer = make_producer(f"tx-strided-{path}")
    producer.init_transactions()
    strided = memoryview(b"abcdef")[::2]
    released = memoryview(b"gone")
    released.release()
    with producer.transaction():
        with pytest.raises(errors.SerializationError,
                           match="value for topic 'strided' cannot be read as bytes: its buffer is not C-"):
            producer.send("strided", strided)
        with pytest.raises(errors.SerializationError,
                           match="key for topic 'strided' cannot be read as bytes"):
            producer.send("strided", b"v", key=released)
        with pytest.raises(errors.InvalidRecordError, match="header 'h' value cannot be read as bytes"):
            producer.send("strided", b"v", headers=[("h", strided)])
        kept = producer.send("strided", b"kept")
    assert [r.value for r in _stored(mock_cluster, "strided", 1).values()] == [b"kept"]
    assert kept.get(5).offset >= 0


@pytest.mark.parametrize("path", PATHS)
def test_a_timestamp_outside_kafkas_range_is_refused_and_the_transaction_goes_on(
        mock_cluster: MockCluster, make_producer: Any, path: str) -> None:
    """Regression (issue 33): ``timestamp_ms=2**70`` was accepted by the pure-Python path, and building
    its batch raised struct.error in the Sender at every loop until the thread gave up and the producer
    closed (commit_transaction() raised ClosedError); the compiled path raised a bare OverflowError.
    Kafka's timestamps are int64 milliseconds, and the Java client refuses negative ones."""
    mock_cluster.create_topic("ts", partitions=1)
    with hot_path(path):
        producer = make_producer(f"tx-ts-{path}")
    producer.init_transactions()
    producer.begin_transaction()
    for bad in (2**70, 2**63, -1, -(2**70)):
        with pytest.raises(errors.InvalidRecordError) as refused:
            producer.send("ts", b"v", timestamp_ms=bad)
        assert str(refused.value) == ("timestamp_ms must be an int in 0..9223372036854775807 "
                                      f"(milliseconds since the epoch) or None, got {bad}")
    for bad_type in (True, 1.5, "1700000000000"):
        with pytest.raises(errors.InvalidRecordError, match=f"or None, got {type(bad_type).__name__} "):
            producer.send("ts", b"v", timestamp_ms=bad_type)
    top = producer.send("ts", b"top", timestamp_ms=2**63 - 1)
    zero = producer.send("ts", b"zero", timestamp_ms=0)
    producer.commit_transaction(10)
    assert producer._sender.crashed is None
    records = sorted(_stored(mock_cluster, "ts", 1).values(), key=lambda r: r.offset)
    assert [(r.value, r.timestamp) for r in records] == [(b"top", 2**63 - 1), (b"zero", 0)]
    assert (top.get(1).timestamp, zero.get(1).timestamp) == (2**63 - 1, 0)
    with producer.transaction():
        producer.send("ts", b"next")
    assert len(_stored(mock_cluster, "ts", 1)) == 3


@compiled_only
def test_the_compiled_path_releases_every_buffer_view_it_takes(mock_cluster: MockCluster,
                                                               make_producer: Any) -> None:
    """Its encoded "no headers" may be any bytes, a subclass too, which is read through a buffer view:
    the view was never released, one reference to it leaked per record (issue 33)."""
    from txnproducer._internal.partitioner import RECORD_OVERHEAD, StickyPartition
    from txnproducer._internal.protocol.record_batch import NO_HEADERS_ENCODED
    from txnproducer.producer import _PYTHON_SEND

    class Encoded(bytes):
        pass

    mock_cluster.create_topic("views", partitions=1)
    producer = make_producer(linger_ms=10_000)
    producer.init_transactions()
    no_headers = Encoded(NO_HEADERS_ENCODED)
    path = accel.SPEEDUPS.SendPath(
        producer, producer._tm, producer._net, producer._sticky, producer._sticky.current_by_topic,
        producer._config.batch_size, producer._tps, producer._acc.appender, no_headers, RECORD_OVERHEAD,
        True, True, True, StickyPartition, producer._net.partition_cache, producer._added, _PYTHON_SEND)
    with producer.transaction():
        path.set_in_transaction(True)
        path.set_added(producer._added)
        first = producer.send("views", b"first")  # the topic's metadata and first batch: the Python path
        before = sys.getrefcount(no_headers)
        futures = [path.try_send("views", b"%d" % i, None, None, None) for i in range(100)]
        assert sys.getrefcount(no_headers) == before
        path.set_in_transaction(False)
    assert None not in futures
    assert [f.get(5).offset for f in [first, *futures]] == list(range(101))
    assert [r.value for r in _stored(mock_cluster, "views", 1).values()] == [b"first"] + [
        b"%d" % i for i in range(100)]
