"""The core transactional scenarios against a real Apache Kafka broker.

The same behaviour the MockCluster tests assert (tests/mock/test_producer_txn.py and
test_producer_faults.py), checked against the reference implementation: committed records are
visible once and in order, aborted ones never, a second instance fences the first, offsets commit
with the transaction only, the epoch rises by one per transaction under TV2, and a transaction the
coordinator timed out is reported as abortable (TV2) and the producer recovers; keyless records
spread over the partitions in whole batches; a batch the topic refuses as too large is split.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.structs import OffsetAndMetadata, TopicPartition

from txnproducer import TransactionalProducer, errors
from txnproducer.testing.wire_client import WireClient


def _fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(kafka_bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    yield client
    client.close()


@pytest.fixture
def topic(admin: KafkaAdminClient) -> str:
    name = _fresh("txn-broker")
    admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)])
    return name


@pytest.fixture
def make_producer(kafka_bootstrap: str) -> Iterator[Any]:
    producers: list[TransactionalProducer] = []

    def make(txn_id: str, **settings: Any) -> TransactionalProducer:
        settings.setdefault("max_block_ms", 30_000)
        producer = TransactionalProducer(bootstrap_servers=kafka_bootstrap, transactional_id=txn_id,
                                         **settings)
        producers.append(producer)
        return producer

    yield make
    for producer in producers:
        producer.close(10)


def read_committed(bootstrap: str, topic: str, partitions: int = 3) -> dict[int, list[bytes]]:
    """Everything a read_committed consumer sees in ``topic``, up to the last stable offset."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)  # under read_committed: the LSO
        seen: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + 30
        while any(consumer.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline, f"read_committed consumer stuck before {end}"
            for tp, records in consumer.poll(timeout_ms=500).items():
                seen[tp.partition].extend(r.value for r in records)
        return seen
    finally:
        consumer.close()


def test_commit_is_visible_once_in_order_and_abort_never(
        kafka_bootstrap: str, topic: str, make_producer: Any) -> None:
    producer = make_producer(_fresh("tx-commit"))
    producer.init_transactions()
    expected: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for txn in range(3):
        with producer.transaction():
            for i in range(30):
                value = b"c%d-%d" % (txn, i)
                producer.send(topic, value, partition=i % 3)
                expected[i % 3].append(value)
        producer.begin_transaction()
        for i in range(10):
            producer.send(topic, b"aborted-%d-%d" % (txn, i), partition=i % 3)
        producer.flush()
        producer.abort_transaction()
    assert read_committed(kafka_bootstrap, topic) == expected


def test_keyless_records_stick_to_a_partition_for_a_batch_size_of_bytes(
        kafka_bootstrap: str, topic: str, make_producer: Any) -> None:
    """The built-in sticky partitioner (KIP-794) on a real broker: keyless records go to one
    partition until batch_size bytes went there and its last batch is full (at most twice
    batch_size), then on to another; every record is committed once, in order. The runs depend
    on bytes, not on how fast the broker answers (the KIP-480 rule this replaced made a loaded
    machine's runs as short as one record)."""
    producer = make_producer(_fresh("tx-sticky"), batch_size=4096, linger_ms=10_000)
    producer.init_transactions()
    values = [b"%04d" % i + b"v" * 96 for i in range(400)]
    with producer.transaction():
        futures = [producer.send(topic, value) for value in values]
    metadata = [f.get(30) for f in futures]
    runs: list[list[Any]] = []  # consecutive records on one partition
    for m in metadata:
        if runs and runs[-1][0].partition == m.partition:
            runs[-1].append(m)
        else:
            runs.append([m])
    # about 110 bytes per record: 38 to 75 records per partition before a switch (the next
    # partition may be the same one, which merges runs)
    assert len(runs) >= 3 and all(len(run) >= 38 for run in runs[:-1]), [len(r) for r in runs]
    for run in runs:  # one producer, one transaction: the broker gave a run consecutive offsets
        assert [m.offset for m in run] == list(range(run[0].offset, run[0].offset + len(run)))
    expected: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for value, m in zip(values, metadata, strict=True):
        expected[m.partition].append(value)
    assert read_committed(kafka_bootstrap, topic) == expected


def test_batches_larger_than_the_topic_takes_are_split_and_committed_once_in_order(
        kafka_bootstrap: str, admin: KafkaAdminClient, make_producer: Any) -> None:
    """MESSAGE_TOO_LARGE from a real broker: the producer sends the batch in halves."""
    topic = _fresh("txn-small")
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1,
                                  topic_configs={"max.message.bytes": "2000"})])
    producer = make_producer(_fresh("tx-split"))  # each partition's batch is ~22 KB
    producer.init_transactions()
    values = [b"%05d" % i + b"v" * 95 for i in range(600)]
    with producer.transaction():
        futures = [producer.send(topic, value, partition=i % 3) for i, value in enumerate(values)]
    metadata = [f.get(30) for f in futures]
    for partition in range(3):
        offsets = [m.offset for m in metadata if m.partition == partition]
        assert offsets == list(range(offsets[0], offsets[0] + 200))
    assert read_committed(kafka_bootstrap, topic) == {p: values[p::3] for p in range(3)}


def test_a_too_large_record_split_from_its_batch_fails_with_its_neighbour_and_the_abort_is_prompt(
        kafka_bootstrap: str, admin: KafkaAdminClient, make_producer: Any) -> None:
    """A batch [too large, small] after the broker has acknowledged a batch of the producer on the
    partition: the too-large half fails for good and Kafka answers the other half
    OUT_OF_ORDER_SEQUENCE_NUMBER, because it waits for the failed half's sequence. That half fails
    at once instead of being retried until delivery_timeout_ms, and the abort completes."""
    topic = _fresh("txn-tiny")
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                  topic_configs={"max.message.bytes": "500"})])
    producer = make_producer(_fresh("tx-tiny"), linger_ms=200)
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"first", partition=0).get(30)
    big = producer.send(topic, b"x" * 1000, partition=0)
    small = producer.send(topic, b"small", partition=0)  # joins big's batch (linger 200 ms)
    with pytest.raises(errors.RecordTooLargeError):
        big.get(10)
    with pytest.raises(errors.OutOfOrderSequenceError):
        small.get(10)
    producer.abort_transaction(timeout=10)
    with producer.transaction():
        producer.send(topic, b"fits")
    assert read_committed(kafka_bootstrap, topic, partitions=1) == {0: [b"fits"]}


def test_tv2_epoch_rises_by_one_per_transaction(topic: str, make_producer: Any) -> None:
    producer = make_producer(_fresh("tx-epoch"))
    producer.init_transactions()
    pid, first = producer.producer_id, producer.epoch
    epochs = []
    for _ in range(3):
        with producer.transaction():
            producer.send(topic, b"x", partition=0)
        epochs.append(producer.epoch)
    if producer.transaction_version >= 2:
        assert epochs == [first + 1, first + 2, first + 3]
    else:
        assert epochs == [first] * 3
    assert producer.producer_id == pid


def test_second_instance_fences_the_first(
        kafka_bootstrap: str, topic: str, make_producer: Any) -> None:
    txn_id = _fresh("tx-fence")
    first = make_producer(txn_id)
    first.init_transactions()
    first.begin_transaction()
    first.send(topic, b"zombie-before", partition=0)
    first.flush()

    second = make_producer(txn_id)
    second.init_transactions()  # aborts the first instance's open transaction
    with second.transaction():
        second.send(topic, b"second", partition=0)

    with pytest.raises(errors.ProducerFencedError):
        first.commit_transaction()
    with pytest.raises((errors.ProducerFencedError, errors.IllegalStateError)):
        first.send(topic, b"zombie-after", partition=0)
    assert read_committed(kafka_bootstrap, topic)[0] == [b"second"]


def test_offsets_commit_with_the_transaction_only(
        kafka_bootstrap: str, topic: str, make_producer: Any, admin: KafkaAdminClient) -> None:
    group = _fresh("group")
    tp = TopicPartition(topic, 1)
    producer = make_producer(_fresh("tx-offsets"))
    producer.init_transactions()

    producer.begin_transaction()
    producer.send(topic, b"a", partition=0)
    producer.send_offsets_to_transaction({tp: OffsetAndMetadata(5, "", -1)}, group)
    producer.abort_transaction()
    assert admin.list_group_offsets(group)[group].get(tp) is None

    with producer.transaction():
        producer.send(topic, b"b", partition=0)
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(7, "", -1)}, group)
    # EndTxn returns once the coordinator logged PrepareCommit; it writes the markers (here: into
    # __consumer_offsets) afterwards, so the offset becomes readable a moment later
    _poll_broker("the committed offset to become visible",
                 lambda: admin.list_group_offsets(group)[group].get(tp) is not None)
    assert admin.list_group_offsets(group)[group][tp].offset == 7


def _poll_broker(what: str, done: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Wait until ``done()`` for state only the real broker knows (group offsets, transaction
    state): it offers no event to wait on, so this asks again every 0.2 s, bounded."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"timed out after {timeout_s:.0f} s waiting for {what}"
        time.sleep(0.2)


def _transaction_state(bootstrap: str, txn_id: str) -> str:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with WireClient(host, int(port), timeout=10) as wire:
        response = wire.send(DescribeTransactionsRequest[0](transactional_ids=[txn_id]))
    state: str = response.transaction_states[0].transaction_state
    return state


def test_transaction_timed_out_by_the_coordinator_is_abortable_and_recoverable(
        kafka_bootstrap: str, topic: str, make_producer: Any) -> None:
    txn_id = _fresh("tx-timeout")
    producer = make_producer(txn_id, transaction_timeout_ms=2_000)
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"too-late", partition=2).get(30)
    # The broker aborts it within transaction_timeout_ms + its cleanup interval (1 s in the
    # fixture): wait for that state on the coordinator itself.
    _poll_broker("the broker to abort the timed-out transaction",
                 lambda: _transaction_state(kafka_bootstrap, txn_id) == "CompleteAbort")
    producer.send(topic, b"after-timeout", partition=2)
    with pytest.raises(errors.AbortableError):
        producer.commit_transaction()
    if producer.transaction_version >= 2:
        producer.abort_transaction()  # accepted with the coordinator's new epoch
        with producer.transaction():
            producer.send(topic, b"recovered", partition=2)
        assert read_committed(kafka_bootstrap, topic)[2] == [b"recovered"]
    else:
        with pytest.raises(errors.ProducerFencedError):  # EndTxn v4 after the epoch bump
            producer.abort_transaction()
        assert read_committed(kafka_bootstrap, topic)[2] == []
