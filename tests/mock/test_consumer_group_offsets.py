"""Offsets of KIP-848 groups on MockCluster: OffsetCommit, OffsetFetch and TxnOffsetCommit with member epochs.

A consumer-protocol member commits with its member epoch (OffsetCommit v9, ``generation_id_or_member_epoch``)
and fetches with its member id and epoch (OffsetFetch v9); a transactional producer commits the consumer's
offsets with the member epoch as generation id (TxnOffsetCommit, KIP-447) - which is how a zombie that lost
its partitions is fenced. The answers are Kafka 4.1.0's (the conformance recording has them); here each rule
on its own, and the whole path with real parts: a confluent-kafka KIP-848 consumer's group metadata passed to
our TransactionalProducer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.producer.transaction import TxnOffsetCommitRequest

from tests._support.consumer_protocol import Member, coordinator_client
from txnproducer import CommitFailedError, TransactionalProducer
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster

TOPIC = "orders"


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3) as mock:
        mock.create_topic(TOPIC, partitions=2)
        yield mock


@pytest.fixture
def group() -> str:
    return f"kip848-offsets-{uuid.uuid4().hex[:8]}"


def commit(cluster: MockCluster, group: str, member: str, epoch: int, *, version: int = 9) -> int:
    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    request = OffsetCommitRequest[version](
        group_id=group,
        generation_id_or_member_epoch=epoch,
        member_id=member,
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[
            topic(
                name=TOPIC,
                partitions=[
                    topic.OffsetCommitRequestPartition(
                        partition_index=0,
                        committed_offset=7,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                ],
            )
        ],
    )
    with coordinator_client(cluster, group) as client:
        return int(client.send(request).topics[0].partitions[0].error_code)


def fetch(cluster: MockCluster, group: str, member: str | None, epoch: int) -> Any:
    g = OffsetFetchRequest.OffsetFetchRequestGroup
    request = OffsetFetchRequest[9](
        groups=[
            g(
                group_id=group,
                member_id=member,
                member_epoch=epoch,
                topics=[g.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])],
            )
        ],
        require_stable=False,
    )
    with coordinator_client(cluster, group) as client:
        return client.send(request).groups[0]


def test_offset_commit_takes_the_member_epoch(cluster: MockCluster, group: str) -> None:
    a = Member(cluster, group)
    a.join([TOPIC])
    assert commit(cluster, group, a.member_id, 1) == ec.NONE
    assert cluster.committed_offsets(group) == {(TOPIC, 0): 7}
    assert commit(cluster, group, a.member_id, 0) == ec.STALE_MEMBER_EPOCH
    assert commit(cluster, group, a.member_id, 2) == ec.STALE_MEMBER_EPOCH
    assert commit(cluster, group, "someone-else", 1) == ec.UNKNOWN_MEMBER_ID
    assert commit(cluster, group, "", -1) == ec.UNKNOWN_MEMBER_ID, (
        "no admin commit while the group has members"
    )
    assert commit(cluster, group, a.member_id, 1, version=8) == ec.UNSUPPORTED_VERSION
    a.leave()
    assert commit(cluster, group, "", -1) == ec.NONE, "an empty group takes an admin commit"


def test_offset_fetch_checks_the_member_epoch(cluster: MockCluster, group: str) -> None:
    a = Member(cluster, group)
    a.join([TOPIC])
    commit(cluster, group, a.member_id, 1)
    answer = fetch(cluster, group, a.member_id, 1)
    assert (answer.error_code, answer.topics[0].partitions[0].committed_offset) == (ec.NONE, 7)
    assert (
        fetch(cluster, group, a.member_id, 3).error_code,
        fetch(cluster, group, a.member_id, 3).topics,
    ) == (ec.STALE_MEMBER_EPOCH, [])
    assert fetch(cluster, group, "someone-else", 1).error_code == ec.UNKNOWN_MEMBER_ID
    assert fetch(cluster, group, None, -1).error_code == ec.NONE, "an admin client names no member"


def test_txn_offset_commit_fences_a_member_that_is_not_current(cluster: MockCluster, group: str) -> None:
    """KIP-447 under KIP-848: the member epoch as generation id; a stale one is ILLEGAL_GENERATION (no
    STALE_MEMBER_EPOCH in TxnOffsetCommit), an unknown member UNKNOWN_MEMBER_ID, -1 without member passes."""
    a = Member(cluster, group)
    a.join([TOPIC])
    tid = f"kip848-txn-{uuid.uuid4().hex[:8]}"
    producer = TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=tid)
    try:
        producer.init_transactions()
        described = cluster.describe_transaction(tid)
        assert described is not None
        pid, epoch = int(described["producer_id"]), int(described["producer_epoch"])
    finally:
        producer.close()
    t = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic

    def txn_commit(member: str, generation: int) -> int:
        request = TxnOffsetCommitRequest[5](
            transactional_id=tid,
            group_id=group,
            producer_id=pid,
            producer_epoch=epoch,
            generation_id=generation,
            member_id=member,
            group_instance_id=None,
            topics=[
                t(
                    name=TOPIC,
                    partitions=[
                        t.TxnOffsetCommitRequestPartition(
                            partition_index=1,
                            committed_offset=3,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        )
                    ],
                )
            ],
        )
        with coordinator_client(cluster, group) as client:
            return int(client.send(request).topics[0].partitions[0].error_code)

    assert txn_commit(a.member_id, 1) == ec.NONE
    assert txn_commit(a.member_id, 0) == ec.ILLEGAL_GENERATION
    assert txn_commit(a.member_id, 2) == ec.ILLEGAL_GENERATION
    assert txn_commit("someone-else", 1) == ec.UNKNOWN_MEMBER_ID
    assert txn_commit("", -1) == ec.NONE


def test_a_librdkafka_members_group_metadata_fences_its_zombie(cluster: MockCluster, group: str) -> None:
    """confluent-kafka's KIP-848 consumer hands our producer its member id and epoch; once the member is gone
    (as after a session timeout) the producer's offset commit is refused and the transaction must abort."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    producer = TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers, transactional_id=f"kip848-zombie-{uuid.uuid4().hex[:8]}"
    )
    try:
        consumer.subscribe([TOPIC])
        while len(consumer.assignment()) < 2:
            consumer.poll(0.05)
        metadata = consumer.consumer_group_metadata()
        producer.init_transactions()
        producer.begin_transaction()
        producer.send_offsets_to_transaction({(TOPIC, 0): 1}, metadata)
        producer.commit_transaction()
        assert cluster.committed_offsets(group)[(TOPIC, 0)] == 1
        with cluster.state.lock:
            member_id = next(iter(cluster.state.groups.consumer.consumer_group(group).members))
        assert cluster.remove_group_member(group, member_id)
        producer.begin_transaction()
        with pytest.raises(CommitFailedError):
            producer.send_offsets_to_transaction({(TOPIC, 0): 2}, metadata)
        producer.abort_transaction()
        assert cluster.committed_offsets(group)[(TOPIC, 0)] == 1
    finally:
        producer.close()
        consumer.close()
