"""The broker tier's own check: the fixture yields a broker that stores and serves records.

If this fails, every other real-broker test would fail for a reason unrelated to txnproducer.
"""

from __future__ import annotations

import uuid

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic


def test_broker_round_trips_one_record(kafka_bootstrap: str) -> None:
    topic = f"smoke-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        admin.close()

    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    try:
        metadata = producer.send(topic, key=b"k", value=b"hello").get(timeout=30)
    finally:
        producer.close(timeout=10)
    assert metadata.offset == 0

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level="read_committed",
        consumer_timeout_ms=20_000,
    )
    try:
        record = next(iter(consumer))
    finally:
        consumer.close()
    assert (record.key, record.value) == (b"k", b"hello")


def test_cli_demo_against_real_broker(kafka_bootstrap: str) -> None:
    """The quick-start demo against a real broker: only the 13 committed records are visible."""
    import io

    from txnproducer.cli import run_demo

    result = run_demo(kafka_bootstrap, out=io.StringIO())
    assert sorted(result.values) == sorted(f"committed-{i}" for i in range(13))
