"""confluent-kafka's KIP-848 consumers on a real Kafka: the scenario MockCluster is held to.

``tests/_support/kip848_clients.py`` plays it - two ``group.protocol=consumer`` consumers share a topic of
four partitions, one closes, the other takes everything - and both tiers assert the same phases
(ConsumerGroupDescribe's state, group and member epochs, assignments): what the mock tier checks of
MockCluster is what this tier sees a real group coordinator do. The broker's heartbeat interval is Kafka's
5 s, so a phase takes a few heartbeats.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from tests._support import kip848_clients

pytest.importorskip("confluent_kafka")


@pytest.fixture
def topic(kafka_bootstrap: str) -> Iterator[str]:
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    name = f"kip848-{uuid.uuid4().hex[:8]}"
    try:
        admin.create_topics([NewTopic(name, num_partitions=kip848_clients.PARTITIONS, replication_factor=1)])
        yield name
    finally:
        admin.close()


@pytest.mark.timeout(240)
def test_two_librdkafka_members_share_and_one_leaves(kafka_bootstrap: str, topic: str) -> None:
    phases, missing = kip848_clients.run(kafka_bootstrap, topic, f"kip848-group-{uuid.uuid4().hex[:8]}")
    assert phases == kip848_clients.EXPECTED
    assert not missing, f"{len(missing)} records never consumed"


@pytest.mark.timeout(240)
def test_a_classic_group_takes_a_consumer_protocol_member_and_turns_classic_again(
    kafka_bootstrap: str, topic: str
) -> None:
    phases, final = kip848_clients.run_migration(kafka_bootstrap, topic, f"kip848-mig-{uuid.uuid4().hex[:8]}")
    assert phases == kip848_clients.EXPECTED_MIGRATION
    assert final == list(range(kip848_clients.PARTITIONS))
