"""Producers for tests: a factory that closes what it made, with short bounds so that a failing test
fails in seconds; and what a read_committed reader of a MockCluster sees."""

from __future__ import annotations

from typing import Any

from kafka import KafkaConsumer
from kafka.structs import TopicPartition

from txnproducer.producer import TransactionalProducer
from txnproducer.testing import MockCluster

# Short bounds so a failing test fails in seconds, not in the Java defaults' minutes.
TEST_DEFAULTS: dict[str, Any] = {"max_block_ms": 10_000, "request_timeout_ms": 5_000,
                                 "delivery_timeout_ms": 20_000}


class ProducerFactory:
    """``make(txn_id=None, cluster=None, **settings)`` builds a producer on ``cluster`` (default: the
    factory's) with the test defaults, overridable per module and per call; ``close_all`` closes them.
    ``producer_class`` is what it builds (tests/_support/aio.py builds the async producer)."""

    producer_class: Any = TransactionalProducer

    def __init__(self, cluster: MockCluster, default_txn_id: str, **defaults: Any) -> None:
        self._cluster = cluster
        self._default_txn_id = default_txn_id
        self._defaults = {**TEST_DEFAULTS, **defaults}
        self.producers: list[Any] = []

    def __call__(self, txn_id: str | None = None, cluster: MockCluster | None = None,
                 **settings: Any) -> Any:
        producer = self.producer_class(
            bootstrap_servers=(cluster or self._cluster).bootstrap_servers,
            transactional_id=txn_id or self._default_txn_id, **{**self._defaults, **settings})
        self.producers.append(producer)
        return producer

    def close_all(self, timeout: float) -> None:
        for producer in self.producers:
            self.close(producer, timeout)

    @staticmethod
    def close(producer: Any, timeout: float) -> None:
        producer.close(timeout)


def committed_values(cluster: MockCluster, topic: str, partition: int) -> list[bytes]:
    """The values a read_committed consumer sees in one partition, in order."""
    return [r.value for r in cluster.partition_records(topic, partition, read_committed=True)]


def read_committed_via_kafka_python(cluster: MockCluster, topic: str, partitions: int, expected: int,
                                    idle_ms: int = 10_000) -> list[bytes]:
    """What kafka-python's read_committed consumer returns: values in fetch order, stopping after
    ``expected`` values or ``idle_ms`` without a new one."""
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=idle_ms)
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        for message in consumer:
            values.append(message.value)
            if len(values) == expected:
                break
    finally:
        consumer.close()
    return values


def partition_runs(partitions: list[int]) -> list[int]:
    """Lengths of the runs of consecutive records sent to one partition (the sticky partitioner's
    trail): ``[0, 0, 2, 0] -> [2, 1, 1]``."""
    runs: list[int] = []
    previous = None
    for p in partitions:
        if p == previous:
            runs[-1] += 1
        else:
            runs.append(1)
        previous = p
    return runs
