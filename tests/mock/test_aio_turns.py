"""One AsyncTransactionalProducer shared by many tasks (``aio/turns.py``; issue 34, item 1).

What a service relies on: request handlers that each run ``async with producer.transaction()`` on
one producer take turns (FIFO, bounded, cancellable) and every transaction commits whole; a task
that does not hold the open transaction cannot write into it (IllegalStateError naming the holder),
while tasks the holder starts inside it can; a transaction whose task ended without ending it does
not block the producer; a ``send()`` whose ``await`` was forgotten does not commit without its
record. Synchronisation is by events and by asyncio's run-to-the-next-await order, never by sleeps.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.aio import AsyncProducerFactory, run
from tests._support.producers import read_committed_via_kafka_python
from txnproducer import TransactionState, errors
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[AsyncProducerFactory]:
    factory = AsyncProducerFactory(mock_cluster, "tx-turns")
    yield factory
    factory.close_all(5)


def _committed(cluster: MockCluster, topic: str, partitions: int) -> list[bytes]:
    return [r.value for p in range(partitions)
            for r in cluster.partition_records(topic, p, read_committed=True)]


@TVS
def test_ten_tasks_sharing_a_producer_commit_every_transaction_whole(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("turns-ten", partitions=3)
    tasks, per_task, records = 10, 10, 5

    async def main() -> None:
        producer = make_producer("tx-turns-ten")
        await producer.init_transactions()

        async def handler(task: int) -> None:
            for n in range(per_task):
                async with producer.transaction():
                    for k in range(records):
                        await producer.send("turns-ten", f"{task}:{n}:{k}".encode(), key=b"%d" % k)
                        await asyncio.sleep(0)  # let the other handlers run (and queue) mid-transaction

        await asyncio.gather(*(handler(t) for t in range(tasks)))

    run(main())
    seen = read_committed_via_kafka_python(mock_cluster, "turns-ten", 3, tasks * per_task * records)
    by_transaction: dict[tuple[str, str], set[str]] = defaultdict(set)
    for value in seen:
        task, n, k = value.decode().split(":")
        by_transaction[(task, n)].add(k)
    assert len(by_transaction) == tasks * per_task  # 100/100 committed
    torn = {txn: ks for txn, ks in by_transaction.items() if len(ks) != records}
    assert not torn
    assert len(seen) == tasks * per_task * records  # and nothing twice


def test_a_send_from_a_task_that_does_not_hold_the_transaction_raises_naming_the_holder(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("turns-foreign", partitions=1)

    async def main() -> None:
        producer = make_producer("tx-turns-foreign")
        await producer.init_transactions()
        holding, done = asyncio.Event(), asyncio.Event()

        async def holder() -> None:
            async with producer.transaction():
                await producer.send("turns-foreign", b"holder's")
                # tasks the holder starts inside its transaction hold it too
                await asyncio.gather(*(producer.send("turns-foreign", b"child's") for _ in range(2)))
                holding.set()
                await done.wait()

        held = asyncio.create_task(holder(), name="holder-handler")
        await holding.wait()
        for call, attempt in (
                ("send", lambda: producer.send("turns-foreign", b"foreign")),
                ("commit_transaction", producer.commit_transaction),
                ("abort_transaction", producer.abort_transaction),
                ("send_offsets_to_transaction",
                 lambda: producer.send_offsets_to_transaction({("turns-foreign", 0): 1}, "g"))):
            with pytest.raises(errors.IllegalStateError, match=f"{call}\\(\\) from task .*held by task "
                                                               "'holder-handler'"):
                await attempt()
        with pytest.raises(errors.IllegalStateError, match="held by task 'holder-handler'"):
            producer.begin_transaction()  # an explicit begin does not wait: it says who holds it
        done.set()
        await held

    run(main())
    assert _committed(mock_cluster, "turns-foreign", 1) == [b"holder's", b"child's", b"child's"]


def test_waiting_tasks_take_their_turn_in_order_and_a_cancelled_waiter_passes_it_on(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("turns-fifo", partitions=1)

    async def main() -> tuple[list[str], BaseException | None]:
        producer = make_producer("tx-turns-fifo")
        await producer.init_transactions()
        order: list[str] = []
        queued = {name: asyncio.Event() for name in "BCDE"}

        async def waiter(name: str) -> None:
            queued[name].set()  # no await until transaction() has queued this task
            async with producer.transaction():
                order.append(name)
                await producer.send("turns-fifo", name.encode())

        async with producer.transaction():
            await producer.send("turns-fifo", b"A")
            tasks = {}
            for name in "BCDE":  # queue one after the other: B first
                tasks[name] = asyncio.create_task(waiter(name), name=name)
                await queued[name].wait()
            tasks["C"].cancel()  # cancelled while waiting: leaves the queue
        # the turn was just handed to B, which has not run yet: cancelled now, B passes it to D
        tasks["B"].cancel()
        results = await asyncio.gather(*tasks.values(), return_exceptions=True)
        cancelled = [n for n, r in zip(tasks, results, strict=True) if isinstance(r, asyncio.CancelledError)]
        assert cancelled == ["B", "C"]
        return order, next((r for r in results if isinstance(r, Exception)), None)

    order, error = run(main())
    assert error is None
    assert order == ["D", "E"]
    assert _committed(mock_cluster, "turns-fifo", 1) == [b"A", b"D", b"E"]


def test_a_waiter_gives_up_after_max_block_ms_naming_the_holder(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("turns-timeout", partitions=1)

    async def main() -> None:
        producer = make_producer("tx-turns-timeout", max_block_ms=2000)
        await producer.init_transactions(timeout=10)  # (max_block_ms is short for the waiter's sake)

        async def impatient() -> None:
            async with producer.transaction():
                raise AssertionError("never granted: the holder waits for this task to give up")

        async def hold() -> None:
            async with producer.transaction():
                waiter = asyncio.create_task(impatient())
                with pytest.raises(errors.TimeoutError, match=r"max_block_ms=2000 .*task 'slow-holder'"):
                    await waiter
                await producer.send("turns-timeout", b"holder's")

        await asyncio.create_task(hold(), name="slow-holder")
        async with producer.transaction():  # the queue is not stranded by the waiter that left
            await producer.send("turns-timeout", b"next")

    run(main())
    assert _committed(mock_cluster, "turns-timeout", 1) == [b"holder's", b"next"]


def test_explicit_begin_holds_the_transaction_until_commit_and_waiters_follow(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("turns-explicit", partitions=1)

    async def main() -> None:
        producer = make_producer("tx-turns-explicit")
        await producer.init_transactions()
        queued = asyncio.Event()

        async def waiter() -> None:
            queued.set()
            async with producer.transaction():
                await producer.send("turns-explicit", b"waiter's")

        producer.begin_transaction()
        await producer.send("turns-explicit", b"explicit")
        waiting = asyncio.create_task(waiter())
        await queued.wait()
        assert not waiting.done()
        await producer.commit_transaction()  # ends this task's hold: the waiter goes next
        await waiting

    run(main())
    assert _committed(mock_cluster, "turns-explicit", 1) == [b"explicit", b"waiter's"]


def test_a_transaction_whose_task_ended_without_ending_it_is_aborted_by_the_next_one(
        mock_cluster: MockCluster, make_producer: Any, caplog: pytest.LogCaptureFixture) -> None:
    mock_cluster.create_topic("turns-abandoned", partitions=1)
    caplog.set_level(logging.WARNING, logger="txnproducer")

    async def main() -> None:
        producer = make_producer("tx-turns-abandoned")
        await producer.init_transactions()

        async def careless() -> None:
            producer.begin_transaction()
            await producer.send("turns-abandoned", b"abandoned")

        await asyncio.create_task(careless(), name="careless-handler")
        with pytest.raises(errors.IllegalStateError, match="task 'careless-handler', which ended without"):
            await producer.send("turns-abandoned", b"joins it?")
        async with producer.transaction():
            await producer.send("turns-abandoned", b"next")

    run(main())
    assert _committed(mock_cluster, "turns-abandoned", 1) == [b"next"]
    assert any("txn.abandoned_transaction_aborted" in r.getMessage() and "careless-handler" in r.getMessage()
               for r in caplog.records)


def test_a_forgotten_await_on_send_does_not_commit_without_the_record(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("turns-await", partitions=1)

    async def main() -> None:
        producer = make_producer("tx-turns-await")
        await producer.init_transactions()
        with pytest.raises(errors.IllegalStateError, match=r"1 send\(\) call\(s\) .* not completed.*aborted"):
            async with producer.transaction():
                await producer.send("turns-await", b"awaited")
                forgotten = producer.send("turns-await", b"forgotten")
        forgotten.close()  # (only to spare the test run the RuntimeWarning)
        producer.begin_transaction()
        await producer.send("turns-await", b"explicit")
        forgotten = producer.send("turns-await", b"forgotten again")
        with pytest.raises(errors.IllegalStateError, match="a forgotten `await`"):
            await producer.commit_transaction()
        await forgotten  # awaited after all: the record joins, and the commit goes ahead
        await producer.commit_transaction()

    run(main())
    assert _committed(mock_cluster, "turns-await", 1) == [b"explicit", b"forgotten again"]


def test_transactions_do_not_nest(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer("tx-turns-nest")
        await producer.init_transactions()
        async with producer.transaction():
            with pytest.raises(errors.IllegalStateError, match="already holds the transaction"):
                async with producer.transaction():
                    pass

    run(main())


def test_a_begin_that_fails_gives_the_turn_back(mock_cluster: MockCluster, make_producer: Any) -> None:
    """An explicit begin refused (here: a cancelled transaction's commit is still under way) must not
    keep the turn, or the next transaction() would wait for nobody until max_block_ms."""
    mock_cluster.create_topic("turns-refused", partitions=1)

    async def main() -> None:
        producer = make_producer("tx-turns-refused", max_block_ms=30_000)
        await producer.init_transactions()
        coordinator = mock_cluster.coordinator_for("tx-turns-refused")
        committing_now = asyncio.Event()

        async def cancelled_in_commit() -> None:
            async with producer.transaction():
                await producer.send("turns-refused", b"committed late")
                mock_cluster.black_hole(coordinator)  # the commit cannot complete until released
                committing_now.set()  # the block's exit starts the commit before this task yields

        committing = asyncio.create_task(cancelled_in_commit())
        await committing_now.wait()
        assert producer.state is TransactionState.COMMITTING_TRANSACTION
        committing.cancel()  # the commit goes on in the background
        with pytest.raises(asyncio.CancelledError):
            await committing
        with pytest.raises(errors.IllegalStateError, match="commit"):
            producer.begin_transaction()  # refused: the commit is still under way
        mock_cluster.black_hole(coordinator, enabled=False)
        async with producer.transaction():  # waits for that commit, then runs: nobody holds the turn
            await producer.send("turns-refused", b"next")

    run(main())
    assert _committed(mock_cluster, "turns-refused", 1) == [b"committed late", b"next"]
