"""TransactionalProducer under broker faults: leader moves, coordinator moves, timed-out
transactions, injected produce errors, delivery timeouts, concurrent senders and close()."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests._support.producers import ProducerFactory, committed_values
from txnproducer import errors
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-fault", request_timeout_ms=3_000, retry_backoff_ms=20)
    yield factory
    factory.close_all(5)


@pytest.mark.stops_brokers
@TVS
def test_leader_moves_mid_transaction(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("moving", partitions=1)
    producer = make_producer(linger_ms=0)
    producer.init_transactions()
    producer.begin_transaction()
    first = [producer.send("moving", b"a%d" % i, partition=0) for i in range(5)]
    producer.flush(10)
    leader = mock_cluster.leader_of("moving", 0)
    coordinator = mock_cluster.coordinator_for("tx-fault")
    if leader == coordinator:  # keep the coordinator: this test is about the partition leader
        pytest.skip("leader and coordinator on the same broker in this layout")
    mock_cluster.stop_broker(leader)
    second = [producer.send("moving", b"b%d" % i, partition=0) for i in range(5)]
    producer.commit_transaction()
    assert all(f.get(1).offset >= 0 for f in first + second)
    assert committed_values(mock_cluster, "moving", 0) == [b"a%d" % i for i in range(5)] + [
        b"b%d" % i for i in range(5)]


@TVS
def test_coordinator_move_is_followed(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    producer.init_transactions()
    old = mock_cluster.coordinator_for("tx-fault")
    new = next(b for b in mock_cluster.broker_ids if b != old)
    with producer.transaction():
        producer.send("coord", b"1", partition=0)
    mock_cluster.move_coordinator("tx-fault", new)
    with producer.transaction():
        producer.send("coord", b"2", partition=0)
    assert committed_values(mock_cluster, "coord", 0) == [b"1", b"2"]
    ends = [e for e in mock_cluster.request_log if e.api == "EndTxn" and not e.error_codes]
    assert ends[-1].broker_id == new


@pytest.mark.stops_brokers
@TVS
def test_coordinator_broker_stopped_between_transactions(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("survive", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    with producer.transaction():
        producer.send("survive", b"1", partition=0)
    coordinator = mock_cluster.coordinator_for("tx-fault")
    mock_cluster.stop_broker(coordinator)
    with producer.transaction():
        producer.send("survive", b"2", partition=0)
    assert mock_cluster.coordinator_for("tx-fault") != coordinator
    assert committed_values(mock_cluster, "survive", 0) == [b"1", b"2"]


@TVS
def test_retriable_produce_errors_are_retried(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    producer.init_transactions()
    mock_cluster.inject_error("Produce", [6, 19, 7])  # NOT_LEADER, NOT_ENOUGH_REPLICAS, TIMED_OUT
    with producer.transaction():
        futures = [producer.send("retry", b"%d" % i, partition=0) for i in range(5)]
    assert [f.get(1).offset for f in futures] == [0, 1, 2, 3, 4]
    assert committed_values(mock_cluster, "retry", 0) == [b"%d" % i for i in range(5)]


@TVS
def test_fatal_produce_error_makes_commit_fail_and_abort_recovers(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    mock_cluster.inject_error("Produce", 29)  # TOPIC_AUTHORIZATION_FAILED: abortable
    future = producer.send("denied", b"x", partition=0)
    with pytest.raises(errors.TopicAuthorizationError):
        future.get(10)
    with pytest.raises(errors.AbortableError):
        producer.commit_transaction()
    producer.abort_transaction()
    with producer.transaction():
        producer.send("denied", b"ok", partition=0)
    assert committed_values(mock_cluster, "denied", 0) == [b"ok"]


@TVS
def test_transaction_timed_out_by_coordinator(mock_cluster: MockCluster, make_producer: Any) -> None:
    """TV2: abortable, the abort is accepted and the producer continues. TV1: the coordinator's
    epoch bump makes the old epoch fenced (a real broker answers EndTxn v4 PRODUCER_FENCED)."""
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("expire", b"old", partition=0)
    producer.flush(10)
    mock_cluster.expire_transaction("tx-fault")
    producer.send("expire", b"late", partition=0)
    with pytest.raises(errors.AbortableError):
        producer.commit_transaction()
    if mock_cluster.state.transaction_version >= 2:
        producer.abort_transaction()
        with producer.transaction():
            producer.send("expire", b"new", partition=0)
        assert committed_values(mock_cluster, "expire", 0) == [b"new"]
    else:
        with pytest.raises(errors.ProducerFencedError):
            producer.abort_transaction()
        assert committed_values(mock_cluster, "expire", 0) == []


def test_delivery_timeout_fails_records_and_the_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer(delivery_timeout_ms=1200, request_timeout_ms=500, linger_ms=0)
    producer.init_transactions()
    mock_cluster.create_topic("slow", partitions=1)
    producer.begin_transaction()
    producer.send("slow", b"warmup", partition=0).get(5)
    mock_cluster.black_hole(mock_cluster.leader_of("slow", 0))
    future = producer.send("slow", b"stuck", partition=0)
    with pytest.raises(errors.DeliveryTimeoutError):
        future.get(10)
    mock_cluster.black_hole(None, enabled=False)
    mock_cluster.clear_faults()
    with pytest.raises(errors.AbortableError):
        producer.commit_transaction()
    producer.abort_transaction()
    assert committed_values(mock_cluster, "slow", 0) == []


def test_concurrent_senders_lose_nothing(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("many", partitions=3)
    producer = make_producer(batch_size=2048)
    producer.init_transactions()
    producer.begin_transaction()
    failures: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(500):
                producer.send("many", b"%d-%d" % (n, i), key=b"%d" % n)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failures
    producer.commit_transaction()
    values = [v for p in range(3) for v in committed_values(mock_cluster, "many", p)]
    assert len(values) == 2000 and len(set(values)) == 2000
    for n in range(4):  # per key (one partition): the order of one thread's sends is kept
        mine = [v for v in values if v.startswith(b"%d-" % n)]
        assert mine == [b"%d-%d" % (n, i) for i in range(500)]


def test_close_aborts_an_open_transaction(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("closing", b"never", partition=0)
    producer.flush(10)
    producer.close(10)
    assert producer.closed
    assert committed_values(mock_cluster, "closing", 0) == []
    state = mock_cluster.describe_transaction("tx-fault")
    assert state is not None and "Abort" in str(state.get("state"))


def test_buffer_full_send_times_out_within_max_block(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer(buffer_memory=4096, batch_size=1024, max_block_ms=300, linger_ms=0)
    producer.init_transactions(10)  # max_block_ms is small for send(); connecting may take longer
    mock_cluster.create_topic("full", partitions=1)
    producer.begin_transaction()
    producer.send("full", b"w", partition=0).get(5)
    mock_cluster.black_hole(mock_cluster.leader_of("full", 0))
    with pytest.raises(errors.TimeoutError, match="buffer_memory"):
        for _ in range(100):
            producer.send("full", b"z" * 500, partition=0)
    mock_cluster.black_hole(None, enabled=False)


def test_close_is_bounded_when_the_cluster_stops_answering(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer(linger_ms=0)
    producer.init_transactions()
    mock_cluster.create_topic("hang", partitions=1)
    producer.begin_transaction()
    producer.send("hang", b"w", partition=0).get(5)
    mock_cluster.black_hole()
    stuck = producer.send("hang", b"stuck", partition=0)
    done = threading.Event()
    closer = threading.Thread(target=lambda: (producer.close(0.5), done.set()))
    closer.start()
    assert done.wait(10), "close() exceeded its bound"
    closer.join(1)
    mock_cluster.black_hole(None, enabled=False)
    # not delivered: failed by the forced close, or by the abort close() starts first
    assert isinstance(stuck.exception(5), (errors.ClosedError, errors.TransactionAbortedError))
    with pytest.raises(errors.ClosedError):
        producer.send("hang", b"x", partition=0)


@TVS
def test_sequence_error_aborts_then_the_next_transaction_uses_a_new_epoch(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    producer.init_transactions()
    epoch = producer.epoch
    producer.begin_transaction()
    mock_cluster.inject_error("Produce", 45)  # OUT_OF_ORDER_SEQUENCE_NUMBER for the first batch
    future = producer.send("seq", b"lost", partition=0)
    assert isinstance(future.exception(10), errors.OutOfOrderSequenceError)
    with pytest.raises(errors.AbortableError):
        producer.commit_transaction()
    producer.abort_transaction()
    with producer.transaction():
        producer.send("seq", b"kept", partition=0)
    assert producer.epoch > epoch  # TV1: KIP-360 bump by the client; TV2: bumped by EndTxn
    assert committed_values(mock_cluster, "seq", 0) == [b"kept"]
    if mock_cluster.state.transaction_version < 2:
        bumps = [e for e in mock_cluster.request_log
                 if e.api == "InitProducerId" and e.fields.get("producer_id", -1) >= 0]
        assert bumps, "TV1 recovers with InitProducerId(producer_id, epoch)"


@pytest.fixture
def codec_fails_on() -> Iterator[Callable[[bytes], None]]:
    """``codec_fails_on(marker)``: from then on, compressing a batch whose records contain ``marker``
    raises, on either encoder (the pure one calls record_batch._compress, the compiled one the
    function given to ``_speedups.configure``): a batch that cannot be encoded at drain time."""
    from txnproducer._internal import accel
    from txnproducer._internal.protocol import record_batch

    real = record_batch._compress
    markers: list[bytes] = []

    def compress(codec: int, data: bytes, gzip_level: int = -1) -> bytes:
        if any(marker in data for marker in markers):
            raise RuntimeError("the codec failed")
        return real(codec, data, gzip_level)

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(record_batch, "_compress", compress)
        if accel.SPEEDUPS is not None:
            accel.SPEEDUPS.configure(compress=compress)
        try:
            yield markers.append
        finally:
            if accel.SPEEDUPS is not None:
                accel.SPEEDUPS.configure(compress=real)


@TVS
def test_a_batch_that_cannot_be_encoded_fails_its_records_and_the_transaction_not_the_sender(
        mock_cluster: MockCluster, make_producer: Any, codec_fails_on: Callable[[bytes], None],
        caplog: pytest.LogCaptureFixture) -> None:
    """Defence in depth: whatever makes a batch's encoding raise at drain time (here the codec), its
    records fail with BatchEncodingError, the transaction becomes abortable, and the Sender goes on:
    the abort and the next transaction work. Left at the head of its queue, the batch used to fail
    every Sender loop until the thread gave up and the producer was closed."""
    mock_cluster.create_topic("encode", partitions=2)
    producer = make_producer(compression_type="gzip")
    producer.init_transactions()
    codec_fails_on(b"poison")
    producer.begin_transaction()
    good = producer.send("encode", b"fine", partition=0)
    bad = [producer.send("encode", b"poison-%d" % i, partition=1) for i in range(3)]
    with pytest.raises(errors.BatchEncodingError) as failed:
        bad[0].get(10)
    assert "3 record(s) for encode-1 could not be encoded" in str(failed.value)
    assert "RuntimeError: the codec failed" in str(failed.value)
    assert all(isinstance(f.exception(1), errors.BatchEncodingError) for f in bad)
    with pytest.raises(errors.AbortableError):
        producer.commit_transaction(10)
    producer.abort_transaction(10)
    assert good.done()  # sent before the other batch failed (then aborted), or failed with it
    with producer.transaction():
        after = [producer.send("encode", b"after-%d" % p, partition=p) for p in (0, 1)]
    assert [f.get(1).partition for f in after] == [0, 1]
    assert committed_values(mock_cluster, "encode", 0) == [b"after-0"]
    assert committed_values(mock_cluster, "encode", 1) == [b"after-1"]
    assert producer._sender.crashed is None and producer._sender.is_alive()
    assert "txn.batch_encoding_failed" in caplog.text
    assert "txn.sender_loop_error" not in caplog.text
