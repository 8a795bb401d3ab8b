"""confluent-kafka's KIP-848 consumers (librdkafka, ``group.protocol=consumer``) on MockCluster.

A third party's implementation of the protocol against ours: two consumers share a topic, one closes, the
other takes its partitions - each phase as ConsumerGroupDescribe shows it must be what a real Kafka 4.1
shows for the same scenario (``tests/_support/kip848_clients.py``; the broker tier runs it against Kafka),
and every record is consumed.
"""

from __future__ import annotations

import uuid

import pytest

from tests._support import kip848_clients
from txnproducer.testing import MockCluster

pytest.importorskip("confluent_kafka")


@pytest.mark.timeout(120)
def test_two_librdkafka_members_share_and_one_leaves() -> None:
    with MockCluster(num_brokers=3) as cluster:
        topic, group = f"kip848-{uuid.uuid4().hex[:8]}", f"kip848-group-{uuid.uuid4().hex[:8]}"
        cluster.create_topic(topic, partitions=kip848_clients.PARTITIONS)
        phases, missing = kip848_clients.run(cluster.bootstrap_servers, topic, group)
        beats = [e for e in cluster.request_log if e.api == "ConsumerGroupHeartbeat"]
    assert phases == kip848_clients.EXPECTED
    assert not missing, f"{len(missing)} records never consumed"
    assert beats and all(e.version == 1 for e in beats), "librdkafka speaks ConsumerGroupHeartbeat v1"
    assert not [e for e in beats if e.error_codes], [e.error_codes for e in beats if e.error_codes]


@pytest.mark.timeout(120)
def test_a_classic_group_takes_a_consumer_protocol_member_and_turns_classic_again() -> None:
    """KIP-848's online migration with real clients of both protocols (librdkafka classic and consumer)."""
    with MockCluster(num_brokers=3) as cluster:
        topic, group = f"kip848-mig-{uuid.uuid4().hex[:8]}", f"kip848-mig-group-{uuid.uuid4().hex[:8]}"
        cluster.create_topic(topic, partitions=kip848_clients.PARTITIONS)
        phases, final = kip848_clients.run_migration(cluster.bootstrap_servers, topic, group)
        apis = {e.api for e in cluster.request_log}
    assert phases == kip848_clients.EXPECTED_MIGRATION
    assert final == list(range(kip848_clients.PARTITIONS))
    assert {"JoinGroup", "SyncGroup", "ConsumerGroupHeartbeat"} <= apis
