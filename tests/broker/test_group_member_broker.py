"""GroupMember against a real Apache Kafka broker: the classic group coordinator of Kafka 4.x.

The MockCluster tier (tests/mock/test_group_member*.py) covers the error paths; this tier checks the
behaviour users rely on against the real coordinator: members split the partitions, a static
member's restart takes its place back without a rebalance, and the member's group metadata fences a
zombie's transactional offsets (KIP-447). The broker's group.min.session.timeout.ms is 6 s.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import TopicPartition

from tests._support.group_members import PolledMember, split_evenly, wait_until
from txnproducer import CommitFailedError, TransactionalProducer

PARTITIONS = 4
WAIT_S = 60.0
REAL = {"session_timeout_ms": 10_000, "heartbeat_interval_ms": 500, "max_poll_interval_ms": 20_000}


@pytest.fixture
def topic(kafka_bootstrap: str) -> Iterator[str]:
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    name = f"group-member-{uuid.uuid4().hex[:8]}"
    try:
        admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])
        yield name
    finally:
        admin.close()


@pytest.mark.timeout(180)
def test_members_split_and_a_static_restart_keeps_the_generation(kafka_bootstrap: str, topic: str) -> None:
    group = f"gm-{uuid.uuid4().hex[:8]}"
    cond = threading.Condition()
    a = PolledMember(kafka_bootstrap, group, "a", topics=[topic], cond=cond, group_instance_id="a-1", **REAL)
    b = PolledMember(kafka_bootstrap, group, "b", topics=[topic], cond=cond, group_instance_id="b-1", **REAL)
    members = [a, b]
    try:
        wait_until(cond, members, "a and b hold two each", lambda: split_evenly([a, b], topic, PARTITIONS),
                   timeout=WAIT_S)
        generation, owned = a.generation, a.assignment
        members.remove(a)
        a.stop()  # static: no LeaveGroup
        restarted = PolledMember(kafka_bootstrap, group, "a2", topics=[topic], cond=cond,
                                 group_instance_id="a-1", **REAL)
        members.append(restarted)
        wait_until(cond, members, "the restarted member owns a's partitions",
                   lambda: restarted.assignment == owned, timeout=WAIT_S)
        assert restarted.generation == generation and b.generation == generation
        assert b.hooks.kinds() == ["assign"]
    finally:
        for member in members:
            member.stop(leave_group=True, timeout=5)


@pytest.mark.timeout(180)
def test_group_metadata_fences_a_zombie_on_the_real_coordinator(kafka_bootstrap: str, topic: str) -> None:
    group = f"gm-{uuid.uuid4().hex[:8]}"
    cond = threading.Condition()
    a = PolledMember(kafka_bootstrap, group, "a", topics=[topic], cond=cond, **REAL)
    members = [a]
    producer = TransactionalProducer(bootstrap_servers=kafka_bootstrap, transactional_id=f"{group}-txn")
    tp = TopicPartition(topic, 0)
    try:
        producer.init_transactions()
        wait_until(cond, members, "a owns every partition", lambda: split_evenly([a], topic, PARTITIONS),
                   timeout=WAIT_S)
        stale = a.member.group_metadata()
        b = PolledMember(kafka_bootstrap, group, "b", topics=[topic], cond=cond, **REAL)
        members.append(b)
        wait_until(cond, members, "a and b hold two each", lambda: split_evenly([a, b], topic, PARTITIONS),
                   timeout=WAIT_S)
        producer.begin_transaction()
        with pytest.raises(CommitFailedError):
            producer.send_offsets_to_transaction({tp: 1}, stale)
            producer.commit_transaction()
        producer.abort_transaction()
        owner = a if tp in a.assignment else b
        producer.begin_transaction()
        producer.send_offsets_to_transaction({tp: 2}, owner.member.group_metadata())
        producer.commit_transaction()
        assert a.member.fetch_committed([tp], timeout=30)[tp].offset == 2
    finally:
        producer.close(timeout=5)
        for member in members:
            member.stop(timeout=5)
