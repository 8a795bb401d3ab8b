"""TransactionalProducerPool (``txnproducer/pool.py``): transactions at the same time from threads.

What a service relies on: N threads each in ``with pool.transaction() as producer:`` run N
transactions at once, each on its own transactional id ``<prefix>-<n>``, and every one commits
whole; more threads than producers wait their turn; a producer that fails fatally is replaced; two
running pools with the same prefix fence each other and the fenced one says so and stops. Overlap is
proven with a barrier every transaction must reach while all are open, not with timing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.producers import TEST_DEFAULTS
from txnproducer import ProducerConfig, TransactionalProducerPool, errors
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster


@pytest.fixture
def make_pool(mock_cluster: MockCluster) -> Iterator[Any]:
    pools: list[TransactionalProducerPool] = []

    def make(prefix: str, size: int, **settings: Any) -> TransactionalProducerPool:
        pool = TransactionalProducerPool(size=size, transactional_id_prefix=prefix,
                                         bootstrap_servers=mock_cluster.bootstrap_servers,
                                         **{**TEST_DEFAULTS, **settings})
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.close(5)


def _committed(cluster: MockCluster, topic: str) -> list[bytes]:
    return sorted(r.value for r in cluster.partition_records(topic, 0, read_committed=True))


def test_a_pool_of_n_runs_n_transactions_at_once(mock_cluster: MockCluster, make_pool: Any) -> None:
    mock_cluster.create_topic("pool-n", partitions=1)
    pool = make_pool("pool-n", 3)
    assert pool.transactional_ids == ["pool-n-0", "pool-n-1", "pool-n-2"]
    pool.init_transactions()
    all_open = threading.Barrier(3, timeout=20)  # passed only while three transactions are open
    used: list[str] = []
    failures: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            with pool.transaction() as producer:
                producer.send("pool-n", b"%d" % n, partition=0)
                used.append(producer.config.transactional_id)
                all_open.wait()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures
    assert sorted(used) == pool.transactional_ids
    assert _committed(mock_cluster, "pool-n") == [b"0", b"1", b"2"]


def test_more_threads_than_producers_take_turns(mock_cluster: MockCluster, make_pool: Any) -> None:
    mock_cluster.create_topic("pool-turns", partitions=1)
    pool = make_pool("pool-turns", 2)
    pool.init_transactions()
    lock = threading.Lock()
    open_now, most = [0], [0]

    def worker(n: int) -> None:
        with pool.transaction() as producer:
            with lock:
                open_now[0] += 1
                most[0] = max(most[0], open_now[0])
            producer.send("pool-turns", b"%d" % n, partition=0).get(10)
            with lock:
                open_now[0] -= 1

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert most[0] <= 2
    assert _committed(mock_cluster, "pool-turns") == sorted(b"%d" % n for n in range(8))


def test_a_producer_that_fails_fatally_is_replaced(mock_cluster: MockCluster, make_pool: Any) -> None:
    mock_cluster.create_topic("pool-fatal", partitions=1)
    pool = make_pool("pool-fatal", 1)
    pool.init_transactions()
    mock_cluster.inject_error("EndTxn", ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    with pytest.raises(errors.TransactionalIdAuthorizationError), pool.transaction() as producer:
        producer.send("pool-fatal", b"refused", partition=0)
    with pool.transaction() as replacement:  # a new producer with the same id, initialized first
        assert replacement is not producer and replacement.config.transactional_id == "pool-fatal-0"
        replacement.send("pool-fatal", b"after", partition=0)
    assert _committed(mock_cluster, "pool-fatal") == [b"after"]


def test_two_running_pools_with_one_prefix_fence_each_other(mock_cluster: MockCluster,
                                                            make_pool: Any) -> None:
    mock_cluster.create_topic("pool-twins", partitions=1)
    first = make_pool("pool-twins", 1)
    first.init_transactions()
    second = make_pool("pool-twins", 1)
    second.init_transactions()  # takes over pool-twins-0: the first pool's producer is a zombie now
    fenced = pytest.raises(errors.ProducerFencedError, match="two running pools must not share a prefix")
    with fenced, first.transaction() as zombie:
        zombie.send("pool-twins", b"zombie", partition=0).get(10)
    with pytest.raises(errors.ProducerFencedError, match="pool-twins"), first.transaction():
        pass  # the fenced pool is closed: it says why at once
    with second.transaction() as producer:
        producer.send("pool-twins", b"survivor", partition=0)
    assert _committed(mock_cluster, "pool-twins") == [b"survivor"]


def test_a_taken_over_pools_first_error_names_the_other_producer_before_a_timeout(
        mock_cluster: MockCluster, make_pool: Any) -> None:
    """The zombie's first error is its record's INVALID_PRODUCER_EPOCH: with its transaction open for
    far less than transaction_timeout_ms, a timeout cannot be the cause, so the message names the other
    producer with the same transactional id first."""
    mock_cluster.create_topic("pool-taken", partitions=1)
    first = make_pool("pool-taken", 1)
    first.init_transactions()
    make_pool("pool-taken", 1).init_transactions()
    with pytest.raises(errors.ProducerFencedError), first.transaction() as zombie:
        with pytest.raises(errors.InvalidProducerEpochError) as seen:
            zombie.send("pool-taken", b"zombie", partition=0).get(10)
        raise seen.value
    message = str(seen.value)
    assert "most likely because another producer with the same transactional_id has started" in message
    assert "longer than transaction_timeout_ms" not in message


def test_a_thread_waits_at_most_max_block_ms_for_a_producer(mock_cluster: MockCluster,
                                                            make_pool: Any) -> None:
    pool = make_pool("pool-wait", 1, max_block_ms=2000)
    pool.init_transactions(timeout=10)
    outcome: list[BaseException] = []

    def waiter() -> None:
        try:
            with pool.transaction():
                pass
        except BaseException as exc:
            outcome.append(exc)

    with pool.transaction():
        thread = threading.Thread(target=waiter)
        thread.start()
        thread.join(10)
    assert isinstance(outcome[0], errors.TimeoutError) and "max_block_ms=2000" in str(outcome[0])
    with pool.transaction():  # given back, usable
        pass


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"size": 0, "transactional_id_prefix": "p"}, "size must be an int >= 1"),
    ({"size": 2}, "transactional_id_prefix must be a non-empty string"),
    ({"size": 2, "transactional_id_prefix": "p", "transactional_id": "x"}, "pass transactional_id_prefix"),
    ({"config": {"transactional.id": "x"}, "size": 2, "transactional_id_prefix": "p"},
     "pass transactional_id_prefix"),
])
def test_pool_settings_are_checked(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(errors.ConfigError, match=match):
        TransactionalProducerPool(bootstrap_servers="127.0.0.1:1", **kwargs)


def test_a_producer_config_is_used_with_the_pools_ids() -> None:
    config = ProducerConfig(transactional_id="ignored", bootstrap_servers="127.0.0.1:1", linger_ms=3)
    with TransactionalProducerPool(config, size=2, transactional_id_prefix="cfg") as pool:
        assert pool.transactional_ids == ["cfg-0", "cfg-1"]
