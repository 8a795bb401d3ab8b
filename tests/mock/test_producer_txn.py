"""TransactionalProducer end to end against the MockCluster, on both transaction versions.

What a user relies on: committed records are visible to read_committed consumers once and in
order; aborted ones never; a newer instance fences an older one; dropped connections cause
retries but no duplicates; and the wire order the coordinator needs (TV1 AddPartitionsToTxn before
Produce, EndTxn after the last Produce answer; TV2 no Add* requests and one epoch bump per
transaction).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.structs import TopicPartition

from tests._support.kafka_python_groups import rescue_lost_join
from tests._support.producers import ProducerFactory, committed_values, partition_runs
from txnproducer import errors
from txnproducer.producer import TransactionalProducer
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-test")
    yield factory
    factory.close_all(5)


@TVS
def test_committed_records_are_visible_once_and_in_order(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("orders", partitions=3)
    producer = make_producer()
    producer.init_transactions()
    expected: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for txn in range(3):
        with producer.transaction():
            for i in range(30):
                value = b"%d-%d" % (txn, i)
                future = producer.send("orders", value, partition=i % 3)
                expected[i % 3].append(value)
        assert future.get(5).partition == 2
    assert producer.transaction_version == (2 if mock_cluster.state.transaction_version >= 2 else 1)
    consumer = KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap_servers,
                             isolation_level="read_committed", enable_auto_commit=False,
                             consumer_timeout_ms=20000)
    try:
        consumer.assign([TopicPartition("orders", p) for p in range(3)])
        consumer.seek_to_beginning()
        seen: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
        for count, message in enumerate(consumer, start=1):
            seen[message.partition].append(message.value)
            if count == 90:
                break
    finally:
        consumer.close()
    assert seen == expected


@TVS
def test_aborted_records_are_never_visible(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("aborts", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    futures = [producer.send("aborts", b"gone-%d" % i, partition=0) for i in range(10)]
    producer.flush(10)
    assert all(f.get(1).offset >= 0 for f in futures)  # written to the log, but uncommitted
    producer.abort_transaction()
    with pytest.raises(RuntimeError), producer.transaction():
        producer.send("aborts", b"also-gone", partition=0)
        raise RuntimeError("application failure inside the transaction")
    with producer.transaction():
        producer.send("aborts", b"kept", partition=0)
    assert committed_values(mock_cluster, "aborts", 0) == [b"kept"]


@TVS
def test_second_instance_fences_the_first(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("fence", partitions=1)
    first = make_producer("tx-fence")
    first.init_transactions()
    first.begin_transaction()
    first.send("fence", b"zombie", partition=0)
    first.flush(10)
    second = make_producer("tx-fence")
    second.init_transactions()
    assert second.producer_id == first.producer_id and second.epoch > first.epoch
    with pytest.raises(errors.ProducerFencedError):
        first.commit_transaction()
    with pytest.raises((errors.ProducerFencedError, errors.IllegalStateError)):
        first.begin_transaction()
    with second.transaction():
        second.send("fence", b"live", partition=0)
    assert committed_values(mock_cluster, "fence", 0) == [b"live"]


@TVS
@pytest.mark.parametrize("when", ["before", "after"])
def test_dropped_produce_connections_are_retried_without_duplicates(
        mock_cluster: MockCluster, make_producer: Any, when: str) -> None:
    mock_cluster.create_topic("drops", partitions=2)
    producer = make_producer(linger_ms=0, retry_backoff_ms=10)
    producer.init_transactions()
    mock_cluster.drop_connection_after("Produce", count=2, when=when)
    values = [b"r-%d" % i for i in range(40)]
    with producer.transaction():
        for i, value in enumerate(values):
            producer.send("drops", value, partition=i % 2)
    assert committed_values(mock_cluster, "drops", 0) == values[0::2]
    assert committed_values(mock_cluster, "drops", 1) == values[1::2]
    assert any(e.dropped for e in mock_cluster.request_log if e.api == "Produce")


@pytest.mark.parametrize("mock_cluster", [1], indirect=True, ids=["tv1"])
def test_tv1_wire_order(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("order1", partitions=3)
    producer = make_producer()
    producer.init_transactions()
    per_txn = 12  # 4 records per partition per transaction
    for _ in range(3):
        with producer.transaction():
            for i in range(per_txn):
                producer.send("order1", b"x", partition=i % 3)
    log = mock_cluster.request_log
    end_txns = [e for e in log if e.api == "EndTxn"]
    assert len(end_txns) == 3 and all(not e.error_codes for e in end_txns)
    assert all(e.version <= 4 for e in end_txns)
    produces = [e for e in log if e.api == "Produce" and not e.dropped]
    assert produces and all(e.version <= 11 for e in produces)
    epochs = {b[3] for e in produces for b in e.fields["batches"]}
    assert len(epochs) == 1  # TV1 keeps one epoch across transactions
    for produce in produces:
        txn_start = max((e.seq for e in end_txns if e.seq < produce.seq), default=-1)
        for topic, partition, *_ in produce.fields["batches"]:
            assert any(
                a.api == "AddPartitionsToTxn" and not a.error_codes and txn_start < a.seq < produce.seq
                and (topic, partition) in a.fields["partitions"] for a in log), produce
    # every batch of transaction n (sequences below 4*(n+1) per partition) precedes EndTxn n
    for n, end in enumerate(end_txns):
        for produce in produces:
            for _t, _p, _pid, _epoch, base_seq, count, transactional in produce.fields["batches"]:
                assert transactional
                if base_seq + count <= 4 * (n + 1):
                    assert produce.seq < end.seq


@pytest.mark.parametrize("mock_cluster", [2], indirect=True, ids=["tv2"])
def test_tv2_wire_has_no_add_requests_and_bumps_epoch_per_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("order2", partitions=3)
    producer = make_producer()
    producer.init_transactions()
    start_epoch = producer.epoch
    for n in range(3):
        with producer.transaction():
            for i in range(9):
                producer.send("order2", b"y", partition=i % 3)
            producer.send_offsets_to_transaction({TopicPartition("in", 0): 10 * (n + 1)}, "group-tv2")
        assert producer.epoch == start_epoch + n + 1
    log = mock_cluster.request_log
    assert not [e for e in log if e.api in ("AddPartitionsToTxn", "AddOffsetsToTxn")]
    produces = [e for e in log if e.api == "Produce"]
    assert all(e.version >= 12 for e in produces)
    produce_epochs = sorted({b[3] for e in produces for b in e.fields["batches"]})
    assert produce_epochs == [start_epoch, start_epoch + 1, start_epoch + 2]
    end_txns = [e for e in log if e.api == "EndTxn"]
    assert [e.fields["producer_epoch"] for e in end_txns] == produce_epochs
    for end in end_txns:
        epoch = end.fields["producer_epoch"]
        assert all(p.seq < end.seq for p in produces
                   if any(b[3] == epoch for b in p.fields["batches"]))
    assert mock_cluster.committed_offsets("group-tv2")[("in", 0)] == 30


@TVS
def test_back_to_back_one_record_transactions_all_commit(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The tightest loop an application can run (begin; send 1; commit) must never let an EndTxn
    overtake its transaction's Produce. Regression: the Sender read "batches incomplete?" before
    taking the transaction manager's lock, so a record appended and committed in that window had
    its EndTxn sent first (TV2: INVALID_TXN_STATE, a fatal error); seen against Kafka 4.1.0 within
    about 50 transactions once commit_transaction() woke up faster."""
    mock_cluster.create_topic("tight", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    total = 300
    for i in range(total):
        producer.begin_transaction()
        producer.send("tight", b"%d" % i, partition=0)
        producer.commit_transaction(10)
    assert committed_values(mock_cluster, "tight", 0) == [b"%d" % i for i in range(total)]
    log = mock_cluster.request_log
    assert not [e for e in log if e.api == "EndTxn" and e.error_codes]
    produces = [e for e in log if e.api == "Produce"]
    for end in (e for e in log if e.api == "EndTxn"):
        epoch = end.fields["producer_epoch"]
        assert any(p.seq < end.seq for p in produces if any(b[3] == epoch for b in p.fields["batches"]))


@TVS
def test_send_offsets_commit_with_the_transaction_only(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    producer.init_transactions()
    with producer.transaction():
        producer.send("out", b"a", partition=0)
        producer.send_offsets_to_transaction({TopicPartition("in", 0): 5}, "g-off")
    producer.begin_transaction()
    producer.send_offsets_to_transaction({TopicPartition("in", 0): 9}, "g-off")
    producer.abort_transaction()
    assert mock_cluster.committed_offsets("g-off") == {("in", 0): 5}


def test_api_misuse_raises_typed_errors(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    with pytest.raises(errors.IllegalStateError):
        producer.begin_transaction()  # before init_transactions
    producer.init_transactions()
    with pytest.raises(errors.IllegalStateError):
        producer.send("t", b"x")  # no transaction open
    with pytest.raises(errors.IllegalStateError):
        producer.commit_transaction()
    producer.begin_transaction()
    with pytest.raises(errors.SerializationError):
        producer.send("t", 12345)
    with pytest.raises(errors.RecordTooLargeError):
        producer.send("t", b"x" * 2_000_000)
    bad_records: list[tuple[dict[str, Any], str]] = [
        ({"partition": 99}, "partition 99 does not exist"),
        ({"topic": "not a topic!"}, "invalid topic name"),
        ({"topic": ""}, "non-empty string"),
        ({"timestamp_ms": -5}, "timestamp_ms must be"),
        ({"headers": [("h", 5)]}, "value must be bytes"),
        ({"headers": [(7, b"v")]}, "header names must be str"),
    ]
    for bad, message in bad_records:
        args = {"topic": "t", "value": b"x", **bad}
        with pytest.raises(errors.InvalidRecordError, match=message):
            producer.send(**args)
    # nothing was queued and the transaction is intact: a good record still commits
    producer.send("t", b"good", partition=0)
    producer.commit_transaction(10)
    assert committed_values(mock_cluster, "t", 0) == [b"good"]
    producer.close()
    with pytest.raises(errors.ClosedError):
        producer.begin_transaction()
    with pytest.raises(errors.ClosedError):
        producer.send("t", b"x")


def test_init_transactions_times_out_when_the_cluster_is_unreachable() -> None:
    producer = TransactionalProducer(bootstrap_servers="127.0.0.1:1", transactional_id="tx-nowhere",
                                     max_block_ms=300, request_timeout_ms=200, linger_ms=0,
                                     delivery_timeout_ms=1000)
    try:
        with pytest.raises(errors.TimeoutError, match="ms"):
            producer.init_transactions()
        with pytest.raises(errors.TimeoutError):
            producer.init_transactions(timeout=0.1)
    finally:
        producer.close(1)


def test_keyed_records_use_java_compatible_partitioning(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("keyed", partitions=3)
    producer = make_producer()
    producer.init_transactions()
    with producer.transaction():
        futures = {key: producer.send("keyed", b"v", key=key) for key in (b"a", b"b", b"c", b"key-42")}
    # partitions the Java client's DefaultPartitioner picks for these keys with 3 partitions
    from kafka.partitioner.default import murmur2

    assert {k: f.get(5).partition for k, f in futures.items()} == {
        k: (murmur2(k) & 0x7FFFFFFF) % 3 for k in futures}
    assert producer.partitions_for("keyed") == [0, 1, 2]


@TVS
def test_keyless_records_stick_to_a_partition_for_a_batch_size_of_bytes(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The built-in sticky partitioner (KIP-794): keyless records stay on one partition until
    batch_size bytes went there and its last batch is full (at most twice batch_size), then
    move to another. Records spread over the topic in runs of whole batches' worth of bytes."""
    records = 2_000
    mock_cluster.create_topic("spread", partitions=3)
    producer = make_producer(batch_size=4096, linger_ms=10_000)  # batches go only when full
    producer.init_transactions()
    with producer.transaction():
        futures = [producer.send("spread", b"v" * 100) for _ in range(records)]
    partitions = [f.get(5).partition for f in futures]
    runs = partition_runs(partitions)
    # the partitioner counts about 110 bytes per record: a run is 38 to 75 records (a new
    # partition may be the same as the last, which merges runs: multiples are fine too). Here the
    # last batch is rarely full at batch_size bytes, so a switch comes every ~75 records: 2,000
    # records make 26 random choices of 3 partitions, all the same one with a chance of 3**-26
    # (400 records made 5: it happened once in ~240 runs)
    assert len(set(partitions)) > 1
    assert all(run >= 38 for run in runs[:-1]), runs
    names = ("spread", str(mock_cluster.state.topics["spread"].topic_id))  # v13 names topics by id
    requests = [e for e in mock_cluster.request_log if e.api == "Produce"
                and any(b[0] in names for b in e.fields["batches"])]
    batches = [b for e in requests for b in e.fields["batches"] if b[0] in names]
    assert sum(b[5] for b in batches) == records
    assert max(b[5] for b in batches) <= 4096 // 100  # no batch above batch_size
    # the producer's own counts agree with what the broker received
    metrics = producer.metrics()
    assert metrics["batches_sent"] == len(batches) and metrics["records_sent"] == records
    assert metrics["produce_requests_sent"] == len(requests)


@pytest.mark.parametrize("mock_cluster", [1], indirect=True, ids=["tv1"])
def test_tv1_adds_only_the_partitions_that_get_records(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """A keyless record that starts a transaction moves to the next sticky partition before
    anything is added: AddPartitionsToTxn names just the partition it lands on."""
    mock_cluster.create_topic("one-each", partitions=3)
    producer = make_producer()
    producer.init_transactions()
    landed = []
    for _ in range(5):
        with producer.transaction():
            future = producer.send("one-each", b"v")
        landed.append(future.get(5).partition)
    adds = [e.fields["partitions"] for e in mock_cluster.request_log
            if e.api == "AddPartitionsToTxn" and not e.error_codes]
    assert adds == [[("one-each", p)] for p in landed]


@TVS
def test_batches_larger_than_the_topic_takes_are_split_and_committed_once_in_order(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """MESSAGE_TOO_LARGE (a batch above the topic's max.message.bytes): the producer halves the
    batch, keeping its sequences, until the broker takes it; nothing is lost or duplicated."""
    mock_cluster.create_topic("small", partitions=2, max_message_bytes=2000)
    producer = make_producer()  # each partition's batch (150 records, ~16 KB) is 8x what the topic takes
    producer.init_transactions()
    values = [b"%05d" % i + b"v" * 95 for i in range(300)]
    with producer.transaction():
        futures = [producer.send("small", value, partition=i % 2) for i, value in enumerate(values)]
    metadata = [f.get(5) for f in futures]
    for partition in (0, 1):
        assert committed_values(mock_cluster, "small", partition) == values[partition::2]
        offsets = [m.offset for m in metadata if m.partition == partition]
        assert offsets == list(range(offsets[0], offsets[0] + 150))
    assert any(10 in e.error_codes for e in mock_cluster.request_log if e.api == "Produce")


@TVS
def test_a_too_large_record_split_from_its_batch_fails_with_its_neighbour_and_the_abort_is_prompt(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """A batch [too large, small] on a partition where the broker already knows the producer is
    split; the too-large half fails for good, so the broker keeps waiting for its sequence and the
    other half can never be written. That half fails at once (it is not retried until
    delivery_timeout_ms), and abort_transaction() completes."""
    mock_cluster.create_topic("tiny", partitions=1, max_message_bytes=500)
    producer = make_producer(linger_ms=200, delivery_timeout_ms=120_000, max_block_ms=10_000)
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("tiny", b"first", partition=0).get(5)  # the broker knows the producer on tiny-0
    big = producer.send("tiny", b"x" * 1000, partition=0)
    small = producer.send("tiny", b"small", partition=0)  # joins big's batch (linger 200 ms)
    with pytest.raises(errors.RecordTooLargeError):
        big.get(5)
    with pytest.raises(errors.OutOfOrderSequenceError):  # the broker waits for big's sequence
        small.get(5)
    producer.abort_transaction(timeout=5)
    with producer.transaction():
        producer.send("tiny", b"fits")
    assert committed_values(mock_cluster, "tiny", 0) == [b"fits"]
    assert any(10 in e.error_codes for e in mock_cluster.request_log if e.api == "Produce")


def test_a_record_larger_than_the_topic_takes_fails_and_the_transaction_aborts(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("tiny", partitions=1, max_message_bytes=500)
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    future = producer.send("tiny", b"x" * 1000)
    with pytest.raises(errors.RecordTooLargeError, match="error code 10"):
        future.get(5)
    with pytest.raises(errors.AbortableError):
        producer.commit_transaction()
    producer.abort_transaction()
    with producer.transaction():
        producer.send("tiny", b"fits")
    assert committed_values(mock_cluster, "tiny", 0) == [b"fits"]


def test_send_to_a_missing_topic_times_out_within_max_block() -> None:
    with MockCluster(num_brokers=1, auto_create_topics=False) as cluster:
        producer = TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers,
                                         transactional_id="tx-missing", max_block_ms=400)
        try:
            producer.init_transactions(10)  # max_block_ms is small for send(); connecting may take longer
            producer.begin_transaction()
            with pytest.raises(errors.TimeoutError, match="not present in metadata"):
                producer.send("does-not-exist", b"x")
            cluster.create_topic("exists-now", partitions=2)
            assert producer.partitions_for("exists-now") == [0, 1]
            producer.abort_transaction()
        finally:
            producer.close(5)


@TVS
def test_consume_transform_produce_commits_offsets_with_the_output(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("eos-in", partitions=1)
    mock_cluster.create_topic("eos-out", partitions=1)
    seed = make_producer("tx-seed")
    seed.init_transactions()
    with seed.transaction():
        for i in range(10):
            seed.send("eos-in", b"%d" % i, partition=0)
    consumer = KafkaConsumer(
        bootstrap_servers=mock_cluster.bootstrap_servers, group_id="eos-group",
        isolation_level="read_committed", enable_auto_commit=False, auto_offset_reset="earliest",
        session_timeout_ms=3000, heartbeat_interval_ms=100, max_poll_interval_ms=4000,
        request_timeout_ms=10000, metadata_max_age_ms=1000, retry_backoff_ms=50)
    producer = make_producer("tx-eos")
    producer.init_transactions()
    try:
        assert consumer.partitions_for_topic("eos-in") == {0}
        consumer.subscribe(["eos-in"])
        seen: list[bytes] = []
        for _ in range(100):
            batch = consumer.poll(timeout_ms=200)
            rescue_lost_join(consumer)  # kafka-python 3.0.12 can drop a finished join (kafka_python_groups)
            if not batch:
                if len(seen) == 10:
                    break
                continue
            with producer.transaction():
                for tp, messages in batch.items():
                    for message in messages:
                        seen.append(message.value)
                        producer.send("eos-out", message.value.upper(), partition=0)
                    offsets = {tp: messages[-1].offset + 1}
                producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    finally:
        consumer.close(autocommit=False)
    assert seen == [b"%d" % i for i in range(10)]
    assert committed_values(mock_cluster, "eos-out", 0) == seen
    assert mock_cluster.committed_offsets("eos-group")[("eos-in", 0)] == 10


@pytest.mark.parametrize("mock_cluster", [2], indirect=True, ids=["tv2"])
def test_debug_logging_shows_each_state_change_and_coordinator_request(
        mock_cluster: MockCluster, make_producer: Any, caplog: pytest.LogCaptureFixture) -> None:
    """The hot path skips building debug events while debug is off; turned on, they are all there."""
    mock_cluster.create_topic("orders", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    with caplog.at_level(logging.DEBUG, logger="txnproducer"):
        producer.begin_transaction()
        producer.send("orders", b"v")
        producer.commit_transaction()
    lines = [record.getMessage() for record in caplog.records]
    for source, target in (("READY", "IN_TRANSACTION"), ("IN_TRANSACTION", "COMMITTING_TRANSACTION"),
                           ("COMMITTING_TRANSACTION", "READY")):
        assert any("event='txn.state_transition'" in line and f"source='{source}'" in line
                   and f"target='{target}'" in line for line in lines), (source, target)
    assert any("event='txn.request_sent'" in line and "api='EndTxnRequestData'" in line for line in lines)
