"""AsyncTransactionalProducer under broker faults: the async mirror of ``test_producer_faults.py``.

Leader and coordinator moves, a stopped coordinator, retriable and abortable produce errors,
transactions the coordinator timed out, delivery timeouts, concurrent sending tasks, buffer memory
that stays full, close() with an open transaction and with a broker that stopped answering, and the
epoch bump after a sequence error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.aio import AsyncProducerFactory, run
from tests._support.producers import committed_values
from txnproducer import errors
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[AsyncProducerFactory]:
    factory = AsyncProducerFactory(mock_cluster, "tx-aio-fault", request_timeout_ms=3_000,
                                   retry_backoff_ms=20)
    yield factory
    mock_cluster.black_hole(None, enabled=False)
    mock_cluster.clear_faults()
    factory.close_all(5)


@pytest.mark.stops_brokers
@TVS
def test_leader_moves_mid_transaction(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("moving", partitions=1)
    leader = mock_cluster.leader_of("moving", 0)
    if leader == mock_cluster.coordinator_for("tx-aio-fault"):
        pytest.skip("leader and coordinator on the same broker in this layout")

    async def main() -> None:
        producer = make_producer(linger_ms=0)
        await producer.init_transactions()
        producer.begin_transaction()
        first = [await producer.send("moving", b"a%d" % i, partition=0) for i in range(5)]
        await producer.flush(10)
        mock_cluster.stop_broker(leader)
        second = [await producer.send("moving", b"b%d" % i, partition=0) for i in range(5)]
        await producer.commit_transaction()
        assert all(f.result().offset >= 0 for f in [*first, *second])

    run(main())
    assert committed_values(mock_cluster, "moving", 0) == [b"a%d" % i for i in range(5)] + [
        b"b%d" % i for i in range(5)]


@TVS
def test_coordinator_move_is_followed(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> int:
        producer = make_producer()
        await producer.init_transactions()
        old = mock_cluster.coordinator_for("tx-aio-fault")
        new = next(b for b in mock_cluster.broker_ids if b != old)
        async with producer.transaction():
            await producer.send("coord", b"1", partition=0)
        mock_cluster.move_coordinator("tx-aio-fault", new)
        async with producer.transaction():
            await producer.send("coord", b"2", partition=0)
        return new

    new = run(main())
    assert committed_values(mock_cluster, "coord", 0) == [b"1", b"2"]
    ends = [e for e in mock_cluster.request_log if e.api == "EndTxn" and not e.error_codes]
    assert ends[-1].broker_id == new


@pytest.mark.stops_brokers
@TVS
def test_coordinator_broker_stopped_between_transactions(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("survive", partitions=1)

    async def main() -> int:
        producer = make_producer()
        await producer.init_transactions()
        async with producer.transaction():
            await producer.send("survive", b"1", partition=0)
        coordinator = mock_cluster.coordinator_for("tx-aio-fault")
        mock_cluster.stop_broker(coordinator)
        async with producer.transaction():
            await producer.send("survive", b"2", partition=0)
        return coordinator

    coordinator = run(main())
    assert mock_cluster.coordinator_for("tx-aio-fault") != coordinator
    assert committed_values(mock_cluster, "survive", 0) == [b"1", b"2"]


@TVS
def test_retriable_produce_errors_are_retried(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        mock_cluster.inject_error("Produce", [6, 19, 7])  # NOT_LEADER, NOT_ENOUGH_REPLICAS, TIMED_OUT
        async with producer.transaction():
            futures = [await producer.send("retry", b"%d" % i, partition=0) for i in range(5)]
        assert [(await f).offset for f in futures] == [0, 1, 2, 3, 4]

    run(main())
    assert committed_values(mock_cluster, "retry", 0) == [b"%d" % i for i in range(5)]


@TVS
def test_fatal_produce_error_makes_commit_fail_and_abort_recovers(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        producer.begin_transaction()
        mock_cluster.inject_error("Produce", 29)  # TOPIC_AUTHORIZATION_FAILED: abortable
        delivery = await producer.send("denied", b"x", partition=0)
        with pytest.raises(errors.TopicAuthorizationError):
            await delivery
        with pytest.raises(errors.AbortableError):
            await producer.commit_transaction()
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send("denied", b"ok", partition=0)

    run(main())
    assert committed_values(mock_cluster, "denied", 0) == [b"ok"]


@TVS
def test_transaction_timed_out_by_coordinator(mock_cluster: MockCluster, make_producer: Any) -> None:
    """TV2: abortable, the abort is accepted and the producer goes on. TV1: the coordinator's epoch
    bump fences the old epoch."""
    tv2 = mock_cluster.state.transaction_version >= 2

    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        producer.begin_transaction()
        await producer.send("expire", b"old", partition=0)
        await producer.flush(10)
        mock_cluster.expire_transaction("tx-aio-fault")
        await producer.send("expire", b"late", partition=0)
        with pytest.raises(errors.AbortableError):
            await producer.commit_transaction()
        if tv2:
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send("expire", b"new", partition=0)
        else:
            with pytest.raises(errors.ProducerFencedError):
                await producer.abort_transaction()

    run(main())
    assert committed_values(mock_cluster, "expire", 0) == ([b"new"] if tv2 else [])


def test_delivery_timeout_fails_records_and_the_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer(delivery_timeout_ms=1200, request_timeout_ms=500, linger_ms=0)
        await producer.init_transactions()
        mock_cluster.create_topic("slow", partitions=1)
        producer.begin_transaction()
        await (await producer.send("slow", b"warmup", partition=0))
        mock_cluster.black_hole(mock_cluster.leader_of("slow", 0))
        delivery = await producer.send("slow", b"stuck", partition=0)
        with pytest.raises(errors.DeliveryTimeoutError):
            await delivery
        mock_cluster.black_hole(None, enabled=False)
        mock_cluster.clear_faults()
        with pytest.raises(errors.AbortableError):
            await producer.commit_transaction()
        await producer.abort_transaction()

    run(main())
    assert committed_values(mock_cluster, "slow", 0) == []


def test_concurrent_sending_tasks_lose_nothing(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("many", partitions=3)

    async def main() -> None:
        producer = make_producer(batch_size=2048, buffer_memory=8192)  # tasks wait for memory too
        await producer.init_transactions()
        producer.begin_transaction()

        async def worker(n: int) -> None:
            for i in range(500):
                await producer.send("many", b"%d-%d" % (n, i), key=b"%d" % n)

        await asyncio.gather(*(worker(n) for n in range(4)))
        await producer.commit_transaction()

    run(main())
    values = [v for p in range(3) for v in committed_values(mock_cluster, "many", p)]
    assert len(values) == 2000 and len(set(values)) == 2000
    for n in range(4):  # per key (one partition): the order of one task's sends is kept
        mine = [v for v in values if v.startswith(b"%d-" % n)]
        assert mine == [b"%d-%d" % (n, i) for i in range(500)]


def test_close_aborts_an_open_transaction(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        producer.begin_transaction()
        await producer.send("closing", b"never", partition=0)
        await producer.flush(10)
        await producer.close(10)
        assert producer.closed

    run(main())
    assert committed_values(mock_cluster, "closing", 0) == []
    state = mock_cluster.describe_transaction("tx-aio-fault")
    assert state is not None and "Abort" in str(state.get("state"))


def test_buffer_full_send_times_out_within_max_block(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer(buffer_memory=4096, batch_size=1024, max_block_ms=300, linger_ms=0)
        await producer.init_transactions(10)
        mock_cluster.create_topic("full", partitions=1)
        producer.begin_transaction()
        await (await producer.send("full", b"w", partition=0))
        mock_cluster.black_hole(mock_cluster.leader_of("full", 0))
        start = time.monotonic()
        with pytest.raises(errors.TimeoutError,
                           match="buffer_memory=4096 stayed exhausted for max_block_ms=300"):
            for _ in range(100):
                await producer.send("full", b"z" * 500, partition=0)
        assert time.monotonic() - start < 3.0

    run(main())


def test_close_is_bounded_when_the_cluster_stops_answering(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer(linger_ms=0)
        await producer.init_transactions()
        mock_cluster.create_topic("hang", partitions=1)
        producer.begin_transaction()
        await (await producer.send("hang", b"w", partition=0))
        mock_cluster.black_hole()
        stuck = await producer.send("hang", b"stuck", partition=0)
        start = time.monotonic()
        await producer.close(0.5)
        assert time.monotonic() - start < 8.0, "close() exceeded its bound"
        mock_cluster.black_hole(None, enabled=False)
        # not delivered: failed by the forced close, or by the abort close() starts first
        with pytest.raises((errors.ClosedError, errors.TransactionAbortedError)):
            await stuck
        with pytest.raises(errors.ClosedError):
            await producer.send("hang", b"x", partition=0)

    run(main())


@TVS
def test_sequence_error_aborts_then_the_next_transaction_uses_a_new_epoch(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        epoch = producer.epoch
        producer.begin_transaction()
        mock_cluster.inject_error("Produce", 45)  # OUT_OF_ORDER_SEQUENCE_NUMBER for the first batch
        delivery = await producer.send("seq", b"lost", partition=0)
        with pytest.raises(errors.OutOfOrderSequenceError):
            await delivery
        with pytest.raises(errors.AbortableError):
            await producer.commit_transaction()
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send("seq", b"kept", partition=0)
        assert producer.epoch > epoch  # TV1: KIP-360 bump by the client; TV2: bumped by EndTxn

    run(main())
    assert committed_values(mock_cluster, "seq", 0) == [b"kept"]
    if mock_cluster.state.transaction_version < 2:
        bumps = [e for e in mock_cluster.request_log
                 if e.api == "InitProducerId" and e.fields.get("producer_id", -1) >= 0]
        assert bumps, "TV1 recovers with InitProducerId(producer_id, epoch)"
