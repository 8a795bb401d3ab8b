"""A producer crosses the end of the epoch range and goes on (TV2 rotation, KAFKA-20090).

Under TV2 every transaction end bumps the epoch, so a busy producer reaches Short.MAX_VALUE in
minutes, and the coordinator rotates it to a new producer id. What a user relies on: crossing by
commit, by abort, and after the coordinator's own abort (transaction timeout) anywhere near the end
loses nothing and shows nothing aborted, the partitions' last stable offset catches up with the high
watermark, and the producer never begins a transaction at epoch 32767 - on Kafka 4.0/4.1 such a
transaction can never end (KAFKA-20090). MockCluster answers at the boundary as Kafka 4.1.0 does
(its default) and as Kafka with the fix does (``kafka_20090_fixed=True``): each scenario runs on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.aio import AsyncProducerFactory, run
from tests._support.producers import ProducerFactory
from txnproducer import errors
from txnproducer._internal.txn.producer_id import ProducerIdAndEpoch
from txnproducer.aio import AsyncTransactionalProducerPool
from txnproducer.pool import TransactionalProducerPool
from txnproducer.producer import TransactionalProducer
from txnproducer.testing import MockCluster

LAST_EPOCH = 32767  # Short.MAX_VALUE
UNKNOWN_SERVER_ERROR = -1
TOPIC = "exhaust"


@pytest.fixture(params=[False, True], ids=["kafka-4.1", "kafka-20090-fixed"])
def cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, transaction_version=2, kafka_20090_fixed=request.param) as c:
        c.create_topic(TOPIC, partitions=2)
        yield c


@pytest.fixture
def make_producer(cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(cluster, "tx-exhaust")
    yield factory
    factory.close_all(0.5)


def producer_at(cluster: MockCluster, make_producer: ProducerFactory, txn_id: str,
                epoch: int) -> TransactionalProducer:
    """A producer whose init_transactions() left it at ``epoch`` (the coordinator fast-forwarded)."""
    make_producer(txn_id).init_transactions()  # registers the id
    cluster.set_producer_epoch(txn_id, epoch - 1)
    producer: TransactionalProducer = make_producer(txn_id)
    producer.init_transactions()
    assert producer.epoch == epoch
    return producer


def state_of(cluster: MockCluster, txn_id: str) -> object:
    described = cluster.describe_transaction(txn_id)
    assert described is not None
    return described["state"]


def commit(producer: TransactionalProducer, value: bytes, committed: list[bytes]) -> None:
    with producer.transaction():
        producer.send(TOPIC, value + b"-0", partition=0)
        producer.send(TOPIC, value + b"-1", partition=1)
    committed += [value + b"-0", value + b"-1"]


def time_out(cluster: MockCluster, producer: TransactionalProducer, value: bytes) -> None:
    """A transaction the coordinator aborts on its own (transaction_timeout_ms); then the
    application aborts it too (its own deadline passed, or it is stopping)."""
    producer.begin_transaction()
    producer.send(TOPIC, value, partition=0).get(5)
    cluster.expire_transaction(producer.config.transactional_id)
    producer.abort_transaction()


def assert_crossed_cleanly(cluster: MockCluster, producer: TransactionalProducer, old_pid: int,
                           committed: list[bytes]) -> None:
    assert producer.producer_id != old_pid and 0 <= producer.epoch < 10
    seen = [r.value for p in (0, 1) for r in cluster.partition_records(TOPIC, p, read_committed=True)]
    assert sorted(seen) == sorted(committed)  # each committed record once, nothing aborted
    with cluster.state.lock:
        for p in (0, 1):
            log = cluster.state.partition_log(TOPIC, p)
            assert log is not None and log.last_stable_offset == log.high_watermark
    tid = producer.config.transactional_id
    assert state_of(cluster, tid) in ("CompleteCommit", "CompleteAbort")
    # nothing began at the last epoch: no record, offset or end carried it (only the InitProducerId
    # that trades it for a new producer id may)
    for entry in cluster.request_log:
        if entry.api in ("Produce", "InitProducerId"):
            epochs = [b[3] for b in entry.fields.get("batches", ())]
        else:
            epochs = [entry.fields.get("producer_epoch")]
        assert LAST_EPOCH not in epochs or entry.api == "InitProducerId", entry
        if entry.api == "EndTxn" and entry.fields.get("transactional_id") == tid:
            assert UNKNOWN_SERVER_ERROR not in entry.error_codes, entry


def test_crossing_by_commit(cluster: MockCluster, make_producer: ProducerFactory) -> None:
    producer = producer_at(cluster, make_producer, "tx-by-commit", LAST_EPOCH - 1)
    old_pid, committed = producer.producer_id, list[bytes]()
    for i in range(3):
        commit(producer, b"c%d" % i, committed)
    assert_crossed_cleanly(cluster, producer, old_pid, committed)


def test_crossing_by_abort(cluster: MockCluster, make_producer: ProducerFactory) -> None:
    producer = producer_at(cluster, make_producer, "tx-by-abort", LAST_EPOCH - 1)
    old_pid, committed = producer.producer_id, list[bytes]()
    producer.begin_transaction()
    producer.send(TOPIC, b"aborted", partition=0).get(5)
    producer.abort_transaction()
    for i in range(2):
        commit(producer, b"c%d" % i, committed)
    assert_crossed_cleanly(cluster, producer, old_pid, committed)


@pytest.mark.parametrize("timeout_at", [LAST_EPOCH - 6, LAST_EPOCH - 3, LAST_EPOCH - 1])
def test_crossing_after_the_coordinator_aborts_on_timeout(
        cluster: MockCluster, make_producer: ProducerFactory, timeout_at: int) -> None:
    """At 32766 the retried abort is answered with epoch 32767 on Kafka 4.1: the producer gets a new
    producer id before its next transaction (InitProducerId with its id at 32767)."""
    producer = producer_at(cluster, make_producer, f"tx-timeout-{timeout_at}", timeout_at)
    old_pid, committed = producer.producer_id, list[bytes]()
    time_out(cluster, producer, b"timed-out")
    assert producer.epoch != LAST_EPOCH
    while producer.producer_id == old_pid:
        commit(producer, b"e%d" % producer.epoch, committed)
    commit(producer, b"after", committed)
    assert_crossed_cleanly(cluster, producer, old_pid, committed)
    bumps = [e for e in cluster.request_log if e.api == "InitProducerId"
             and e.fields.get("producer_epoch") == LAST_EPOCH]
    fixed_broker_rotated = cluster.state.txn._rotate_fenced_exhausted
    assert len(bumps) == (1 if timeout_at == LAST_EPOCH - 1 and not fixed_broker_rotated else 0)


def test_a_commit_after_the_timeout_abort_is_fatal_and_a_new_instance_crosses(
        cluster: MockCluster, make_producer: ProducerFactory) -> None:
    """Kafka 4.1 answers the commit of a transaction it aborted on timeout with INVALID_TXN_STATE
    (fatal: close the producer); the next instance starts under a new producer id."""
    producer = producer_at(cluster, make_producer, "tx-commit-late", LAST_EPOCH - 1)
    old_pid = producer.producer_id
    producer.begin_transaction()
    producer.send(TOPIC, b"timed-out", partition=0).get(5)
    cluster.expire_transaction("tx-commit-late")
    with pytest.raises(errors.InvalidTxnStateError, match="transaction_timeout_ms"):
        producer.commit_transaction()
    producer.close(1)
    successor: TransactionalProducer = make_producer("tx-commit-late")
    successor.init_transactions()
    committed: list[bytes] = []
    commit(successor, b"successor", committed)
    assert_crossed_cleanly(cluster, successor, old_pid, committed)


@pytest.mark.parametrize("cluster", [False], indirect=True, ids=["kafka-4.1"])
def test_kafka_4_1_breaks_an_id_whose_transaction_begins_at_the_last_epoch(
        cluster: MockCluster, make_producer: ProducerFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the client steps around, as MockCluster answers it by default (Kafka 4.1.0, KAFKA-20090):
    a client that keeps epoch 32767 (the way out switched off here) cannot end its next transaction,
    the id stays Ongoing with the partition's last stable offset behind, a new instance cannot
    initialize, and the coordinator's timeout pass stops at it - another id's timed-out transaction
    is not aborted any more."""
    monkeypatch.setattr(ProducerIdAndEpoch, "is_exhausted", property(lambda self: False))
    producer = producer_at(cluster, make_producer, "tx-broken", LAST_EPOCH - 1)
    bystander = make_producer("tx-bystander")  # registered after tx-broken: later in the pass
    bystander.init_transactions()
    time_out(cluster, producer, b"timed-out")
    assert producer.epoch == LAST_EPOCH
    producer.begin_transaction()
    producer.send(TOPIC, b"stuck", partition=0).get(5)
    with pytest.raises(errors.FatalError):
        producer.commit_transaction()
    ends = [e for e in cluster.request_log if e.api == "EndTxn" and e.fields["producer_epoch"] == LAST_EPOCH]
    assert ends and all(e.error_codes == (UNKNOWN_SERVER_ERROR,) for e in ends)
    assert state_of(cluster, "tx-broken") == "Ongoing"
    with cluster.state.lock:
        log = cluster.state.partition_log(TOPIC, 0)
        assert log is not None and log.last_stable_offset < log.high_watermark
    successor: TransactionalProducer = make_producer("tx-broken")
    with pytest.raises(errors.FatalError):
        successor.init_transactions()
    # the bystander's transaction times out after the broken id's in the coordinator's pass: never aborted
    bystander.begin_transaction()
    bystander.send(TOPIC, b"bystander", partition=1).get(5)
    with cluster.state.lock:
        cluster.state.txn.tick(cluster.state.now_ms() + 3_600_000)
    assert state_of(cluster, "tx-bystander") == "Ongoing"


def test_tv1_crossing_after_the_coordinator_fences_a_timed_out_transaction() -> None:
    """TV1 keeps one epoch across transactions; only InitProducerId and the coordinator's fence move
    it. A timeout at 32766 fences the producer (ProducerFencedError: close it); the next instance's
    init_transactions() gets a new producer id, and no transaction ever runs at 32767."""
    with MockCluster(num_brokers=3, transaction_version=1) as cluster:
        cluster.create_topic(TOPIC, partitions=2)
        factory = ProducerFactory(cluster, "tx-tv1-exhaust")
        try:
            producer = producer_at(cluster, factory, "tx-tv1-exhaust", LAST_EPOCH - 1)
            old_pid, committed = producer.producer_id, list[bytes]()
            for i in range(2):
                commit(producer, b"tv1-%d" % i, committed)
            assert producer.epoch == LAST_EPOCH - 1  # TV1: the epoch stays
            producer.begin_transaction()
            producer.send(TOPIC, b"timed-out", partition=0).get(5)
            cluster.expire_transaction("tx-tv1-exhaust")
            with pytest.raises(errors.ProducerFencedError):
                producer.abort_transaction()
            producer.close(1)
            successor: TransactionalProducer = factory("tx-tv1-exhaust")
            successor.init_transactions()
            commit(successor, b"successor", committed)
            assert_crossed_cleanly(cluster, successor, old_pid, committed)
        finally:
            factory.close_all(0.5)


def test_async_producer_crosses_after_a_timeout_at_32766(cluster: MockCluster) -> None:
    factory = AsyncProducerFactory(cluster, "tx-aio-exhaust")
    try:
        make_producer_registered(cluster, "tx-aio-exhaust", LAST_EPOCH - 1)
        producer = factory("tx-aio-exhaust")
        committed: list[bytes] = []

        async def main() -> int:
            await producer.init_transactions()
            assert producer.epoch == LAST_EPOCH - 1
            old_pid = int(producer.producer_id)
            producer.begin_transaction()
            await producer.send(TOPIC, b"timed-out", partition=0)
            cluster.expire_transaction("tx-aio-exhaust")
            await producer.abort_transaction()
            for i in range(2):
                async with producer.transaction():
                    await producer.send(TOPIC, b"aio-%d-0" % i, partition=0)
                    await producer.send(TOPIC, b"aio-%d-1" % i, partition=1)
                committed.extend([b"aio-%d-0" % i, b"aio-%d-1" % i])
            return old_pid

        old_pid = run(main())
        assert_crossed_cleanly(cluster, producer, old_pid, committed)
    finally:
        factory.close_all(0.5)


def test_pool_member_crosses_after_a_timeout_at_32766(cluster: MockCluster) -> None:
    make_producer_registered(cluster, "tx-pool-exhaust-0", LAST_EPOCH - 1)
    with TransactionalProducerPool(bootstrap_servers=cluster.bootstrap_servers, size=1,
                                   transactional_id_prefix="tx-pool-exhaust", max_block_ms=10_000,
                                   request_timeout_ms=5_000) as pool:
        pool.init_transactions()
        with pytest.raises(RuntimeError), pool.transaction() as member:
            assert member.epoch == LAST_EPOCH - 1
            old_pid = member.producer_id
            member.send(TOPIC, b"timed-out", partition=0).get(5)
            cluster.expire_transaction("tx-pool-exhaust-0")
            raise RuntimeError("the application gives up: the pool aborts")
        committed: list[bytes] = []
        for i in range(2):
            with pool.transaction() as member:
                member.send(TOPIC, b"pool-%d" % i, partition=i % 2)
            committed.append(b"pool-%d" % i)
        assert_crossed_cleanly(cluster, member, old_pid, committed)


def make_producer_registered(cluster: MockCluster, txn_id: str, epoch: int) -> None:
    """Leave ``txn_id`` registered so that the next init_transactions() lands on ``epoch``."""
    with TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=txn_id,
                               max_block_ms=10_000) as registering:
        registering.init_transactions()
    cluster.set_producer_epoch(txn_id, epoch - 1)


def test_async_pool_member_crosses_after_a_timeout_at_32766(cluster: MockCluster) -> None:
    make_producer_registered(cluster, "tx-aio-pool-exhaust-0", LAST_EPOCH - 1)
    pool = AsyncTransactionalProducerPool(bootstrap_servers=cluster.bootstrap_servers, size=1,
                                          transactional_id_prefix="tx-aio-pool-exhaust", max_block_ms=10_000,
                                          request_timeout_ms=5_000)
    committed: list[bytes] = []

    async def main() -> tuple[Any, int]:
        await pool.init_transactions()
        with pytest.raises(RuntimeError):
            async with pool.transaction() as member:
                assert member.epoch == LAST_EPOCH - 1
                old_pid = int(member.producer_id)
                await (await member.send(TOPIC, b"timed-out", partition=0))
                cluster.expire_transaction("tx-aio-pool-exhaust-0")
                raise RuntimeError("the application gives up: the pool aborts")
        for i in range(2):
            async with pool.transaction() as member:
                await member.send(TOPIC, b"aio-pool-%d" % i, partition=i % 2)
            committed.append(b"aio-pool-%d" % i)
        return member, old_pid

    try:
        member, old_pid = run(main())
        assert_crossed_cleanly(cluster, member, old_pid, committed)
    finally:
        run(pool.close(1))
