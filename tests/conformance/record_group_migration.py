"""The online-migration scenarios of the KIP-848 recording (``record_consumer_group.py``): a classic group
upgraded by a consumer-protocol member and downgraded when it leaves, and a classic member inside a
consumer-protocol group.
"""

from __future__ import annotations

from kafka.protocol.admin.groups import ListGroupsRequest
from kafka.protocol.consumer.group import (
    LeaveGroupRequest,
)

from tests.conformance.group_recording import (
    Scenario,
    assigned,
    classic_beat,
    classic_join,
    classic_sync,
    describe,
    describe_groups,
    heartbeat,
    join,
    member_id,
    offset_commit,
    owned,
)


def classic_to_consumer(s: Scenario) -> None:
    """Online migration: a classic group gets a consumer-protocol member (upgrade), then loses it."""
    rec = s.rec
    topic = s.topic("migrate", 2)
    tid = s.tid(topic)
    group = s.name("group_upgrade", f"conformance-cg-upgrade-{s.run}")
    first = classic_join(
        group, "", topic, "a classic member (JoinGroup v9): MEMBER_ID_REQUIRED", rec, "classic"
    )
    classic = first.member_id
    joined = classic_join(
        group, classic, topic, "it joins with its id (after the initial rebalance delay)", rec, "classic"
    )
    generation = int(joined.generation_id)
    classic_sync(
        group, generation, classic, [(topic, 0), (topic, 1)], "its SyncGroup: both partitions", rec, "classic"
    )
    rec.send(describe_groups(group, 5), "DescribeGroups v5: a stable classic group")
    rec.send(describe([group]), "ConsumerGroupDescribe of the classic group")
    k = member_id("upgrade")
    s.names["member_upgrade"] = k
    answer = rec.send(join(group, k, [topic]), "a consumer-protocol member joins the classic group")
    epoch = int(answer.member_epoch)
    rec.send(describe([group]), "ConsumerGroupDescribe: the converted group")
    rec.send(describe_groups(group, 5), "DescribeGroups v5 of the converted group")
    rec.send(describe_groups(group, 6), "DescribeGroups v6 of the converted group")
    rec.send(ListGroupsRequest[5](states_filter=[], types_filter=["classic"]), "ListGroups v5, type classic")
    classic_beat(group, generation, classic, "the classic member's Heartbeat", rec, "classic")
    rejoined = classic_join(group, classic, topic, "the classic member rejoins", rec, "classic")
    generation = int(rejoined.generation_id)
    classic_sync(
        group, generation, classic, None, "its SyncGroup: the assignment the broker computed", rec, "classic"
    )
    classic_beat(
        group, generation, classic, "the classic member's Heartbeat in its new generation", rec, "classic"
    )
    answer = rec.send(heartbeat(group, k, epoch, owned_partitions=[]), "the consumer member's heartbeat")
    epoch = int(answer.member_epoch)
    rec.send(heartbeat(group, k, epoch, owned_partitions=owned(tid, assigned(answer))), "it owns what it got")
    rec.send(describe([group]), "ConsumerGroupDescribe: both members reconciled")
    rec.send(
        offset_commit(group, classic, generation, topic, {0: 7}, version=8),
        "OffsetCommit v8 from the classic member with its generation",
    )
    rec.send(
        offset_commit(group, classic, generation - 1, topic, {0: 7}, version=8),
        "OffsetCommit v8 from the classic member with an older generation",
    )
    rec.send(offset_commit(group, k, epoch, topic, {1: 8}), "OffsetCommit v9 from the consumer member")
    rec.send(heartbeat(group, k, -1), "the consumer-protocol member leaves: only a classic member is left")
    rec.send(describe([group]), "ConsumerGroupDescribe after it left")
    rec.send(describe_groups(group, 5), "DescribeGroups v5 after it left")
    classic_beat(
        group, generation, classic, "the classic member's Heartbeat after the downgrade", rec, "classic"
    )
    again = classic_join(
        group, classic, topic, "the classic member rejoins the classic group", rec, "classic"
    )
    generation = int(again.generation_id)
    classic_sync(
        group, generation, classic, [(topic, 0), (topic, 1)], "its SyncGroup as the leader", rec, "classic"
    )
    rec.send(describe_groups(group, 5), "DescribeGroups v5: a classic group again")
    rec.send(
        LeaveGroupRequest[5](
            group_id=group,
            members=[
                LeaveGroupRequest.MemberIdentity(member_id=classic, group_instance_id=None, reason=None)
            ],
        ),
        "the classic member leaves",
        on="classic",
    )


def consumer_with_classic(s: Scenario) -> None:
    """A classic member (JoinGroup) joins a consumer-protocol group."""
    rec = s.rec
    topic = s.names["migrate"].replace("$RUN", s.run)
    tid = s.tid(topic)
    group = s.name("group_mixed", f"conformance-cg-mixed-{s.run}")
    k = member_id("mixed")
    s.names["member_mixed"] = k
    rec.send(join(group, k, [topic]), "a consumer-protocol member creates the group")
    rec.send(heartbeat(group, k, 1, owned_partitions=owned(tid, [0, 1])), "it owns both partitions")
    first = classic_join(
        group, "", topic, "a classic member joins: JoinGroup v9 without member id", rec, "mixed"
    )
    classic = first.member_id or ""
    if first.error_code == 79:
        first = classic_join(group, classic, topic, "again with its member id", rec, "mixed")
    generation = int(first.generation_id)
    answer = rec.send(
        heartbeat(group, k, 1, owned_partitions=owned(tid, [0, 1])), "the consumer member's heartbeat"
    )
    keep = assigned(answer) if answer.assignment is not None else [0, 1]
    answer = rec.send(
        heartbeat(group, k, answer.member_epoch, owned_partitions=owned(tid, keep)), "it acknowledges"
    )
    epoch = int(answer.member_epoch)
    classic_sync(group, generation, classic, None, "the classic member's SyncGroup", rec, "mixed")
    rec.send(describe([group]), "ConsumerGroupDescribe: a classic member in a consumer group")
    rec.send(describe_groups(group, 6), "DescribeGroups v6 of the consumer group")
    classic_beat(group, generation, classic, "the classic member's Heartbeat", rec, "mixed")
    rejoined = classic_join(group, classic, topic, "the classic member rejoins", rec, "mixed")
    generation = int(rejoined.generation_id)
    classic_sync(
        group, generation, classic, None, "its SyncGroup: the partition released meanwhile", rec, "mixed"
    )
    classic_beat(group, generation, classic, "its Heartbeat", rec, "mixed")
    rec.send(
        offset_commit(group, classic, generation, topic, {1: 3}, version=8),
        "OffsetCommit v8 from the classic member with its generation",
    )
    rec.send(
        offset_commit(group, classic, generation, topic, {1: 3}, version=9),
        "OffsetCommit v9 from the classic member with its generation",
    )
    rec.send(describe([group]), "ConsumerGroupDescribe")
    rec.send(
        LeaveGroupRequest[5](
            group_id=group,
            members=[
                LeaveGroupRequest.MemberIdentity(member_id=classic, group_instance_id=None, reason=None)
            ],
        ),
        "the classic member leaves",
        on="mixed",
    )
    rec.send(
        heartbeat(group, k, epoch, owned_partitions=owned(tid, keep)),
        "the consumer member gets its partition",
    )
    rec.send(heartbeat(group, k, -1), "the consumer member leaves")
    rec.send(describe([group]), "ConsumerGroupDescribe: empty")
