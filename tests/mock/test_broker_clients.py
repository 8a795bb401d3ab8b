"""Third-party clients against the MockCluster, and the transactional data path over the wire."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import EndTxnRequest, InitProducerIdRequest, ProduceRequest

from tests._support.producers import read_committed_via_kafka_python
from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient, build_batch

Wire = Callable[[int], WireClient]


def test_kafka_python_idempotent_producer_and_consumer_round_trip(mock_cluster: MockCluster) -> None:
    producer = KafkaProducer(
        bootstrap_servers=mock_cluster.bootstrap_servers, enable_idempotence=True, acks="all", linger_ms=5
    )
    try:
        futures = [
            producer.send("round-trip", key=str(i).encode(), value=f"v{i}".encode()) for i in range(60)
        ]
        producer.flush(timeout=10)
        metas = [f.get(timeout=10) for f in futures]
    finally:
        producer.close(timeout=5)
    assert {m.partition for m in metas} == {0, 1, 2}
    consumer = KafkaConsumer(
        bootstrap_servers=mock_cluster.bootstrap_servers,
        isolation_level="read_committed",
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
    )
    try:
        consumer.assign([TopicPartition("round-trip", p) for p in range(3)])
        consumer.seek_to_beginning()
        values: list[bytes] = []
        for message in consumer:
            values.append(message.value)
            if len(values) == 60:
                break
    finally:
        consumer.close()
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(60))
    produces = [e for e in mock_cluster.request_log if e.api == "Produce"]
    assert produces and all(not e.error_codes for e in produces)
    assert all(b[2] >= 0 for e in produces for b in e.fields["batches"])  # idempotent: producer ids set


def test_confluent_kafka_idempotent_producer(mock_cluster: MockCluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": mock_cluster.bootstrap_servers, "enable.idempotence": True, "log_level": 3}
    )
    delivered: list[Any] = []
    for i in range(20):
        producer.produce(
            "confluent-topic", key=str(i), value=f"c{i}", on_delivery=lambda err, msg: delivered.append(err)
        )
    assert producer.flush(10) == 0
    assert delivered == [None] * 20
    total = sum(
        mock_cluster.state.partition_log("confluent-topic", p).high_watermark  # type: ignore[union-attr]
        for p in range(3)
    )
    assert total == 20


def _txn_setup(cluster: MockCluster, wire: Wire, txn_id: str, version: int) -> tuple[WireClient, int, int]:
    coord = cluster.coordinator_for(txn_id)
    found = wire(1).send(FindCoordinatorRequest[6](key_type=1, coordinator_keys=[txn_id]))
    assert found.coordinators[0].node_id == coord
    client = wire(coord)
    init = client.send(
        InitProducerIdRequest[version](
            transactional_id=txn_id, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
        )
    )
    assert init.error_code == 0
    return client, init.producer_id, init.producer_epoch


def _produce_txn(
    cluster: MockCluster, wire: Wire, txn_id: str, pid: int, epoch: int, seq: int, version: int = 12
) -> Any:
    t = ProduceRequest.TopicProduceData
    batch = build_batch(
        [(None, b"txn")], producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True
    )
    req = ProduceRequest[version](
        transactional_id=txn_id,
        acks=-1,
        timeout_ms=5000,
        topic_data=[t(name="txn-topic", partition_data=[t.PartitionProduceData(index=0, records=batch)])],
    )
    return wire(cluster.leader_of("txn-topic", 0)).send(req).responses[0].partition_responses[0]


def test_tv2_transaction_over_the_wire_with_held_markers(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic("txn-topic", 1)
    client, pid, epoch = _txn_setup(mock_cluster, wire, "txn-wire", 5)
    assert _produce_txn(mock_cluster, wire, "txn-wire", pid, epoch, 0).error_code == 0
    log = mock_cluster.state.partition_log("txn-topic", 0)
    assert log is not None and log.last_stable_offset == 0 and log.high_watermark == 1
    mock_cluster.hold_markers("txn-wire")
    end = client.send(
        EndTxnRequest[5](transactional_id="txn-wire", producer_id=pid, producer_epoch=epoch, committed=True)
    )
    assert (end.error_code, end.producer_epoch) == (0, epoch + 1)
    described = mock_cluster.describe_transaction("txn-wire")
    assert described is not None and described["state"] == "PrepareCommit"
    assert log.last_stable_offset == 0  # marker not written yet
    mock_cluster.release_markers()
    assert log.last_stable_offset == 2 and log.high_watermark == 2
    state = log.producer_state(pid)
    assert state is not None and state.producer_epoch == epoch + 1
    # the old epoch is fenced by the partition (after a TV2 commit), the new one starts at sequence 0
    assert _produce_txn(mock_cluster, wire, "txn-wire", pid, epoch, 1).error_code == 47
    assert _produce_txn(mock_cluster, wire, "txn-wire", pid, epoch + 1, 0).error_code == 0


def test_expired_transaction_is_aborted(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic("txn-topic", 1)
    _, pid, epoch = _txn_setup(mock_cluster, wire, "txn-expire", 5)
    assert _produce_txn(mock_cluster, wire, "txn-expire", pid, epoch, 0).error_code == 0
    mock_cluster.expire_transaction("txn-expire")
    log = mock_cluster.state.partition_log("txn-topic", 0)
    assert log is not None and log.last_stable_offset == log.high_watermark == 2
    assert [(a.producer_id, a.first_offset) for a in log.aborted_transactions(0, 2)] == [(pid, 0)]
    assert _produce_txn(mock_cluster, wire, "txn-expire", pid, epoch, 1).error_code == 47


@pytest.mark.parametrize("mock_cluster", [1], indirect=True)
def test_tv1_produce_to_unadded_partition_is_rejected(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic("txn-topic", 1)
    _, pid, epoch = _txn_setup(mock_cluster, wire, "txn-tv1", 4)
    resp = _produce_txn(mock_cluster, wire, "txn-tv1", pid, epoch, 0, version=11)
    assert (resp.error_code, resp.log_start_offset) == (120, -1)  # TRANSACTION_ABORTABLE
    old = _produce_txn(mock_cluster, wire, "txn-tv1", pid, epoch, 0, version=10)
    assert (old.error_code, old.error_message) == (48, "Partition was not added to the transaction")


def test_injected_errors_on_transactional_apis_leave_state_untouched(
    mock_cluster: MockCluster, wire: Wire
) -> None:
    from kafka.protocol.producer import AddPartitionsToTxnRequest

    mock_cluster.create_topic("txn-topic", 2)
    client, pid, epoch = _txn_setup(mock_cluster, wire, "txn-inject", 4)
    mock_cluster.inject_error("AddPartitionsToTxn", 51)
    topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    add = AddPartitionsToTxnRequest[3](
        v3_and_below_transactional_id="txn-inject",
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[topic(name="txn-topic", partitions=[0, 1])],
    )
    first = client.send(add)
    assert [
        (r.name, p.partition_index, p.partition_error_code)
        for r in first.results_by_topic_v3_and_below
        for p in r.results_by_partition
    ] == [("txn-topic", 0, 51), ("txn-topic", 1, 51)]
    described = mock_cluster.describe_transaction("txn-inject")
    assert described is not None and described["partitions"] == []
    second = client.send(add)
    assert {
        p.partition_error_code for r in second.results_by_topic_v3_and_below for p in r.results_by_partition
    } == {0}
    mock_cluster.inject_error("EndTxn", [51, 51])
    end = EndTxnRequest[4](
        transactional_id="txn-inject", producer_id=pid, producer_epoch=epoch, committed=False
    )
    assert [client.send(end).error_code for _ in range(3)] == [51, 51, 0]
    injected = [e for e in mock_cluster.request_log if e.injected]
    assert [(e.api, e.error_codes) for e in injected] == [
        ("AddPartitionsToTxn", (51, 51)),
        ("EndTxn", (51,)),
        ("EndTxn", (51,)),
    ]


@pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True)
def test_kafka_python_transactional_producer_commit_and_abort(mock_cluster: MockCluster) -> None:
    producer = KafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="kp-txn")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(20):
            producer.send("kp-txn-topic", value=f"keep{i}".encode())
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(5):
            producer.send("kp-txn-topic", value=f"drop{i}".encode())
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(timeout=5)
    values = read_committed_via_kafka_python(mock_cluster, "kp-txn-topic", 3, 20, idle_ms=3000)
    assert sorted(values) == sorted(f"keep{i}".encode() for i in range(20))
    records = [r for p in range(3) for r in mock_cluster.partition_records("kp-txn-topic", p)]
    assert len(records) == 25  # the aborted records are in the log, hidden from read_committed


def test_confluent_kafka_transactional_producer(mock_cluster: MockCluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": mock_cluster.bootstrap_servers, "transactional.id": "ck-txn", "log_level": 3}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(15):
        producer.produce("ck-txn-topic", key=str(i), value=f"keep{i}")
    producer.commit_transaction(10)
    producer.begin_transaction()
    producer.produce("ck-txn-topic", value="drop")
    assert producer.flush(10) == 0  # written to the log, then aborted
    producer.abort_transaction(10)
    values = read_committed_via_kafka_python(mock_cluster, "ck-txn-topic", 3, 15, idle_ms=3000)
    assert sorted(values) == sorted(f"keep{i}".encode() for i in range(15))
    assert mock_cluster.describe_transaction("ck-txn")["state"] == "CompleteAbort"  # type: ignore[index]
