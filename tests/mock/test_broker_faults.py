"""MockCluster fault injection: each method and the effect a client sees."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient, WireClosedError, build_batch

Wire = Callable[[int], WireClient]
TOPIC = "faults-topic"


def produce_request(batch: bytes, partition: int = 0) -> Any:
    t = ProduceRequest.TopicProduceData
    return ProduceRequest[11](
        transactional_id=None,
        acks=-1,
        timeout_ms=5000,
        topic_data=[t(name=TOPIC, partition_data=[t.PartitionProduceData(index=partition, records=batch)])],
    )


def metadata(client: WireClient) -> Any:
    return client.send(MetadataRequest[12](topics=None, allow_auto_topic_creation=False))


def list_offsets(client: WireClient, topic: str = TOPIC) -> Any:
    t = ListOffsetsRequest.ListOffsetsTopic
    req = ListOffsetsRequest[7](
        replica_id=-1,
        isolation_level=0,
        topics=[
            t(
                name=topic,
                partitions=[
                    t.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1, timestamp=-1)
                    for p in (0, 1)
                ],
            )
        ],
    )
    return client.send(req)


def test_inject_error_answers_next_requests_with_codes(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic(TOPIC, 2)
    client = wire(1)
    mock_cluster.inject_error("ListOffsets", [6, 15])
    first, second, third = (list_offsets(client) for _ in range(3))
    assert [p.error_code for p in first.topics[0].partitions] == [6, 6]
    assert [p.error_code for p in second.topics[0].partitions] == [15, 15]
    assert {p.error_code for p in third.topics[0].partitions} <= {0, 6}  # real answers again
    injected = [e for e in mock_cluster.request_log if e.injected]
    assert [e.error_codes for e in injected] == [(6, 6), (15, 15)]


def test_inject_error_batched_find_coordinator_and_broker_filter(
    mock_cluster: MockCluster, wire: Wire
) -> None:
    mock_cluster.inject_error(10, 15, count=1, broker_id=2)
    req = FindCoordinatorRequest[4](key_type=1, coordinator_keys=["a", "b"])
    on_1 = wire(1).send(req)
    assert [c.error_code for c in on_1.coordinators] == [0, 0]
    on_2 = wire(2).send(FindCoordinatorRequest[4](key_type=1, coordinator_keys=["a", "b"]))
    assert [(c.key, c.error_code) for c in on_2.coordinators] == [("a", 15), ("b", 15)]
    v3 = wire(2).send(FindCoordinatorRequest[3](key="a", key_type=1))
    assert v3.error_code == 0


def test_inject_error_into_produce_does_not_append(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    mock_cluster.inject_error("Produce", 7)  # REQUEST_TIMED_OUT
    client = wire(mock_cluster.leader_of(TOPIC, 0))
    resp = client.send(produce_request(build_batch([(None, b"x")])))
    assert resp.responses[0].partition_responses[0].error_code == 7
    assert mock_cluster.state.partition_log(TOPIC, 0).high_watermark == 0  # type: ignore[union-attr]


def test_delay_responses_holds_the_answer(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.delay_responses("Metadata", delay_ms=60_000, broker_id=1)
    slow = wire(1)
    slow.timeout = 0.3
    slow._sock.settimeout(0.3)
    with pytest.raises(WireClosedError):
        metadata(slow)
    assert len(metadata(wire(2)).brokers) == 3  # other brokers answer at once
    mock_cluster.delay_responses("Metadata", delay_ms=20, broker_id=1)
    assert len(metadata(wire(1)).brokers) == 3  # a short delay still answers
    assert mock_cluster.request_log[-1].broker_id == 1


def test_drop_connections_closes_client_sockets(mock_cluster: MockCluster, wire: Wire) -> None:
    clients = [wire(b) for b in (1, 2, 3)]
    for c in clients:
        metadata(c)
    mock_cluster.drop_connections(broker_id=2)
    assert clients[1].is_closed_by_peer(timeout=5)
    assert not clients[0].is_closed_by_peer(timeout=0.05)
    mock_cluster.drop_connections()
    assert clients[0].is_closed_by_peer(timeout=5) and clients[2].is_closed_by_peer(timeout=5)
    assert len(metadata(wire(2)).brokers) == 3  # reconnecting works


@pytest.mark.parametrize("when,appended", [("before", 0), ("after", 1)])
def test_drop_connection_after_before_or_after_handling(
    mock_cluster: MockCluster, wire: Wire, when: str, appended: int
) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    mock_cluster.drop_connection_after("Produce", when=when)
    client = wire(mock_cluster.leader_of(TOPIC, 0))
    with pytest.raises(WireClosedError):
        client.send(
            produce_request(build_batch([(None, b"x")], producer_id=5, producer_epoch=0, base_sequence=0))
        )
    assert mock_cluster.state.partition_log(TOPIC, 0).high_watermark == appended  # type: ignore[union-attr]
    entry = mock_cluster.wait_for_request(lambda e: e.api == "Produce")
    assert entry.dropped
    # the retry on a new connection: a duplicate if it was appended, a fresh append otherwise
    retry = wire(mock_cluster.leader_of(TOPIC, 0)).send(
        produce_request(build_batch([(None, b"x")], producer_id=5, producer_epoch=0, base_sequence=0))
    )
    assert (
        retry.responses[0].partition_responses[0].error_code,
        retry.responses[0].partition_responses[0].base_offset,
    ) == (0, 0)
    assert mock_cluster.state.partition_log(TOPIC, 0).high_watermark == 1  # type: ignore[union-attr]


@pytest.mark.stops_brokers
def test_stop_and_start_broker_moves_leaders(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic(TOPIC, 6)
    victim = mock_cluster.leader_of(TOPIC, 0)
    old_epoch = mock_cluster.state.partition_log(TOPIC, 0).leader_epoch  # type: ignore[union-attr]
    victim_client = wire(victim)
    metadata(victim_client)
    host, port = mock_cluster.broker_address(victim)
    mock_cluster.stop_broker(victim)
    assert victim_client.is_closed_by_peer(timeout=5)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, port), timeout=2).close()
    survivor = next(b for b in mock_cluster.broker_ids if b != victim)
    meta = metadata(wire(survivor))
    assert victim not in {b.node_id for b in meta.brokers}
    part0 = next(p for t in meta.topics if t.name == TOPIC for p in t.partitions if p.partition_index == 0)
    assert part0.leader_id != victim and part0.leader_epoch == old_epoch + 1
    assert victim not in {p.leader_id for t in meta.topics for p in t.partitions}
    mock_cluster.start_broker(victim)
    assert mock_cluster.broker_address(victim) == (host, port)
    back = metadata(wire(victim))
    assert victim in {b.node_id for b in back.brokers}
    assert mock_cluster.leader_of(TOPIC, 0) == victim


def test_move_coordinator(mock_cluster: MockCluster, wire: Wire) -> None:
    before = mock_cluster.coordinator_for("txn-moved")
    target = next(b for b in mock_cluster.broker_ids if b != before)
    mock_cluster.move_coordinator("txn-moved", target)
    resp = wire(1).send(FindCoordinatorRequest[6](key_type=1, coordinator_keys=["txn-moved"]))
    assert resp.coordinators[0].node_id == target
    group = wire(1).send(FindCoordinatorRequest[6](key_type=0, coordinator_keys=["txn-moved"]))
    assert group.coordinators[0].node_id == mock_cluster.coordinator_for("txn-moved", key_type="group")


def test_black_hole_reads_but_never_answers(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.black_hole(broker_id=3)
    silent = wire(3)
    silent.timeout = 0.3
    silent._sock.settimeout(0.3)
    with pytest.raises(WireClosedError):
        metadata(silent)
    assert len(metadata(wire(1)).brokers) == 3
    mock_cluster.black_hole(broker_id=3, enabled=False)
    assert len(metadata(wire(3)).brokers) == 3
