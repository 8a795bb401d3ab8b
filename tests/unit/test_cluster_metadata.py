"""ClusterMetadata's leader map: the one lookup per partition the Sender's drain makes must say what
``leader_for_partition`` says, after every answer and every KIP-951 leader hint."""

from __future__ import annotations

import uuid

from kafka.structs import TopicPartition

from txnproducer._internal.network.addresses import ServerAddress
from txnproducer._internal.network.cluster_metadata import ClusterMetadata, PartitionLeader, TopicMetadata


def _cluster() -> ClusterMetadata:
    return ClusterMetadata([ServerAddress("127.0.0.1", 9092)], metadata_max_age_ms=300_000,
                           retry_backoff_ms=100)


def _agrees(cluster: ClusterMetadata, tps: list[TopicPartition]) -> None:
    lookup = cluster.leader_ids().get
    for tp in tps:
        leader = cluster.leader_for_partition(tp)
        assert lookup(tp) == (None if leader is None or leader < 0 else leader), tp


def test_the_leader_map_follows_answers_and_hints() -> None:
    cluster = _cluster()
    tps = [TopicPartition(t, p) for t in ("a", "b", "gone") for p in range(3)]
    a = {0: PartitionLeader(1, 5), 1: PartitionLeader(-1, 5), 2: PartitionLeader(2, 5)}
    cluster.update([], [TopicMetadata("a", 0, uuid.uuid4(), a),
                        TopicMetadata("b", 0, uuid.uuid4(), {0: PartitionLeader(3, 1)}),
                        TopicMetadata("gone", 3, None, {})],  # UNKNOWN_TOPIC_OR_PARTITION: no leaders
                   cluster_id="c", epochs_reliable=True)
    _agrees(cluster, tps)
    assert cluster.leader_ids() == {("a", 0): 1, ("a", 2): 2, ("b", 0): 3}
    assert cluster.update_partition_leader(TopicPartition("a", 1), 2, 6)  # a leader again
    assert cluster.update_partition_leader(TopicPartition("a", 0), -1, 6)  # none now
    assert not cluster.update_partition_leader(TopicPartition("b", 0), 4, 1)  # not newer: ignored
    _agrees(cluster, tps)
    assert cluster.leader_ids() == {("a", 1): 2, ("a", 2): 2, ("b", 0): 3}
    cluster.update([], [TopicMetadata("b", 0, uuid.uuid4(), {0: PartitionLeader(4, 2)})], cluster_id="c",
                   epochs_reliable=True)  # the next answer replaces everything
    _agrees(cluster, tps)
    assert cluster.leader_ids() == {("b", 0): 4}
