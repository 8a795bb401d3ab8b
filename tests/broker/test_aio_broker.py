"""AsyncTransactionalProducer against a real Apache Kafka: what the mock tier checks, on the real thing.

Commit and abort visibility for a read_committed reader; KIP-447 fencing of a zombie with an
aiokafka consumer's stale group metadata (the real group coordinator refuses its offsets); and the
asyncio consume-transform-produce example with a worker SIGKILLed mid-transaction, checked
exactly-once (about 30 s: the real broker's 6 s minimum session timeout holds the dead worker's
partitions).
"""

from __future__ import annotations

import asyncio
import io
import uuid

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import TopicPartition

from tests._support import readers
from tests._support.aio import run
from tests._support.examples import load_example
from txnproducer import errors
from txnproducer.aio import AsyncTransactionalProducer, aiokafka_group_metadata

aiokafka = pytest.importorskip("aiokafka")


def _topics(bootstrap: str, *names: str, partitions: int = 1) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(n, num_partitions=partitions, replication_factor=1) for n in names])
    finally:
        admin.close()


def test_committed_records_are_visible_and_aborted_ones_never(kafka_bootstrap: str) -> None:
    topic = f"aio-vis-{uuid.uuid4().hex[:8]}"
    _topics(kafka_bootstrap, topic)

    async def main() -> None:
        async with AsyncTransactionalProducer(bootstrap_servers=kafka_bootstrap,
                                              transactional_id=f"tx-{topic}") as producer:
            await producer.init_transactions()
            with pytest.raises(RuntimeError):
                async with producer.transaction():
                    await producer.send(topic, b"aborted", partition=0)
                    await producer.flush()
                    raise RuntimeError("application failure")
            async with producer.transaction():
                deliveries = [await producer.send(topic, b"kept-%d" % i, partition=0) for i in range(5)]
            assert [(await d).offset for d in deliveries] == [2, 3, 4, 5, 6]  # after the abort marker

    run(main())
    assert readers.read_values(kafka_bootstrap, topic, 1) == [b"kept-%d" % i for i in range(5)]
    readers.assert_no_open_transaction(kafka_bootstrap, topic, 1)


def test_a_zombie_with_a_stale_generation_is_fenced_by_the_real_group_coordinator(
        kafka_bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, out, group = f"aio-zin-{tag}", f"aio-zout-{tag}", f"aio-zg-{tag}"
    _topics(kafka_bootstrap, topic, out, partitions=2)

    def consumer() -> aiokafka.AIOKafkaConsumer:
        return aiokafka.AIOKafkaConsumer(
            topic, bootstrap_servers=kafka_bootstrap, group_id=group, enable_auto_commit=False,
            isolation_level="read_committed", session_timeout_ms=6000, heartbeat_interval_ms=500)

    async def joined(c: aiokafka.AIOKafkaConsumer, above: int) -> int:
        for _ in range(600):
            await c.getmany(timeout_ms=50)
            generation: int = aiokafka_group_metadata(c).generation_id
            if c.assignment() and generation > above:
                return generation
        raise AssertionError("no assignment")

    async def main() -> None:
        zombie, newcomer = consumer(), consumer()
        await zombie.start()
        try:
            first = await joined(zombie, 0)
            stale = aiokafka_group_metadata(zombie)
            await newcomer.start()
            await asyncio.gather(joined(newcomer, first), joined(zombie, first))
            async with AsyncTransactionalProducer(bootstrap_servers=kafka_bootstrap,
                                                  transactional_id=f"tx-{tag}") as producer:
                await producer.init_transactions()
                producer.begin_transaction()
                await producer.send(out, b"zombie", partition=0)
                with pytest.raises(errors.CommitFailedError):
                    await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 5}, stale)
                await producer.abort_transaction()
                async with producer.transaction():  # the current membership commits
                    await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 7}, zombie)
        finally:
            await asyncio.gather(zombie.stop(), newcomer.stop())

    run(main(), bound_s=120)


def test_the_aiokafka_example_is_exactly_once_after_a_kill(kafka_bootstrap: str) -> None:
    out = io.StringIO()
    example = load_example("aio_consume_transform_produce")
    ok = example.run_demo(bootstrap=kafka_bootstrap, inputs=900, out=out)
    text = out.getvalue()
    assert ok, text
    assert "Killed alpha (SIGKILL) mid-transaction" in text
    assert "sees 900 outputs for 900 inputs: 0 missing, 0 duplicated, 0 not transformed" in text
