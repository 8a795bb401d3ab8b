"""KIP-447 with aiokafka: offsets sent with an AIOKafkaConsumer's group metadata fence zombies.

aiokafka 0.14 has no ``group_metadata()``; ``send_offsets_to_transaction`` reads the group id,
generation, member id and group instance id from the consumer (``aiokafka_group_metadata``). What a
user relies on: offsets sent with the consumer's current membership commit with the transaction;
offsets sent by an instance whose view of the group is stale - a zombie that missed a rebalance -
are refused (CommitFailedError, abortable) instead of overwriting the new owner's progress. A bare
group id, as aiokafka's own transactional producer sends, is not fenced: that is the difference.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.structs import ConsumerGroupMetadata, TopicPartition

from tests._support.aio import AsyncProducerFactory, run
from tests._support.producers import committed_values
from txnproducer import errors
from txnproducer.aio import aiokafka_group_metadata
from txnproducer.testing import MockCluster

aiokafka = pytest.importorskip("aiokafka")  # a test dependency ([dev]); the library never imports it

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])
GROUP = "g-aio"


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[AsyncProducerFactory]:
    factory = AsyncProducerFactory(mock_cluster, "tx-aio-group")
    yield factory
    factory.close_all(5)


def _consumer(cluster: MockCluster, topic: str) -> Any:
    return aiokafka.AIOKafkaConsumer(
        topic, bootstrap_servers=cluster.bootstrap_servers, group_id=GROUP, enable_auto_commit=False,
        isolation_level="read_committed", auto_offset_reset="earliest", session_timeout_ms=3000,
        heartbeat_interval_ms=100, retry_backoff_ms=50, metadata_max_age_ms=1000)


async def _joined(consumer: Any, generation_above: int = 0) -> ConsumerGroupMetadata:
    """Poll until the consumer holds an assignment in a generation above ``generation_above``."""
    for _ in range(200):
        await consumer.getmany(timeout_ms=50)
        gm = aiokafka_group_metadata(consumer)
        if consumer.assignment() and gm.generation_id > generation_above:
            return gm
    raise AssertionError(f"no assignment above generation {generation_above}: "
                         f"{aiokafka_group_metadata(consumer)}")


@TVS
def test_offsets_with_the_current_membership_commit_with_the_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("g-in", partitions=1)

    async def main() -> ConsumerGroupMetadata:
        consumer = _consumer(mock_cluster, "g-in")
        await consumer.start()
        try:
            gm = await _joined(consumer)
            producer = make_producer()
            await producer.init_transactions()
            async with producer.transaction():
                await producer.send("g-out", b"out", partition=0)
                await producer.send_offsets_to_transaction({TopicPartition("g-in", 0): 3}, consumer)
            return gm
        finally:
            await consumer.stop()

    gm = run(main())
    assert gm.group_id == GROUP and gm.generation_id >= 1 and gm.member_id
    assert mock_cluster.committed_offsets(GROUP) == {("g-in", 0): 3}
    assert committed_values(mock_cluster, "g-out", 0) == [b"out"]
    sent = [e for e in mock_cluster.request_log if e.api == "TxnOffsetCommit"]
    assert sent and sent[-1].version >= 3  # the version that carries generation and member (KIP-447)


@TVS
def test_a_zombie_with_a_stale_generation_is_fenced(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("g-zombie", partitions=2)

    async def main() -> None:
        zombie = _consumer(mock_cluster, "g-zombie")
        await zombie.start()
        newcomer = _consumer(mock_cluster, "g-zombie")
        try:
            stale = await _joined(zombie)  # what the zombie believes: its membership then
            await newcomer.start()
            # a second member joins: the group moves to the next generation
            await asyncio.gather(_joined(newcomer, stale.generation_id),
                                 _joined(zombie, stale.generation_id))
            producer = make_producer()
            await producer.init_transactions()
            producer.begin_transaction()
            await producer.send("g-out", b"zombie", partition=0)
            with pytest.raises(errors.CommitFailedError):
                await producer.send_offsets_to_transaction({TopicPartition("g-zombie", 0): 5}, stale)
            with pytest.raises(errors.AbortableError):
                await producer.commit_transaction()
            await producer.abort_transaction()
            # a bare group id is not fenced (aiokafka's own producer sends only this)
            async with producer.transaction():
                await producer.send_offsets_to_transaction({TopicPartition("g-zombie", 0): 7}, GROUP)
        finally:
            await asyncio.gather(zombie.stop(), newcomer.stop())

    run(main())
    assert mock_cluster.committed_offsets(GROUP) == {("g-zombie", 0): 7}
    assert committed_values(mock_cluster, "g-out", 0) == []


def test_group_metadata_of_a_consumer_without_a_group_or_not_started_is_refused() -> None:
    async def main() -> None:
        no_group = aiokafka.AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1")
        with pytest.raises(errors.ConfigError, match="has no group_id"):
            aiokafka_group_metadata(no_group)
        not_started = aiokafka.AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", group_id="g")
        with pytest.raises(errors.ConfigError, match=r"await consumer.start\(\)"):
            aiokafka_group_metadata(not_started)

    run(main())
