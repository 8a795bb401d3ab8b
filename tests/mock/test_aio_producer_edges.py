"""AsyncTransactionalProducer edge cases: the async mirror of ``test_producer_edges.py``.

No awaited call outlives its bound when brokers stop answering; a call in the wrong state fails
at once with the sync producer's error (the same table, ``WRONG``), naming the state; every call
after close() raises ClosedError; a commit whose wait timed out is resumed by awaiting it again.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from kafka.structs import TopicPartition

from tests._support.aio import AsyncProducerFactory, run
from tests.mock.test_producer_edges import ILLEGAL, MARGIN_S, WRONG
from txnproducer import errors
from txnproducer.aio import AsyncTransactionalProducer
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])
Call = Callable[[AsyncTransactionalProducer], Awaitable[object]]


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[AsyncProducerFactory]:
    factory = AsyncProducerFactory(mock_cluster, "tx-aio-edge")
    yield factory
    mock_cluster.black_hole(None, enabled=False)
    mock_cluster.clear_faults()
    factory.close_all(0.5)


# ---------------------------------------------------------------- bounded under a black hole

async def _assert_within(bound_s: float, call: Awaitable[object],
                         raises: type[BaseException] | None = errors.TimeoutError) -> None:
    start = time.monotonic()
    if raises is None:
        await call
    else:
        with pytest.raises(raises):
            await call
    elapsed = time.monotonic() - start
    assert elapsed < bound_s + MARGIN_S, f"took {elapsed:.2f}s for a {bound_s}s bound"


async def _in_transaction(make_producer: Any, cluster: MockCluster,
                          **settings: Any) -> AsyncTransactionalProducer:
    cluster.create_topic("hole", partitions=1)
    producer: AsyncTransactionalProducer = make_producer(linger_ms=0, **settings)
    await producer.init_transactions(10)
    producer.begin_transaction()
    await (await producer.send("hole", b"delivered", partition=0))
    return producer


@TVS
def test_init_transactions_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer()
        mock_cluster.black_hole()
        await _assert_within(0.5, producer.init_transactions(timeout=0.5))

    run(main())


@TVS
def test_commit_transaction_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster)
        await producer.send("hole", b"stuck", partition=0)
        mock_cluster.black_hole()
        await _assert_within(0.5, producer.commit_transaction(timeout=0.5))

    run(main())


@TVS
def test_abort_transaction_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster)
        mock_cluster.black_hole()
        await _assert_within(0.5, producer.abort_transaction(timeout=0.5))

    run(main())


def test_send_offsets_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster)
        mock_cluster.black_hole()
        await _assert_within(0.5, producer.send_offsets_to_transaction(
            {TopicPartition("in", 0): 1}, "g-hole", timeout=0.5))

    run(main())


def test_flush_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster)
        mock_cluster.black_hole()
        await producer.send("hole", b"stuck", partition=0)
        await _assert_within(0.5, producer.flush(timeout=0.5))

    run(main())


def test_send_with_unknown_metadata_is_bounded_by_max_block(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, max_block_ms=500)
        mock_cluster.black_hole()
        await _assert_within(0.5, producer.send("never-seen", b"x"))

    run(main())


def test_send_with_full_buffer_is_bounded_by_max_block(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, max_block_ms=500,
                                         buffer_memory=4096, batch_size=1024)
        mock_cluster.black_hole()

        async def fill() -> None:
            for _ in range(100):
                await producer.send("hole", b"z" * 500, partition=0)

        await _assert_within(0.5, fill())

    run(main())


def test_partitions_for_is_bounded_by_max_block(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, max_block_ms=500)
        mock_cluster.black_hole()
        await _assert_within(0.5, producer.partitions_for("never-seen"))

    run(main())


def test_awaiting_a_record_is_bounded_by_the_delivery_timeout(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, delivery_timeout_ms=1000,
                                         request_timeout_ms=500)
        mock_cluster.black_hole()
        delivery = await producer.send("hole", b"stuck", partition=0)
        await _assert_within(1.5, delivery, raises=errors.DeliveryTimeoutError)

    run(main())


@TVS
def test_close_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster)
        await producer.send("hole", b"stuck", partition=0)
        mock_cluster.black_hole()
        await _assert_within(0.5, producer.close(timeout=0.5), raises=None)
        assert producer.closed

    run(main())


# ---------------------------------------------------------------- calls in the wrong state

async def _send_offsets(p: AsyncTransactionalProducer) -> None:
    await p.send_offsets_to_transaction({TopicPartition("in", 0): 1}, "g-wrong", timeout=5)


async def _begin(p: AsyncTransactionalProducer) -> None:
    p.begin_transaction()


CALLS: dict[str, Call] = {
    "init_transactions": lambda p: p.init_transactions(5),
    "begin_transaction": _begin,
    "send": lambda p: p.send("wrong", b"x", partition=0),
    "send_offsets_to_transaction": _send_offsets,
    "commit_transaction": lambda p: p.commit_transaction(5),
    "abort_transaction": lambda p: p.abort_transaction(5),
}
# the sync producer's table, without the two-phase commit the async producer does not offer
ASYNC_WRONG = {k: v for k, v in WRONG.items() if k[1] in CALLS}


async def _reach(state: str, cluster: MockCluster, make_producer: Any) -> AsyncTransactionalProducer:
    cluster.create_topic("wrong", partitions=1)
    producer: AsyncTransactionalProducer = make_producer(
        "tx-aio-wrong", linger_ms=0, request_timeout_ms=1000, socket_connection_setup_timeout_ms=1000)
    if state == "UNINITIALIZED":
        return producer
    await producer.init_transactions()
    if state == "READY":
        return producer
    producer.begin_transaction()
    if state == "IN_TRANSACTION":
        return producer
    if state == "COMMITTING_TRANSACTION":  # a commit that timed out is still in progress
        await (await producer.send("wrong", b"x", partition=0))
        cluster.black_hole(cluster.coordinator_for("tx-aio-wrong"))
        with pytest.raises(errors.TimeoutError):
            await producer.commit_transaction(0.2)
        return producer
    if state == "ABORTABLE_ERROR":
        cluster.inject_error("Produce", 29)  # TOPIC_AUTHORIZATION_FAILED
        with pytest.raises(errors.TopicAuthorizationError):
            await (await producer.send("wrong", b"x", partition=0))
        return producer
    if state == "FATAL_ERROR":  # fenced by a newer instance
        await (await producer.send("wrong", b"x", partition=0))
        await make_producer("tx-aio-wrong").init_transactions()
        with pytest.raises(errors.ProducerFencedError):
            await producer.commit_transaction(5)
        return producer
    raise AssertionError(state)


@pytest.mark.parametrize(("state", "call"), sorted(ASYNC_WRONG),
                         ids=[f"{s}-{c}" for s, c in sorted(ASYNC_WRONG)])
def test_call_in_wrong_state_fails_naming_the_state(
        mock_cluster: MockCluster, make_producer: Any, state: str, call: str) -> None:
    async def main() -> None:
        producer = await _reach(state, mock_cluster, make_producer)
        assert producer.state.name == state
        expected = ASYNC_WRONG[(state, call)]
        with pytest.raises(expected) as raised:
            await CALLS[call](producer)
        assert state in str(raised.value)
        if expected is ILLEGAL:
            assert producer.state.name == state  # a refused call changes nothing

    run(main())


@pytest.mark.parametrize("state", ["READY", "IN_TRANSACTION", "ABORTABLE_ERROR", "FATAL_ERROR"])
def test_every_call_after_close_raises_closed_error(
        mock_cluster: MockCluster, make_producer: Any, state: str) -> None:
    async def main() -> None:
        producer = await _reach(state, mock_cluster, make_producer)
        await producer.close(5)
        calls: dict[str, Call] = {
            **CALLS, "flush": lambda p: p.flush(1), "partitions_for": lambda p: p.partitions_for("wrong")}
        for name, call in calls.items():
            with pytest.raises(errors.ClosedError, match="closed"):
                await call(producer)
                pytest.fail(f"{name}() did not raise on a closed producer")
        await producer.close(1)  # idempotent

    run(main())


def test_commit_waited_out_after_a_timeout_completes(mock_cluster: MockCluster, make_producer: Any) -> None:
    """A commit that timed out is resumed (not restarted) by awaiting commit_transaction() again."""
    async def main() -> None:
        producer = await _reach("COMMITTING_TRANSACTION", mock_cluster, make_producer)
        since = mock_cluster.requests.next_seq()
        mock_cluster.black_hole(None, enabled=False)
        await producer.commit_transaction(10)  # the lost EndTxn is re-sent after request_timeout_ms
        assert producer.state.name == "READY"
        assert [e.api for e in mock_cluster.request_log[since:] if e.api == "InitProducerId"] == []

    run(main())
    assert [r.value for r in mock_cluster.partition_records("wrong", 0, read_committed=True)] == [b"x"]
