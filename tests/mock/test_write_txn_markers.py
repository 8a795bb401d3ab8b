"""MockCluster WriteTxnMarkers (an operator's abort of a hanging transaction), offline partitions, and the
DescribeProducers answer of a follower - what the admin tools rely on, as Kafka 4.1's broker answers it.

The ACL side of WriteTxnMarkers is in test_authorization.py; the hanging-transaction helpers that make a
partition hold a forgotten transaction are in test_hanging.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.admin.transactions import DescribeProducersRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest

from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster
from txnproducer.testing.handlers import SUPPORTED_VERSIONS, advertised_versions
from txnproducer.testing.wire_client import WireClient

Wire = Callable[[int], WireClient]
TOPIC = "markers"


def marker(
    producer_id: int,
    epoch: int,
    partitions: list[int],
    coordinator_epoch: int = 0,
    commit: bool = False,
    topic: str = TOPIC,
) -> Any:
    m = WriteTxnMarkersRequest.WritableTxnMarker
    return WriteTxnMarkersRequest[1](
        markers=[
            m(
                producer_id=producer_id,
                producer_epoch=epoch,
                transaction_result=commit,
                coordinator_epoch=coordinator_epoch,
                topics=[m.WritableTxnMarkerTopic(name=topic, partition_indexes=partitions)],
            )
        ]
    )


def codes(answer: Any) -> list[int]:
    return [p.error_code for m in answer.markers for t in m.topics for p in t.partitions]


def test_write_txn_markers_is_advertised_as_kafka_4_1_does() -> None:
    assert SUPPORTED_VERSIONS[27] == (1, 1)  # conformance api_versions.json: WriteTxnMarkers 1-1
    assert (27, 1, 1) in advertised_versions(2) and (27, 1, 1) in advertised_versions(1)


def test_abort_marker_ends_a_hanging_transaction(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic(TOPIC, 2)
    held = mock_cluster.plant_hanging_transaction(TOPIC, 0, records=3)
    log = mock_cluster.state.partition_log(TOPIC, 0)
    assert log is not None and (log.last_stable_offset, log.high_watermark) == (0, 3)
    answer = wire(mock_cluster.leader_of(TOPIC, 0)).send(marker(held.producer_id, held.producer_epoch, [0]))
    assert answer.markers[0].producer_id == held.producer_id and codes(answer) == [ec.NONE]
    assert (log.last_stable_offset, log.high_watermark) == (4, 4)  # 3 records + the ABORT marker
    assert mock_cluster.partition_records(TOPIC, 0, read_committed=True) == []  # aborted, not visible
    assert [a.producer_id for a in log.aborted_transactions(0, 4)] == [held.producer_id]
    entry = mock_cluster.wait_for_request(lambda e: e.api == "WriteTxnMarkers")
    assert entry.fields["partitions"] == [(TOPIC, 0)]
    assert (entry.fields["producer_id"], entry.fields["committed"]) == (held.producer_id, False)


def test_markers_go_to_the_leader_of_an_existing_partition(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    held = mock_cluster.plant_hanging_transaction(TOPIC, 0)
    follower = next(b for b in mock_cluster.broker_ids if b != mock_cluster.leader_of(TOPIC, 0))
    assert codes(wire(follower).send(marker(held.producer_id, 0, [0]))) == [ec.NOT_LEADER_OR_FOLLOWER]
    leader = wire(mock_cluster.leader_of(TOPIC, 0))
    assert codes(leader.send(marker(held.producer_id, 0, [5]))) == [ec.UNKNOWN_TOPIC_OR_PARTITION]
    assert codes(leader.send(marker(held.producer_id, 0, [0], topic="nope"))) == [
        ec.UNKNOWN_TOPIC_OR_PARTITION
    ]
    log = mock_cluster.state.partition_log(TOPIC, 0)
    assert log is not None and log.last_stable_offset == 0  # nothing was written by the refused ones


def test_leader_refuses_an_older_epoch_or_coordinator_epoch(mock_cluster: MockCluster, wire: Wire) -> None:
    """ProducerAppendInfo.appendEndTxnMarker: the epoch, then the coordinator epoch of the last marker."""
    mock_cluster.create_topic(TOPIC, 1)
    log = mock_cluster.state.partition_log(TOPIC, 0)
    assert log is not None
    with mock_cluster.state.lock:
        log.write_marker(
            900, 3, commit=True, coordinator_epoch=5
        )  # the producer's state: epoch 3, coordinator 5
    leader = wire(mock_cluster.leader_of(TOPIC, 0))
    assert codes(leader.send(marker(900, 2, [0], coordinator_epoch=5))) == [ec.INVALID_PRODUCER_EPOCH]
    assert codes(leader.send(marker(900, 3, [0], coordinator_epoch=4))) == [ec.TRANSACTION_COORDINATOR_FENCED]
    assert log.high_watermark == 1  # only the first marker
    # the same epoch and coordinator epoch pass (the check is >=, Kafka 4.1 has no KIP-1228 strict check)
    assert codes(leader.send(marker(900, 3, [0], coordinator_epoch=5))) == [ec.NONE]
    assert log.high_watermark == 2


def test_offline_partition_has_no_leader_in_metadata(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic(TOPIC, 2)
    mock_cluster.set_partition_offline(TOPIC, 1)
    request = MetadataRequest[12](
        topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC, topic_id=None)],
        allow_auto_topic_creation=False,
    )
    answer = wire(1).send(request)
    parts = {p.partition_index: p for p in answer.topics[0].partitions}
    assert (parts[1].error_code, parts[1].leader_id, parts[1].isr_nodes) == (ec.LEADER_NOT_AVAILABLE, -1, [])
    assert parts[0].error_code == ec.NONE and parts[0].leader_id > 0
    mock_cluster.stop_broker(3)  # a rebalance of leaders keeps it offline
    mock_cluster.start_broker(3)
    assert mock_cluster.leader_of(TOPIC, 1) == -1
    mock_cluster.set_partition_offline(TOPIC, 1, offline=False)
    assert mock_cluster.leader_of(TOPIC, 1) > 0


@pytest.mark.parametrize("replica", ["leader", "follower"])
def test_any_replica_describes_producers(mock_cluster: MockCluster, wire: Wire, replica: str) -> None:
    """Kafka's ReplicaManager.activeProducerState answers on followers too (``--broker-id``)."""
    mock_cluster.create_topic(TOPIC, 1)
    held = mock_cluster.plant_hanging_transaction(TOPIC, 0)
    leader = mock_cluster.leader_of(TOPIC, 0)
    broker = leader if replica == "leader" else next(b for b in mock_cluster.broker_ids if b != leader)
    t = DescribeProducersRequest.TopicRequest
    answer = wire(broker).send(DescribeProducersRequest[0](topics=[t(name=TOPIC, partition_indexes=[0])]))
    (part,) = answer.topics[0].partitions
    assert part.error_code == ec.NONE
    assert [(p.producer_id, p.current_txn_start_offset) for p in part.active_producers] == [
        (held.producer_id, 0)
    ]
