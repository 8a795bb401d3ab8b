"""A confluent-kafka user's code meets the producer where it is (issue 34, item 2 and 6).

What a user relies on: ``TransactionalProducer({...})`` takes the configuration mapping their
confluent-kafka ``Producer({...})`` took (Java spellings; librdkafka's own names are refused, all at
once, naming the setting to use); a confluent-kafka consume loop feeds ``send_offsets_to_transaction``
as it fed confluent's producer - ``consumer.position(...)`` lists and
``consumer.consumer_group_metadata()`` - and keeps KIP-447 zombie fencing: offsets sent with a
membership the group has moved on from are refused (CommitFailedError), never committed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.structs import ConsumerGroupMetadata, MemberState, TopicPartition

from tests._support.aio import run
from tests._support.producers import TEST_DEFAULTS, ProducerFactory, committed_values
from txnproducer import TransactionalProducer, errors
from txnproducer._internal.txn.offsets import parse_librdkafka_group_metadata
from txnproducer.aio import AsyncTransactionalProducer
from txnproducer.testing import MockCluster

confluent_kafka = pytest.importorskip("confluent_kafka")

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-ck-users")
    yield factory
    factory.close_all(5)


def _confluent_config(cluster: MockCluster, txn_id: str) -> dict[str, Any]:
    """What a confluent-kafka user writes, with the test suite's short bounds."""
    return {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id,
            "linger.ms": 1, "acks": "all", "enable.idempotence": True, "compression.type": "none",
            "max.block.ms": TEST_DEFAULTS["max_block_ms"], "request.timeout.ms": 5000,
            "delivery.timeout.ms": 20000}


def test_a_confluent_style_mapping_given_positionally_configures_the_producer(
        mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("ck-map", partitions=1)
    with TransactionalProducer(_confluent_config(mock_cluster, "tx-ck-map")) as producer:
        assert producer.config.linger_ms == 1 and producer.config.transactional_id == "tx-ck-map"
        producer.init_transactions()
        with producer.transaction():
            producer.send("ck-map", b"sync")

    async def main() -> None:
        async with AsyncTransactionalProducer(_confluent_config(mock_cluster, "tx-ck-map-aio")) as producer:
            await producer.init_transactions()
            async with producer.transaction():
                await producer.send("ck-map", b"async")

    run(main())
    assert committed_values(mock_cluster, "ck-map", 0) == [b"sync", b"async"]


def test_librdkafka_spellings_are_refused_together_with_the_settings_to_use() -> None:
    config = {"bootstrap.servers": "127.0.0.1:1", "transactional.id": "tx-ck-refused",
              "queue.buffering.max.ms": 5, "message.timeout.ms": 30000, "sasl.password": "s3cret-pw"}
    with pytest.raises(errors.ConfigError) as refused:
        TransactionalProducer(config)
    message = str(refused.value)
    assert "'queue.buffering.max.ms' -> 'linger.ms'" in message
    assert "'message.timeout.ms' -> 'delivery.timeout.ms'" in message
    assert "'sasl.password' -> 'sasl.plain.password'" in message
    assert "s3cret-pw" not in message


def _confluent_consumer(cluster: MockCluster, group: str, **extra: Any) -> Any:
    return confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "enable.auto.commit": False,
        "isolation.level": "read_committed", "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000, "heartbeat.interval.ms": 100, "topic.metadata.refresh.interval.ms": 1000,
        **extra})


def _joined(consumer: Any, above: int = 0, timeout_s: float = 30.0) -> ConsumerGroupMetadata:
    """Poll the confluent consumer until it holds an assignment in a generation above ``above``
    (read from its serialized group metadata); the bound only ends a broken test."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        consumer.poll(0.05)
        gm = parse_librdkafka_group_metadata(consumer.consumer_group_metadata())
        assert isinstance(gm, ConsumerGroupMetadata)
        if consumer.assignment() and gm.generation_id > above:
            return gm
    raise AssertionError(f"the confluent consumer holds no assignment above generation {above}")


@TVS
def test_a_confluent_consumer_feeds_offsets_and_its_group_metadata(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("ck-in", partitions=2)
    consumer = _confluent_consumer(mock_cluster, "ck-g1", **{"group.instance.id": "ck-static-1"})
    consumer.subscribe(["ck-in"])
    try:
        joined = _joined(consumer)
        assert joined.group_id == "ck-g1" and joined.member_id and joined.group_instance_id == "ck-static-1"
        producer = make_producer("tx-ck-g1")
        producer.init_transactions()
        with producer.transaction():
            producer.send("ck-out", b"out", partition=0)
            offsets = [confluent_kafka.TopicPartition("ck-in", 0, 4),
                       confluent_kafka.TopicPartition("ck-in", 1, confluent_kafka.OFFSET_INVALID)]
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata())
        with producer.transaction():  # the consumer itself works too
            producer.send_offsets_to_transaction([confluent_kafka.TopicPartition("ck-in", 1, 2)], consumer)
    finally:
        consumer.close()
    # the logical offset was skipped, as confluent-kafka's producer skips it
    assert mock_cluster.committed_offsets("ck-g1") == {("ck-in", 0): 4, ("ck-in", 1): 2}
    sent = [e.fields for e in mock_cluster.request_log if e.api == "TxnOffsetCommit"]
    assert [(f["generation_id"], f["member_id"]) for f in sent] == \
        [(joined.generation_id, joined.member_id)] * 2


@TVS
def test_a_zombie_confluent_consumer_is_fenced(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("ck-zombie", partitions=2)
    consumer = _confluent_consumer(mock_cluster, "ck-gz")
    consumer.subscribe(["ck-zombie"])
    try:
        _joined(consumer)
        stale_gm = consumer.consumer_group_metadata()  # what the zombie holds: its membership then
        stale = parse_librdkafka_group_metadata(stale_gm)
        assert isinstance(stale, ConsumerGroupMetadata)
        # the group moves on (a rebalance the zombie slept through); the consumer rejoins
        mock_cluster.force_rebalance("ck-gz")
        _joined(consumer, stale.generation_id)
        producer = make_producer("tx-ck-gz")
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("ck-out", b"zombie", partition=0)
        with pytest.raises(errors.CommitFailedError):
            producer.send_offsets_to_transaction([confluent_kafka.TopicPartition("ck-zombie", 0, 5)],
                                                 stale_gm)
        with pytest.raises(errors.AbortableError):
            producer.commit_transaction()
        producer.abort_transaction()
        with producer.transaction():  # the current membership commits
            producer.send_offsets_to_transaction([confluent_kafka.TopicPartition("ck-zombie", 0, 7)],
                                                 consumer.consumer_group_metadata())
    finally:
        consumer.close()
    assert mock_cluster.committed_offsets("ck-gz") == {("ck-zombie", 0): 7}
    assert committed_values(mock_cluster, "ck-out", 0) == []


def test_the_sync_call_takes_a_kafka_python_consumer(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("kp-in", partitions=1)
    producer = make_producer("tx-kp-g")
    producer.init_transactions()
    # the topic exists before the consumer joins and its metadata is not refreshed meanwhile: no
    # rebalance after the first (a rebalance would rightly fence the offsets: CommitFailedError)
    consumer = KafkaConsumer(
        bootstrap_servers=mock_cluster.bootstrap_servers, group_id="kp-g", enable_auto_commit=False,
        isolation_level="read_committed", auto_offset_reset="earliest", session_timeout_ms=30000,
        heartbeat_interval_ms=100, retry_backoff_ms=50)
    try:
        consumer.subscribe(["kp-in"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                consumer.assignment() and consumer.group_metadata().state == MemberState.STABLE):
            consumer.poll(timeout_ms=50)
        expected = consumer.group_metadata()
        assert expected.generation_id >= 1 and expected.member_id
        with producer.transaction():
            producer.send_offsets_to_transaction({TopicPartition("kp-in", 0): 3}, consumer)
    finally:
        consumer.close()
    assert mock_cluster.committed_offsets("kp-g") == {("kp-in", 0): 3}
    sent = [e.fields for e in mock_cluster.request_log if e.api == "TxnOffsetCommit"][-1]
    assert (sent["generation_id"], sent["member_id"]) == (expected.generation_id, expected.member_id)


def test_a_bare_group_id_still_commits_but_warns_once_per_producer(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("bare-in", partitions=1)
    producer = make_producer("tx-bare")
    producer.init_transactions()
    with pytest.warns(DeprecationWarning, match="not fenced") as caught, producer.transaction():
        producer.send_offsets_to_transaction({TopicPartition("bare-in", 0): 1}, "bare-g")
        producer.send_offsets_to_transaction({TopicPartition("bare-in", 0): 2}, "bare-g")
    assert len([w for w in caught if issubclass(w.category, DeprecationWarning)]) == 1
    assert caught[0].filename == __file__  # it points at the caller's line
    assert mock_cluster.committed_offsets("bare-g") == {("bare-in", 0): 2}
