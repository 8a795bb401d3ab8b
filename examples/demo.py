"""Exactly-once in three transactions: commit 10 records, abort 10, commit 3.

A consumer with ``isolation_level="read_committed"`` then sees exactly the 13 committed records;
the 10 aborted ones are in the log but hidden behind an ABORT marker.

Run it with ``python examples/demo.py``. It uses ``$KAFKA_BOOTSTRAP_SERVERS`` when set, otherwise it
starts an in-process ``MockCluster`` (three brokers speaking the Kafka protocol on 127.0.0.1).
``python -m txnproducer demo`` runs the same scenario.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Iterator

import structlog
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from txnproducer import ProducerConfig, TransactionalProducer
from txnproducer.testing import MockCluster

TOPIC = f"demo-{uuid.uuid4().hex[:8]}"
PARTITIONS = 3
TIMEOUT_S = 60.0  # every wait below is bounded by this


@contextlib.contextmanager
def kafka() -> Iterator[str]:
    """Bootstrap servers: a real Kafka from the environment, or a mock cluster for the demo's life."""
    servers = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if servers:
        yield servers
        return
    with MockCluster(num_brokers=3, transaction_version=2) as cluster:
        yield cluster.bootstrap_servers


def produce(servers: str) -> None:
    config = ProducerConfig(
        bootstrap_servers=servers,
        transactional_id=f"demo-{uuid.uuid4().hex[:8]}",  # in an application: stable across restarts
        value_serializer=str.encode,
    )
    producer = TransactionalProducer(config)
    try:
        # Registers the transactional id with its coordinator and fences any older producer with it.
        producer.init_transactions()

        producer.begin_transaction()
        for i in range(10):
            producer.send(TOPIC, value=f"committed-{i}")
        producer.commit_transaction()  # flushes, then writes COMMIT markers: all 10 become visible
        print("transaction 1: 10 records committed")

        producer.begin_transaction()
        for i in range(10):
            producer.send(TOPIC, value=f"aborted-{i}")
        producer.flush()  # these records reach the log...
        producer.abort_transaction()  # ...and the ABORT markers hide them from read_committed readers
        print("transaction 2: 10 records aborted")

        producer.begin_transaction()
        for i in range(10, 13):
            producer.send(TOPIC, value=f"committed-{i}")
        producer.commit_transaction()
        print("transaction 3: 3 records committed")
    finally:
        producer.close()


def read_committed(servers: str) -> list[str]:
    consumer = KafkaConsumer(
        bootstrap_servers=servers,
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    try:
        partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        end = consumer.end_offsets(partitions)  # read_committed: the last stable offsets
        values: list[str] = []
        deadline = time.monotonic() + TIMEOUT_S
        while any(consumer.position(tp) < end[tp] for tp in partitions) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(record.value.decode() for record in records)
        return values
    finally:
        consumer.close()


def main() -> None:
    # txnproducer logs through structlog; an application chooses the level (here: warnings only).
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with kafka() as servers:
        admin = KafkaAdminClient(bootstrap_servers=servers)
        try:
            admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])
        finally:
            admin.close()
        produce(servers)
        values = read_committed(servers)
    print(f"a read_committed consumer sees {len(values)} records: {sorted(values)}")
    assert len(values) == 13 and not any(v.startswith("aborted") for v in values)


if __name__ == "__main__":
    main()
