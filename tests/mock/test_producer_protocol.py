"""The producer's protocol behaviour where an audit against the Java client found it differed.

Each test is the regression test of one finding (issue 17): it failed before the fix. What a user
relies on: a send() that was refused leaves the transaction committable; a send() racing
begin_transaction() is part of the new transaction; a refused flush() does not change batching;
keyless records spread over partitions by bytes produced (KIP-794), whatever linger does; and the
error classes the Java client raises per request.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.producers import ProducerFactory, committed_values, partition_runs
from txnproducer import errors
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-proto")
    yield factory
    mock_cluster.clear_faults()
    factory.close_all(1)


# --- 1. a refused send() does not start the transaction (TV2) ------------------------------------


@TVS
def test_a_refused_send_leaves_the_transaction_committable(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """Java adds a partition to the transaction only once the record is in the accumulator. A
    send() that raised queued nothing, so the coordinator must not be told about a transaction:
    the commit succeeds (TV2 used to send EndTxn for a transaction the coordinator never saw, got
    INVALID_TXN_STATE and became fatal)."""
    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer(max_request_size=60 * 1024)
    producer.init_transactions()
    producer.begin_transaction()
    with pytest.raises(errors.RecordTooLargeError):
        producer.send("t", b"x" * 100_000, partition=0)
    producer.commit_transaction(10)
    assert producer.state.name == "READY"
    assert not [e for e in mock_cluster.request_log if e.api == "EndTxn"]  # nothing to end
    with producer.transaction():
        producer.send("t", b"after", partition=0)
    assert committed_values(mock_cluster, "t", 0) == [b"after"]


# --- 4. begin_transaction() and a concurrent send() ----------------------------------------------


@TVS
def test_a_send_racing_begin_transaction_joins_the_new_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """A send() from another thread that runs as soon as the transaction manager says
    IN_TRANSACTION must register its partition with the new transaction (it used to find the
    previous transaction's partition cache, skip the registration, and stall until
    delivery_timeout_ms)."""
    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer(delivery_timeout_ms=6000, request_timeout_ms=5000)
    producer.init_transactions()
    with producer.transaction():
        producer.send("t", b"first", partition=0)
    tm = producer._tm
    original = tm.begin_transaction
    sent: list[Any] = []

    def begin_then_send_from_another_thread() -> None:
        original()
        # the window: the state is IN_TRANSACTION, begin_transaction() has not returned yet
        thread = threading.Thread(target=lambda: sent.append(producer.send("t", b"second", partition=0)))
        thread.start()
        thread.join(5)

    tm.begin_transaction = begin_then_send_from_another_thread  # type: ignore[method-assign]
    try:
        producer.begin_transaction()
    finally:
        tm.begin_transaction = original  # type: ignore[method-assign]
    assert len(sent) == 1
    producer.commit_transaction(4)
    assert sent[0].get(1).offset >= 0
    assert committed_values(mock_cluster, "t", 0) == [b"first", b"second"]


# --- 5. a refused flush() ------------------------------------------------------------------------


def test_a_refused_flush_leaves_linger_in_force(mock_cluster: MockCluster, make_producer: Any) -> None:
    """flush(-1) raises ConfigError; it must not leave the accumulator flushing for good (then
    linger_ms was ignored for the rest of the producer's life: every record went out at once)."""
    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer(linger_ms=60_000, delivery_timeout_ms=70_000)
    producer.init_transactions()
    producer.begin_transaction()
    with pytest.raises(errors.ConfigError, match="timeout must be >= 0"):
        producer.flush(-1)
    producer.send("t", b"lingers", partition=0)
    # with linger in force nothing is produced until the commit flushes the batch
    with pytest.raises(TimeoutError, match="no matching request"):
        mock_cluster.wait_for_request(lambda e: e.api == "Produce", timeout=1.0)
    producer.commit_transaction(5)
    assert committed_values(mock_cluster, "t", 0) == [b"lingers"]


# --- 9. the sticky partitioner follows bytes produced (KIP-794), not batches sent -----------------


@TVS
def test_keyless_records_switch_partition_by_bytes_produced_whatever_linger_does(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """Java's built-in partitioner (KIP-794) keeps keyless records on one partition until
    batch_size bytes were produced to it (and its last batch is full, or twice batch_size), then
    picks another at random. A batch that leaves early (here: flush() after every record, as a
    short linger on a slow machine does) must not make the records move on: they used to start a
    new partition at every batch, one record each."""
    mock_cluster.create_topic("spread", partitions=3)
    producer = make_producer(batch_size=2000, linger_ms=0)
    producer.init_transactions()
    value = b"v" * 190  # about 200 bytes per record with its overhead: 10 per batch_size
    partitions: list[int] = []
    with producer.transaction():
        for _ in range(240):  # 23 random choices of 3 partitions: all the same one with a chance of 3**-23
            future = producer.send("spread", value)
            producer.flush(5)
            partitions.append(future.get(5).partition)
    runs = partition_runs(partitions)
    # each partition got batch_size bytes (every flush leaves its last batch full), then the next
    # sticky partition is random: it may be the same one, so a run is a whole multiple of that
    assert all(run % 10 == 0 for run in runs[:-1]), runs
    assert len(set(partitions)) > 1


# --- 3. documented error classes, classified per request as the Java client does ------------------


@TVS
def test_init_refused_for_authorization_can_be_called_again(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer()
    mock_cluster.inject_error("InitProducerId", 53, count=1)  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    with pytest.raises(errors.TransactionalIdAuthorizationError, match="init_transactions\\(\\) again"):
        producer.init_transactions()
    producer.init_transactions()  # the ACL "was fixed": the same producer initializes
    with producer.transaction():
        producer.send("t", b"ok", partition=0)
    assert committed_values(mock_cluster, "t", 0) == [b"ok"]


@TVS
def test_invalid_transaction_timeout_raises_its_documented_class(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    mock_cluster.inject_error("InitProducerId", 50, count=1)
    with pytest.raises(errors.InvalidTransactionTimeoutError, match=r"transaction\.max\.timeout\.ms"):
        producer.init_transactions()


@TVS
def test_invalid_producer_id_mapping_raises_its_documented_class(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("t", b"x", partition=0).get(5)
    mock_cluster.inject_error("EndTxn", 49, count=1)
    with pytest.raises(errors.InvalidProducerIdMappingError):
        producer.commit_transaction(5)
    assert producer.state.name == "FATAL_ERROR"


@TVS
@pytest.mark.parametrize(("code", "name"), [(87, "INVALID_RECORD"), (48, "INVALID_TXN_STATE")])
def test_a_batch_refused_with_an_unmapped_code_fails_its_records_with_an_abortable_error(
        mock_cluster: MockCluster, make_producer: Any, code: int, name: str) -> None:
    """INVALID_RECORD has no class of its own: the record's future fails with ProduceRejectedError
    (abortable, not retriable: the same bytes would be refused again). INVALID_TXN_STATE on a Produce (a
    broker's answer to a partition not added to the transaction) makes the transaction abortable, as in
    the Java client, so the future must not say "fatal, close the producer" (InvalidTxnStateError is a
    FatalError) either. The abort works and the producer goes on."""
    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    mock_cluster.inject_error("Produce", code, count=1)
    future = producer.send("t", b"bad", partition=0)
    with pytest.raises(errors.ProduceRejectedError, match=name) as info:
        future.get(5)
    assert isinstance(info.value, errors.AbortableError)
    assert not isinstance(info.value, (errors.RetriableError, errors.FatalError))
    with pytest.raises(errors.AbortableError, match=name):
        producer.commit_transaction(5)
    producer.abort_transaction(5)
    with producer.transaction():
        producer.send("t", b"good", partition=0)
    assert committed_values(mock_cluster, "t", 0) == [b"good"]


@TVS
def test_group_authorization_failure_is_abortable_and_the_producer_goes_on(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    from kafka.structs import OffsetAndMetadata, TopicPartition

    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("t", b"x", partition=0)
    mock_cluster.inject_error("TxnOffsetCommit", 30, count=1)
    with pytest.raises(errors.GroupAuthorizationError):
        producer.send_offsets_to_transaction({TopicPartition("in", 0): OffsetAndMetadata(3, "", -1)}, "g")
    producer.abort_transaction(5)
    with producer.transaction():
        producer.send("t", b"y", partition=0)
        producer.send_offsets_to_transaction({TopicPartition("in", 0): OffsetAndMetadata(3, "", -1)}, "g")
    assert committed_values(mock_cluster, "t", 0) == [b"y"]
    assert mock_cluster.committed_offsets("g") == {("in", 0): 3}


# --- 6. TV1: a batch that expires while aborting bumps the epoch (KIP-360) ------------------------


@pytest.mark.parametrize("mock_cluster", [1], indirect=True, ids=["tv1"])
def test_tv1_a_batch_lost_while_aborting_bumps_the_epoch_so_the_next_transaction_is_clean(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """Under TV1 the epoch outlives the transaction. A batch that was sent but never answered
    (its broker went silent) and expired while the transaction was being aborted leaves the
    partition's sequence unknown: the producer must bump the epoch after the abort, as KIP-360
    does after any such failure. Without it the next transaction's first batch there got
    OUT_OF_ORDER_SEQUENCE_NUMBER, was retried until delivery_timeout_ms, and failed."""
    txn_id = "tx-tv1-lost"
    mock_cluster.create_topic("t", partitions=3)
    producer = make_producer(txn_id, linger_ms=0, request_timeout_ms=1000, delivery_timeout_ms=2500,
                             retry_backoff_ms=50)
    producer.init_transactions()
    coordinator = mock_cluster.coordinator_for(txn_id)
    partition = next(p for p in range(3) if mock_cluster.leader_of("t", p) != coordinator)
    leader = mock_cluster.leader_of("t", partition)
    with producer.transaction():  # the broker now has sequences for this producer there
        producer.send("t", b"committed", partition=partition)
    epoch = producer.epoch

    producer.begin_transaction()
    # every Produce the leader gets from now on is lost with its connection, unanswered
    mock_cluster.drop_connection_after("Produce", count=10_000, when="before", broker_id=leader)
    lost = producer.send("t", b"lost", partition=partition)
    mock_cluster.wait_for_request(lambda e: e.api == "Produce" and e.dropped, timeout=5)
    aborted_at = mock_cluster.request_log[-1].seq
    producer.abort_transaction(10)  # waits until the unanswered batch expires
    with pytest.raises(errors.DeliveryTimeoutError):
        lost.get(1)
    mock_cluster.clear_faults()
    bumps = [e for e in mock_cluster.request_log if e.seq > aborted_at and e.api == "InitProducerId"
             and e.fields.get("producer_id", -1) >= 0]
    assert bumps and producer.epoch == epoch + 1

    with producer.transaction():
        producer.send("t", b"next", partition=partition)
    assert committed_values(mock_cluster, "t", partition) == [b"committed", b"next"]
    assert not [e for e in mock_cluster.request_log if e.seq > aborted_at and 45 in e.error_codes]


# --- 7. UNKNOWN_PRODUCER_ID after retention: sequences start again, the transaction goes on ------


@TVS
def test_unknown_producer_id_after_retention_restarts_sequences_and_commits(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """Retention removed everything this producer wrote to a partition, and with it its state
    there; a broker that answers such a batch UNKNOWN_PRODUCER_ID tells the log start offset. The
    Java client then starts the partition's sequences again at 0 and retries: the transaction
    commits (it used to be made abortable)."""
    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    with producer.transaction():
        for i in range(3):
            producer.send("t", b"old-%d" % i, partition=0)
    end = mock_cluster.state.partition_log("t", 0).high_watermark
    mock_cluster.delete_records("t", 0, end)
    mock_cluster.inject_error("Produce", 59, count=1, log_start_offset=end)
    with producer.transaction():
        futures = [producer.send("t", b"new-%d" % i, partition=0) for i in range(3)]
    assert [f.get(1).offset >= end for f in futures] == [True] * 3
    assert committed_values(mock_cluster, "t", 0) == [b"new-0", b"new-1", b"new-2"]
    retried = [e for e in mock_cluster.request_log if e.api == "Produce" and not e.error_codes]
    assert retried[-1].fields["batches"][0][4] == 0  # sent again from sequence 0


@pytest.mark.parametrize("mock_cluster", [1], indirect=True, ids=["tv1"])
def test_unknown_producer_id_without_lost_state_still_aborts(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """If our last acknowledged offset is at or past the log start, the broker did not lose our
    state to retention: as in Java, the batch fails and the transaction must abort. (TV1 only:
    under TV2 every transaction starts a new epoch with no acknowledged offset, so Java - and we -
    take any UNKNOWN_PRODUCER_ID with a log start offset as lost state.)"""
    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer()
    producer.init_transactions()
    with producer.transaction():
        producer.send("t", b"a", partition=0)
    mock_cluster.inject_error("Produce", 59, count=1, log_start_offset=0)
    producer.begin_transaction()
    future = producer.send("t", b"b", partition=0)
    with pytest.raises(errors.UnknownProducerIdError):
        future.get(5)
    producer.abort_transaction(5)


# --- 8. KIP-951: a leader move costs no metadata round trip or retry backoff ----------------------


@TVS
def test_a_leader_hint_routes_the_retry_to_the_new_leader_at_once(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The old leader answers NOT_LEADER_OR_FOLLOWER with the new leader and its endpoint
    (KIP-951). The Java client sends the retry there at once; we used to wait for the retry
    backoff and a metadata refresh (here a 10 s backoff would exceed the commit's bound)."""
    mock_cluster.create_topic("t", partitions=1)
    producer = make_producer(retry_backoff_ms=10_000, retry_backoff_max_ms=10_000,
                             metadata_max_age_ms=600_000)
    producer.init_transactions()
    with producer.transaction():
        producer.send("t", b"before", partition=0)
    old = mock_cluster.leader_of("t", 0)
    new = next(b for b in mock_cluster.broker_ids if b != old)
    mock_cluster.move_leader("t", 0, new)
    moved_at = mock_cluster.request_log[-1].seq
    producer.begin_transaction()
    producer.send("t", b"after", partition=0)
    producer.commit_transaction(5)
    produces = [e for e in mock_cluster.request_log if e.seq > moved_at and e.api == "Produce"]
    assert [(e.broker_id, e.error_codes) for e in produces] == [(old, (6,)), (new, ())]
    assert committed_values(mock_cluster, "t", 0) == [b"before", b"after"]


# --- 2. every request is built for the broker it goes to (rolling upgrades) -----------------------

# What a broker one release behind speaks: Kafka 3.x-era maxima below what a TV1 client prefers
OLDER_BROKER = {"Produce": (3, 9), "InitProducerId": (0, 3), "AddPartitionsToTxn": (0, 3),
                "AddOffsetsToTxn": (0, 3), "TxnOffsetCommit": (0, 3), "EndTxn": (0, 3),
                "FindCoordinator": (0, 3)}


@pytest.mark.parametrize("mock_cluster", [1], indirect=True, ids=["tv1"])
@pytest.mark.parametrize("older", ["leader", "coordinator"])
def test_each_broker_gets_the_versions_it_speaks_during_a_rolling_upgrade(
        mock_cluster: MockCluster, make_producer: Any, older: str) -> None:
    """Brokers of two releases serve the cluster while it is upgraded. As in the Java client,
    each request carries the highest version its own destination speaks (from that connection's
    ApiVersions): a version only the newer brokers know used to reach the older one, which
    closed the connection, so the batches were retried until delivery_timeout_ms."""
    txn_id = f"tx-upgrade-{older}"
    mock_cluster.create_topic("t", partitions=3)
    old = 2
    partition = next(p for p in range(3) if (mock_cluster.leader_of("t", p) == old) == (older == "leader"))
    if older == "coordinator":
        mock_cluster.move_coordinator(txn_id, old)
        mock_cluster.move_coordinator("g", old, key_type="group")
    else:
        mock_cluster.move_coordinator(txn_id, next(b for b in mock_cluster.broker_ids if b != old))
    mock_cluster.set_broker_api_versions(old, OLDER_BROKER)
    producer = make_producer(txn_id, delivery_timeout_ms=6000, request_timeout_ms=2000)
    producer.init_transactions()
    for i in range(2):
        with producer.transaction():
            producer.send("t", b"v%d" % i, partition=partition)
            if older == "coordinator":
                from kafka.structs import OffsetAndMetadata, TopicPartition
                producer.send_offsets_to_transaction({TopicPartition("in", 0): OffsetAndMetadata(i, "", -1)},
                                                     "g")
    assert committed_values(mock_cluster, "t", partition) == [b"v0", b"v1"]
    to_old = [e for e in mock_cluster.request_log if e.broker_id == old and e.api != "ApiVersions"]
    assert to_old and not [e for e in to_old if e.dropped]  # the older broker refused nothing
    for e in to_old:
        cap = OLDER_BROKER.get(e.api)
        assert cap is None or e.version <= cap[1], (e.api, e.version)
    newer = [e for e in mock_cluster.request_log if e.broker_id != old and e.api == "Produce"]
    assert all(e.version == 11 for e in newer)  # the others still get what they speak
