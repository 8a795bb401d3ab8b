"""AsyncTransactionalProducerPool (``aio/pool.py``): transactions at the same time for asyncio services.

What a service relies on: N handlers in ``async with pool.transaction() as producer:`` run N
transactions at once, each whole, on ids ``<prefix>-<n>``; more handlers than producers wait
(FIFO, bounded, cancellable: a cancelled waiter strands nobody); two running pools with one prefix
fence each other and the fenced pool says so and stops. Overlap is proven with an event every
transaction must reach while all are open, not with timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.aio import run
from tests._support.producers import TEST_DEFAULTS
from txnproducer import errors
from txnproducer.aio import AsyncTransactionalProducerPool
from txnproducer.testing import MockCluster


@pytest.fixture
def make_pool(mock_cluster: MockCluster) -> Iterator[Any]:
    pools: list[AsyncTransactionalProducerPool] = []

    def make(prefix: str, size: int, **settings: Any) -> AsyncTransactionalProducerPool:
        pool = AsyncTransactionalProducerPool(size=size, transactional_id_prefix=prefix,
                                              bootstrap_servers=mock_cluster.bootstrap_servers,
                                              **{**TEST_DEFAULTS, **settings})
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        for member in pool._members:  # the test's loop is gone: the cores' sync close
            member._core.close(5)


def _committed(cluster: MockCluster, topic: str) -> list[bytes]:
    return sorted(r.value for r in cluster.partition_records(topic, 0, read_committed=True))


@pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])
def test_a_pool_of_n_commits_n_transactions_at_once(mock_cluster: MockCluster, make_pool: Any) -> None:
    mock_cluster.create_topic("apool-n", partitions=1)
    size = 4

    async def main() -> list[str]:
        pool = make_pool("apool-n", size)
        await pool.init_transactions()
        inside: list[str] = []
        all_open = asyncio.Event()

        async def handler(n: int) -> None:
            async with pool.transaction() as producer:
                await producer.send("apool-n", b"%d" % n, partition=0)
                inside.append(producer.config.transactional_id)
                if len(inside) == size:
                    all_open.set()
                await asyncio.wait_for(all_open.wait(), 20)  # reached only while all four are open

        await asyncio.gather(*(handler(n) for n in range(size)))
        await pool.close()
        return inside

    inside = run(main())
    assert sorted(inside) == [f"apool-n-{n}" for n in range(size)]
    assert _committed(mock_cluster, "apool-n") == [b"0", b"1", b"2", b"3"]


def test_more_handlers_than_producers_wait_in_order_and_a_cancelled_one_strands_nobody(
        mock_cluster: MockCluster, make_pool: Any) -> None:
    mock_cluster.create_topic("apool-turns", partitions=1)

    async def main() -> list[str]:
        pool = make_pool("apool-turns", 1)
        await pool.init_transactions()
        order: list[str] = []
        queued = {name: asyncio.Event() for name in "BCD"}

        async def handler(name: str) -> None:
            queued[name].set()  # nothing awaited until the pool has queued this task
            async with pool.transaction() as producer:
                order.append(name)
                await producer.send("apool-turns", name.encode(), partition=0)

        async with pool.transaction() as producer:
            await producer.send("apool-turns", b"A", partition=0)
            tasks = {}
            for name in "BCD":
                tasks[name] = asyncio.create_task(handler(name))
                await queued[name].wait()
            tasks["B"].cancel()
        results = await asyncio.gather(*tasks.values(), return_exceptions=True)
        assert isinstance(results[0], asyncio.CancelledError) and results[1:] == [None, None]
        await pool.close()
        return order

    assert run(main()) == ["C", "D"]
    assert _committed(mock_cluster, "apool-turns") == [b"A", b"C", b"D"]


def test_two_running_pools_with_one_prefix_fence_each_other(mock_cluster: MockCluster,
                                                            make_pool: Any) -> None:
    mock_cluster.create_topic("apool-twins", partitions=1)

    async def main() -> None:
        first = make_pool("apool-twins", 2)
        await first.init_transactions()
        second = make_pool("apool-twins", 2)
        await second.init_transactions()  # takes over both ids
        with pytest.raises(errors.ProducerFencedError, match="two running pools must not share a prefix"):
            async with first.transaction() as zombie:
                delivery = await zombie.send("apool-twins", b"zombie", partition=0)
                await delivery
        with pytest.raises(errors.ProducerFencedError, match="apool-twins"):
            async with first.transaction():
                pass
        async with second.transaction() as producer:
            await producer.send("apool-twins", b"survivor", partition=0)
        await second.close()

    run(main())
    assert _committed(mock_cluster, "apool-twins") == [b"survivor"]


def test_a_handler_waits_at_most_max_block_ms_for_a_producer(mock_cluster: MockCluster,
                                                             make_pool: Any) -> None:
    async def main() -> None:
        pool = make_pool("apool-wait", 1, max_block_ms=2000)
        await pool.init_transactions(timeout=10)

        async def impatient() -> None:
            async with pool.transaction():
                raise AssertionError("never given a producer: the only one is busy until this gives up")

        async with pool.transaction():
            with pytest.raises(errors.TimeoutError, match="no producer became free within max_block_ms=2000"):
                await asyncio.create_task(impatient())
        async with pool.transaction():
            pass
        await pool.close()
        with pytest.raises(errors.ClosedError):
            async with pool.transaction():
                pass

    run(main())
