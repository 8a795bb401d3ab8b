"""Cancellation at each await point of AsyncTransactionalProducer, and close() from any state.

What a service relies on (docs/guide/asyncio.md): a cancelled ``commit_transaction()`` (and init, abort,
send_offsets) goes on and awaiting it again returns its outcome - the call is not started twice; a
cancellation inside ``async with producer.transaction()`` aborts the transaction before it
propagates, and a commit cancelled there is finished by the next ``transaction()``; a cancelled
``send()`` queues nothing and leaves no waiter behind; a cancelled flush or wait for a record stops
only the wait; ``close()`` may be cancelled and awaited again, and ends every call other tasks wait in.

Each test cancels a task only once it is provably suspended at the await point under test: the
call it awaits is in progress (and its answer held back by the MockCluster), or its waiter is
registered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.structs import TopicPartition

from tests._support.aio import AsyncProducerFactory, run, suspended
from tests._support.producers import committed_values
from tests.mock.test_aio_producer_edges import _reach
from txnproducer import errors
from txnproducer.aio import AsyncTransactionalProducer
from txnproducer.testing import MockCluster
from txnproducer.testing.request_log import RequestLogEntry

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])
DELAY_MS = 1500  # an answer held this long: the call is in flight while the test cancels it


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[AsyncProducerFactory]:
    factory = AsyncProducerFactory(mock_cluster, "tx-cancel", request_timeout_ms=5_000)
    yield factory
    mock_cluster.black_hole(None, enabled=False)
    mock_cluster.clear_faults()
    factory.close_all(5)


def _api(name: str) -> Any:
    def match(e: RequestLogEntry) -> bool:
        return e.api == name

    return match


async def _logged(cluster: MockCluster, predicate: Any, timeout: float, since: int = 0) -> None:
    """Until a request is answered (the log records it then), waited for off the loop: the
    producer under test needs the loop meanwhile."""
    await asyncio.to_thread(cluster.wait_for_request, predicate, timeout, since)


async def _waiting_on(producer: AsyncTransactionalProducer, op: str) -> None:
    """Let the tasks run to their next await, then check ``op`` is in progress, not done."""
    await suspended()
    result = producer._core.pending(op)
    assert result is not None and not result.done(), f"{op} is not in progress"


async def _cancel(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and see it end with CancelledError."""
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def _in_transaction(make_producer: Any, cluster: MockCluster, topic: str,
                          **settings: Any) -> AsyncTransactionalProducer:
    cluster.create_topic(topic, partitions=1)
    producer: AsyncTransactionalProducer = make_producer(**settings)
    await producer.init_transactions()
    producer.begin_transaction()
    await producer.send(topic, b"first", partition=0)
    return producer


# ---------------------------------------------------------------- transactional calls go on

@TVS
def test_a_cancelled_commit_goes_on_and_awaiting_it_again_returns_its_outcome(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, "c-commit")
        since = mock_cluster.requests.next_seq()
        mock_cluster.delay_responses("EndTxn", DELAY_MS)
        committing = asyncio.create_task(producer.commit_transaction())
        await _waiting_on(producer, "commit")
        await _cancel(committing)
        assert producer.state.name == "COMMITTING_TRANSACTION"  # the commit goes on
        with pytest.raises(errors.IllegalStateError, match="call commit_transaction\\(\\) again"):
            producer.begin_transaction()
        await producer.commit_transaction()  # the same commit's outcome
        assert producer.state.name == "READY"
        ends = [e for e in mock_cluster.request_log[since:] if e.api == "EndTxn"]
        assert len(ends) == 1 and ends[0].fields["committed"]

    run(main())
    assert committed_values(mock_cluster, "c-commit", 0) == [b"first"]


@TVS
def test_a_cancelled_abort_goes_on_and_awaiting_it_again_returns_its_outcome(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, "c-abort")
        await producer.flush(10)
        since = mock_cluster.requests.next_seq()
        mock_cluster.delay_responses("EndTxn", DELAY_MS)
        aborting = asyncio.create_task(producer.abort_transaction())
        await _waiting_on(producer, "abort")
        await _cancel(aborting)
        assert producer.state.name == "ABORTING_TRANSACTION"
        await producer.abort_transaction()
        assert producer.state.name == "READY"
        assert len([e for e in mock_cluster.request_log[since:] if e.api == "EndTxn"]) == 1

    run(main())
    assert committed_values(mock_cluster, "c-abort", 0) == []


def test_a_cancelled_init_goes_on_and_is_not_sent_twice(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer()
        mock_cluster.delay_responses("InitProducerId", DELAY_MS)
        initializing = asyncio.create_task(producer.init_transactions())
        await _logged(mock_cluster, _api("FindCoordinator"), timeout=10)  # sent by the init
        await _waiting_on(producer, "init")  # its InitProducerId answer is held back
        await _cancel(initializing)
        await producer.init_transactions()
        assert producer.state.name == "READY" and producer.epoch == 0
        assert len([e for e in mock_cluster.request_log if e.api == "InitProducerId"]) == 1

    run(main())


@TVS
def test_cancelled_offsets_go_on_and_commit_with_the_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    api = "TxnOffsetCommit" if mock_cluster.state.transaction_version >= 2 else "AddOffsetsToTxn"

    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, "c-offsets")
        mock_cluster.delay_responses(api, DELAY_MS)
        offsets = {TopicPartition("in", 0): 7}
        sending = asyncio.create_task(producer.send_offsets_to_transaction(offsets, "g-cancel"))
        await _waiting_on(producer, "offsets")
        await _cancel(sending)
        await producer.send_offsets_to_transaction(offsets, "g-cancel")  # waits for the same call
        await producer.commit_transaction()

    run(main())
    assert mock_cluster.committed_offsets("g-cancel") == {("in", 0): 7}
    assert len([e for e in mock_cluster.request_log if e.api == api]) == 1  # not sent twice


# ---------------------------------------------------------------- transaction() aborts

@TVS
def test_a_cancellation_inside_transaction_aborts_it(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("c-body", partitions=1)

    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        inside = asyncio.Event()

        async def handler() -> None:
            async with producer.transaction():
                await producer.send("c-body", b"never", partition=0)
                await producer.flush(10)  # in the log, not committed
                inside.set()
                await asyncio.Event().wait()  # e.g. a client that went away: cancelled here

        task = asyncio.create_task(handler())
        await inside.wait()
        await _cancel(task)
        assert producer.state.name == "READY"  # aborted before the cancellation propagated
        async with producer.transaction():
            await producer.send("c-body", b"kept", partition=0)

    run(main())
    assert committed_values(mock_cluster, "c-body", 0) == [b"kept"]
    ends = [e for e in mock_cluster.request_log if e.api == "EndTxn"]
    assert [e.fields["committed"] for e in ends] == [False, True]


@TVS
def test_a_commit_cancelled_inside_transaction_is_finished_by_the_next_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("c-orphan", partitions=1)

    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        await producer.partitions_for("c-orphan")  # metadata known: send() does not wait

        async def handler(value: bytes) -> None:
            async with producer.transaction():
                await producer.send("c-orphan", value, partition=0)

        mock_cluster.delay_responses("EndTxn", DELAY_MS)
        task = asyncio.create_task(handler(b"one"))
        await _waiting_on(producer, "commit")
        await _cancel(task)
        assert producer.state.name == "COMMITTING_TRANSACTION"
        await handler(b"two")  # waits for the first commit, then runs its own transaction

    run(main())
    assert committed_values(mock_cluster, "c-orphan", 0) == [b"one", b"two"]


def test_an_orphaned_commit_that_failed_is_aborted_by_the_next_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("c-failed", partitions=1)

    async def main() -> None:
        producer = make_producer(linger_ms=0)
        await producer.init_transactions()
        await producer.partitions_for("c-failed")  # metadata known: send() does not wait

        async def handler(value: bytes) -> None:
            async with producer.transaction():
                await producer.send("c-failed", value, partition=0)

        # the record is refused (abortable), and the refusal arrives after the task was cancelled
        mock_cluster.inject_error("Produce", 29)  # TOPIC_AUTHORIZATION_FAILED
        mock_cluster.delay_responses("Produce", DELAY_MS)
        task = asyncio.create_task(handler(b"lost"))
        await _waiting_on(producer, "commit")
        await _cancel(task)
        # the commit fails while nobody awaits it: the next transaction() sees that, aborts, goes on
        await handler(b"next")

    run(main())
    assert committed_values(mock_cluster, "c-failed", 0) == [b"next"]
    ends = [e.fields["committed"] for e in mock_cluster.request_log if e.api == "EndTxn"]
    assert ends[-2:] == [False, True]


# ---------------------------------------------------------------- waits that only stop

def test_a_send_cancelled_while_waiting_for_memory_queues_nothing(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, "c-memory", buffer_memory=4096,
                                         batch_size=1024, linger_ms=0)
        await producer.flush(10)
        core = producer._core
        mock_cluster.black_hole(mock_cluster.leader_of("c-memory", 0))
        sent = [b"fill-%d" % i + b"z" * 500 for i in range(4)]
        for value in sent:  # four batches of 1 KiB reserved (one record each): the pool is full
            await producer.send("c-memory", value, partition=0)
        waiting = asyncio.create_task(producer.send("c-memory", b"cancelled" + b"z" * 500, partition=0))
        await suspended()
        assert len(core.memory_freed) == 1 and core._acc._memory_waiters == 1  # waiting for memory
        await _cancel(waiting)
        assert len(core.memory_freed) == 0 and core._acc._memory_waiters == 0  # nothing left behind
        mock_cluster.black_hole(None, enabled=False)
        await producer.commit_transaction(15)
        return None

    run(main())
    values = committed_values(mock_cluster, "c-memory", 0)
    assert values[0] == b"first" and len(values) == 5 and not any(v.startswith(b"cancelled") for v in values)


def test_a_send_cancelled_while_waiting_for_metadata_queues_nothing() -> None:
    with MockCluster(num_brokers=1, auto_create_topics=False) as cluster:
        factory = AsyncProducerFactory(cluster, "tx-cancel-meta")

        async def main() -> None:
            producer = factory()
            await producer.init_transactions()
            producer.begin_transaction()
            waiting = asyncio.create_task(producer.send("c-later", b"cancelled", partition=0))
            await suspended()
            assert len(producer._core.metadata_changed) == 1  # waiting for the topic's metadata
            await _cancel(waiting)
            assert len(producer._core.metadata_changed) == 0
            cluster.create_topic("c-later", partitions=1)
            await producer.send("c-later", b"kept", partition=0)
            await producer.commit_transaction()

        try:
            run(main())
        finally:
            factory.close_all(5)
        assert [r.value for r in cluster.partition_records("c-later", 0, read_committed=True)] == [b"kept"]


def test_a_cancelled_flush_ends_the_flush_and_records_stay_deliverable(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, "c-flush", linger_ms=0)
        await producer.flush(10)
        mock_cluster.black_hole(mock_cluster.leader_of("c-flush", 0))
        delivery = await producer.send("c-flush", b"second", partition=0)
        flushing = asyncio.create_task(producer.flush())
        await suspended()
        assert producer._core._acc.flush_in_progress
        await _cancel(flushing)
        assert not producer._core._acc.flush_in_progress  # ended: linger applies again
        mock_cluster.black_hole(None, enabled=False)
        await producer.commit_transaction(15)
        assert (await delivery).offset == 1

    run(main())
    assert committed_values(mock_cluster, "c-flush", 0) == [b"first", b"second"]


def test_a_cancelled_wait_for_a_record_leaves_the_record(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, "c-record", linger_ms=0)
        await producer.flush(10)
        mock_cluster.black_hole(mock_cluster.leader_of("c-record", 0))
        delivery = await producer.send("c-record", b"second", partition=0)

        async def wait_for_it() -> None:
            await delivery

        waiting = asyncio.create_task(wait_for_it())
        await suspended()
        await _cancel(waiting)
        assert not delivery.done()
        mock_cluster.black_hole(None, enabled=False)
        await producer.commit_transaction(15)
        assert (await delivery).offset == 1 and delivery.result().offset == 1

    run(main())


# ---------------------------------------------------------------- close()

def test_a_cancelled_close_goes_on_and_awaiting_close_again_waits_for_it(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, "c-close", linger_ms=0)
        await producer.flush(10)
        mock_cluster.delay_responses("EndTxn", DELAY_MS)  # close() aborts: its EndTxn is slow
        closing = asyncio.create_task(producer.close(10))
        await suspended()
        await _cancel(closing)
        assert producer.closed and not producer._core.stopped  # still closing
        await producer.close(10)
        assert producer._core.stopped

    run(main())
    assert committed_values(mock_cluster, "c-close", 0) == []


def test_close_from_another_task_ends_every_call_waiting_there(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, "c-ends", linger_ms=0,
                                         buffer_memory=4096, batch_size=1024)
        await producer.flush(10)
        mock_cluster.black_hole()
        for i in range(4):
            await producer.send("c-ends", b"fill-%d" % i + b"z" * 500, partition=0)
        blocked_send = asyncio.create_task(producer.send("c-ends", b"z" * 500, partition=0))
        flushing = asyncio.create_task(producer.flush())
        await suspended()
        assert not blocked_send.done() and not flushing.done()
        await producer.close(0.5)
        with pytest.raises(errors.ClosedError):
            await blocked_send
        await flushing  # every batch is final (failed by the close)

    run(main())


def test_close_ends_a_commit_waiting_in_another_task(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = await _in_transaction(make_producer, mock_cluster, "c-commit-close", linger_ms=0)
        await producer.flush(10)
        mock_cluster.black_hole(mock_cluster.coordinator_for("tx-cancel"))
        committing = asyncio.create_task(producer.commit_transaction(30))
        await _waiting_on(producer, "commit")
        await producer.close(0.5)
        with pytest.raises(errors.ClosedError):
            await committing

    run(main())


@pytest.mark.parametrize("state", ["UNINITIALIZED", "READY", "IN_TRANSACTION", "COMMITTING_TRANSACTION",
                                   "ABORTABLE_ERROR", "FATAL_ERROR"])
def test_close_is_safe_from_any_state(mock_cluster: MockCluster, make_producer: Any, state: str) -> None:
    async def main() -> None:
        producer = await _reach(state, mock_cluster, make_producer)
        await producer.close(1)
        assert producer.closed and producer._core.stopped
        await producer.close(1)

    run(main())


def test_the_async_producer_has_no_two_phase_commit() -> None:
    """Two-phase commit (prepare/complete) is the Spark sink's, sync only: not offered half-done."""
    assert not hasattr(AsyncTransactionalProducer, "prepare_transaction")
    assert not hasattr(AsyncTransactionalProducer, "complete_transaction")
