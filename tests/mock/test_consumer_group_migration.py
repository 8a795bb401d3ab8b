"""KIP-848's online migration on MockCluster: classic groups and consumer groups turning into each other.

A fleet moves between the protocols one member at a time (``group.consumer.migration.policy``,
bidirectional by default in Kafka 4.1): a ConsumerGroupHeartbeat joining a classic group converts it, its
classic members keep speaking JoinGroup/SyncGroup/Heartbeat inside the consumer group and get what the
broker's assignor gives them; when the last consumer-protocol member leaves, the group is classic again.
Here by hand over the wire (the real clients of both protocols do it in
``test_consumer_protocol_clients.py``), with the views DescribeGroups, ConsumerGroupDescribe and ListGroups
give of such groups.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)

from tests._support.consumer_protocol import Member, coordinator_client, describe
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_protocol import (
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from txnproducer.testing import MockCluster

TOPIC = "orders"


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3) as mock:
        mock.create_topic(TOPIC, partitions=2)
        yield mock


@pytest.fixture
def group() -> str:
    return f"kip848-migration-{uuid.uuid4().hex[:8]}"


class ClassicMember:
    """A classic-protocol member (JoinGroup v9, SyncGroup v5, Heartbeat v4, LeaveGroup v5) of ``group``."""

    def __init__(self, cluster: MockCluster, group: str) -> None:
        self.group = group
        self.client = coordinator_client(cluster, group, client_id="classic")
        self.member_id = ""
        self.generation = -1

    def join(self) -> Any:
        protocols = [
            JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=encode_subscription([TOPIC]))
        ]
        while True:
            answer = self.client.send(
                JoinGroupRequest[9](
                    group_id=self.group,
                    session_timeout_ms=30_000,
                    rebalance_timeout_ms=30_000,
                    member_id=self.member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=protocols,
                    reason=None,
                )
            )
            self.member_id = answer.member_id
            if answer.error_code != ec.MEMBER_ID_REQUIRED:
                self.generation = answer.generation_id
                return answer

    def sync(self, assignment: list[tuple[str, int]] | None = None) -> list[tuple[str, int]]:
        a = SyncGroupRequest.SyncGroupRequestAssignment
        given = (
            []
            if assignment is None
            else [a(member_id=self.member_id, assignment=encode_assignment(assignment))]
        )
        answer = self.client.send(
            SyncGroupRequest[5](
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocol_name="range",
                assignments=given,
            )
        )
        assert answer.error_code == ec.NONE, answer
        return list(decode_assignment(answer.assignment).partitions)

    def heartbeat(self) -> int:
        return int(
            self.client.send(
                HeartbeatRequest[4](
                    group_id=self.group,
                    generation_id=self.generation,
                    member_id=self.member_id,
                    group_instance_id=None,
                )
            ).error_code
        )

    def leave(self) -> int:
        members = [
            LeaveGroupRequest.MemberIdentity(member_id=self.member_id, group_instance_id=None, reason=None)
        ]
        return int(
            self.client.send(LeaveGroupRequest[5](group_id=self.group, members=members)).members[0].error_code
        )


def describe_classic(cluster: MockCluster, group: str, version: int = 5) -> Any:
    with coordinator_client(cluster, group) as client:
        return client.send(
            DescribeGroupsRequest[version](groups=[group], include_authorized_operations=False)
        ).groups[0]


def listed(cluster: MockCluster, group: str, types: list[str]) -> dict[str, tuple[str, str]]:
    """ListGroups v5 of the broker coordinating ``group`` (each broker lists the groups it coordinates)."""
    with coordinator_client(cluster, group) as client:
        answer = client.send(ListGroupsRequest[5](states_filter=[], types_filter=types))
    return {g.group_id: (g.group_type, g.group_state) for g in answer.groups}


def test_a_classic_group_becomes_a_consumer_group_and_classic_again(cluster: MockCluster, group: str) -> None:
    classic = ClassicMember(cluster, group)
    assert classic.join().generation_id == 1
    classic.sync([(TOPIC, 0), (TOPIC, 1)])
    assert describe(cluster, group).error_message == f"Group {group} is not a consumer group."
    new = Member(cluster, group)
    assert new.join([TOPIC]).member_epoch == 2, "the classic generation 1 became the group epoch"
    described = describe(cluster, group)
    assert {m.member_type for m in described.members} == {0, 1}
    assert describe_classic(cluster, group).group_state == "Dead"
    assert describe_classic(cluster, group, 6).error_message == f"Group {group} is not a classic group."
    assert listed(cluster, group, [])[group] == ("consumer", "Reconciling")
    assert classic.heartbeat() == ec.REBALANCE_IN_PROGRESS, "the classic member must give a partition up"
    answer = classic.join()
    assert (answer.generation_id, answer.leader, answer.members) == (2, "", []), (
        "no leader: the broker assigns"
    )
    assert classic.sync() == [(TOPIC, 0)]
    assert classic.heartbeat() == ec.NONE
    new.beat()
    assert new.assigned == {TOPIC: [1]}
    new.ack()
    assert describe(cluster, group).group_state == "Stable"
    assert new.leave().error_code == ec.NONE
    assert describe(cluster, group).error_code == ec.GROUP_ID_NOT_FOUND, "classic again"
    assert describe_classic(cluster, group).group_state == "PreparingRebalance"
    assert classic.heartbeat() == ec.REBALANCE_IN_PROGRESS
    again = classic.join()
    assert (again.generation_id, again.leader) == (3, classic.member_id), "its own leader again"
    classic.sync([(TOPIC, 0), (TOPIC, 1)])
    assert describe_classic(cluster, group).group_state == "Stable"


def test_a_classic_member_joins_a_consumer_group(cluster: MockCluster, group: str) -> None:
    new = Member(cluster, group)
    new.join([TOPIC])
    new.ack()
    classic = ClassicMember(cluster, group)
    first = classic.join()
    assert (first.error_code, first.generation_id, first.protocol_name) == (ec.NONE, 2, "range")
    assert classic.sync() == [], "its partition is still the other member's"
    new.beat()
    new.ack()
    assert classic.heartbeat() == ec.REBALANCE_IN_PROGRESS, "released meanwhile: rejoin to get it"
    classic.join()
    assert classic.sync() == [(TOPIC, 1)]
    assert classic.heartbeat() == ec.NONE
    members = {m.member_id: m.member_type for m in describe(cluster, group).members}
    assert members == {new.member_id: 1, classic.member_id: 0}
    assert classic.leave() == ec.NONE
    assert new.beat().member_epoch == 3 and new.assigned == {TOPIC: [0, 1]}


def test_a_classic_member_that_does_not_rejoin_in_time_is_fenced(cluster: MockCluster, group: str) -> None:
    new = Member(cluster, group)
    new.join([TOPIC])
    new.ack()
    classic = ClassicMember(cluster, group)
    classic.join()
    classic.sync()
    with cluster.state.lock:
        cluster.state.groups.tick(cluster.state.now_ms() + 31_000)  # past its session and rebalance timeouts
    assert classic.heartbeat() == ec.UNKNOWN_MEMBER_ID
    assert [m.member_id for m in describe(cluster, group).members] == [new.member_id]


def test_no_upgrade_when_the_policy_forbids_it(group: str) -> None:
    config = {"group.consumer.migration.policy": "downgrade"}
    with MockCluster(num_brokers=1, consumer_group_config=config) as cluster:
        cluster.create_topic(TOPIC, partitions=2)
        classic = ClassicMember(cluster, group)
        classic.join()
        classic.sync([(TOPIC, 0), (TOPIC, 1)])
        answer = Member(cluster, group).join([TOPIC])
        assert (answer.error_code, answer.error_message) == (
            ec.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group {group} to consumer group because online upgrade is disabled.",
        )
        assert classic.heartbeat() == ec.NONE, "the classic group is untouched"


def test_an_empty_group_changes_protocol_without_conversion(cluster: MockCluster, group: str) -> None:
    """An empty consumer group is replaced by the classic member's group, and the other way round."""
    new = Member(cluster, group)
    new.join([TOPIC])
    new.leave()
    classic = ClassicMember(cluster, group)
    assert classic.join().generation_id == 1, "a classic group of its own"
    classic.sync([(TOPIC, 0)])
    classic.leave()
    assert Member(cluster, group).join([TOPIC]).member_epoch == 1, "a new consumer group"
    assert listed(cluster, group, ["consumer"])[group] == ("consumer", "Stable")
    assert group not in listed(cluster, group, ["classic"])
