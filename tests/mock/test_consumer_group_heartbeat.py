"""MockCluster's KIP-848 group coordinator through the wire: ConsumerGroupHeartbeat's rules, one by one.

The conformance replay (``test_conformance.py``) holds the mock to a real Kafka 4.1.0's answers for one
recorded sequence; these tests state each rule a client relies on on its own, each in a fresh group, over
the wire (``tests/_support/consumer_protocol.py`` speaks the protocol by hand): join and reconciliation
(revoke first, assign once released), the assignors, regular expressions, static members, fencing, the
group's limits, timeouts on the mock's clock, and the fault injection a client test uses.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from tests._support.consumer_protocol import Member, describe
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster

TOPIC = "orders"


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3) as mock:
        mock.create_topic(TOPIC, partitions=4)
        yield mock


@pytest.fixture
def group() -> str:
    return f"kip848-{uuid.uuid4().hex[:8]}"


def members(cluster: MockCluster, group: str, count: int) -> list[Member]:
    return [Member(cluster, group) for _ in range(count)]


def later(cluster: MockCluster, monkeypatch: pytest.MonkeyPatch, ms: int) -> None:
    """The cluster's clock ``ms`` ahead of the wall clock from now on (its coordinators read it)."""
    monkeypatch.setattr(cluster.state, "now_ms", lambda: int(time.time() * 1000) + ms)


def tick(cluster: MockCluster, ms: int) -> None:
    """The coordinator's timers as if ``ms`` had passed (the cluster's ticker runs them on real time)."""
    with cluster.state.lock:
        cluster.state.groups.tick(cluster.state.now_ms() + ms)


def test_a_lone_member_gets_every_partition_at_epoch_one(cluster: MockCluster, group: str) -> None:
    a = Member(cluster, group)
    answer = a.join([TOPIC])
    assert (answer.error_code, answer.member_id, answer.member_epoch) == (0, a.member_id, 1)
    assert a.assigned == {TOPIC: [0, 1, 2, 3]}
    assert answer.heartbeat_interval_ms == 500  # the mock's default (Kafka's is 5000)
    again = a.ack()
    assert (again.member_epoch, again.assignment) == (1, None), "an unchanged assignment is not sent again"
    assert describe(cluster, group).group_state == "Stable"


def test_partitions_move_only_once_released(cluster: MockCluster, group: str) -> None:
    """Revoke first, then assign: b gets a's partitions only after a's heartbeat no longer lists them."""
    a, b = members(cluster, group, 2)
    a.join([TOPIC])
    a.ack()
    joined = b.join([TOPIC])
    assert (joined.member_epoch, b.assigned) == (2, {}), "b is at the new epoch, waiting for a's partitions"
    told = a.beat()
    assert (told.member_epoch, a.assigned) == (1, {TOPIC: [0, 1]}), "a must give two up, in its old epoch"
    assert a.send(topic_partitions=None).member_epoch == 1, "owned partitions unchanged: still revoking"
    assert a.beat().assignment is None and b.beat().assignment is None, "b still waits"
    assert describe(cluster, group).group_state == "Reconciling"
    assert a.ack().member_epoch == 2, "a acknowledged: it moves to the new epoch"
    b.beat()
    assert b.assigned == {TOPIC: [2, 3]}
    b.ack()
    assert describe(cluster, group).group_state == "Stable"


def test_range_hands_out_contiguous_ranges_in_member_id_order(cluster: MockCluster, group: str) -> None:
    ids = sorted(Member(cluster, group).member_id for _ in range(3))
    joined = [Member(cluster, group, member_id) for member_id in reversed(ids)]
    for member in joined:
        member.join([TOPIC], assignor="range")
    for member in joined:
        member.ack()
    for member in joined:
        member.ack()
    by_id = {m.member_id: m.assigned[TOPIC] for m in joined if m.assigned}
    assert [by_id.get(i) for i in ids] == [[0, 1], [2], [3]]
    assert describe(cluster, group).assignor_name == "range"


def test_uniform_keeps_partitions_with_their_members_when_one_joins(cluster: MockCluster, group: str) -> None:
    cluster.create_topic("wide", partitions=6)
    a, b, c = members(cluster, group, 3)
    for member in (a, b):
        member.join(["wide"])
    for member in (a, b, a, b):
        member.ack()
    before = {m.member_id: set(m.assigned["wide"]) for m in (a, b)}
    c.join(["wide"])
    for member in (a, b, c, a, b, c):
        member.ack()
    after = {m.member_id: set(m.assigned.get("wide", [])) for m in (a, b, c)}
    assert sorted(len(p) for p in after.values()) == [2, 2, 2]
    assert all(after[m] <= before[m] for m in before), "the members that stay only give partitions up"


def test_a_regular_expression_is_resolved_after_the_join_and_follows_new_topics(
    cluster: MockCluster, group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.create_topic("audit-eu", partitions=1)
    a = Member(cluster, group)
    assert (a.join(regex="audit-.*").member_epoch, a.assigned) == (1, {}), "not resolved in the join itself"
    assert (a.beat().member_epoch, a.assigned) == (2, {"audit-eu": [0]}), "resolved: the group epoch moved"
    a.ack()
    cluster.create_topic("audit-us", partitions=2)
    cluster.create_topic("billing", partitions=1)
    assert a.beat().member_epoch == 2, "not within 10 s of the last resolution, as Kafka 4.1"
    later(cluster, monkeypatch, 10_000)
    assert a.beat().member_epoch == 3
    assert a.assigned == {"audit-eu": [0], "audit-us": [0, 1]}
    assert describe(cluster, group).members[0].subscribed_topic_regex == "audit-.*"


@pytest.mark.parametrize(
    ("fields", "code", "message"),
    [
        ({"member_id": ""}, ec.INVALID_REQUEST, "MemberId can't be empty."),
        ({"group_id": ""}, ec.INVALID_REQUEST, "GroupId can't be empty."),
        (
            {"rebalance_timeout_ms": -1},
            ec.INVALID_REQUEST,
            "RebalanceTimeoutMs must be provided in first request.",
        ),
        ({"topic_partitions": None}, ec.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."),
        (
            {"subscribed_topic_names": None},
            ec.INVALID_REQUEST,
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        ({"instance_id": ""}, ec.INVALID_REQUEST, "InstanceId can't be empty."),
        ({"rack_id": ""}, ec.INVALID_REQUEST, "RackId can't be empty."),
        ({"member_epoch": -3}, ec.INVALID_REQUEST, "MemberEpoch is invalid."),
        ({"member_epoch": -2}, ec.INVALID_REQUEST, "InstanceId can't be null."),
        (
            {"server_assignor": "sticky"},
            ec.UNSUPPORTED_ASSIGNOR,
            "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
        ),
        (
            {"subscribed_topic_regex": "(orders"},
            ec.INVALID_REGULAR_EXPRESSION,
            "SubscribedTopicRegex `(orders` is not a valid regular expression: missing closing ).",
        ),
        (
            {"subscribed_topic_regex": "(?=o).*"},
            ec.INVALID_REGULAR_EXPRESSION,
            "SubscribedTopicRegex `(?=o).*` is not a valid regular expression: "
            "invalid or unsupported Perl syntax.",
        ),
    ],
)
def test_requests_refused_before_the_group(
    cluster: MockCluster, group: str, fields: dict[str, object], code: int, message: str
) -> None:
    a = Member(cluster, group)
    join = {
        "member_epoch": 0,
        "subscribed_topic_names": [TOPIC],
        "rebalance_timeout_ms": 30_000,
        "topic_partitions": [],
        **fields,
    }
    answer = a.send(**join)
    assert (answer.error_code, answer.error_message) == (code, message)
    assert (answer.member_id, answer.member_epoch, answer.heartbeat_interval_ms) == (None, 0, 0)
    assert describe(cluster, group).error_code == ec.GROUP_ID_NOT_FOUND, "no group was made"


def test_a_v0_join_without_member_id_gets_one(cluster: MockCluster, group: str) -> None:
    a = Member(cluster, group, "", version=0)
    answer = a.join([TOPIC])
    assert answer.error_code == 0 and len(answer.member_id) == 22
    assert a.leave().member_epoch == -1


def test_member_epochs_fence_what_is_not_the_members_own(cluster: MockCluster, group: str) -> None:
    a, b = members(cluster, group, 2)
    a.join([TOPIC])
    a.ack()
    b.join([TOPIC])
    a.ack()
    a.ack()  # a at epoch 2 with [0, 1]; its previous epoch is 1
    assert a.send(member_epoch=3).error_code == ec.FENCED_MEMBER_EPOCH
    previous = a.send(member_epoch=1, topic_partitions=a._by_id({TOPIC: [0]}))
    assert (previous.error_code, previous.member_epoch) == (0, 2), "the previous epoch after a lost answer"
    stale = a.send(member_epoch=1, topic_partitions=a._by_id({TOPIC: [0, 2]}))
    assert stale.error_code == ec.FENCED_MEMBER_EPOCH, "the previous epoch owning what it must not"
    assert "smaller member epoch (1)" in stale.error_message
    assert a.join([TOPIC]).error_code == ec.FENCED_MEMBER_EPOCH, "a member still in the group cannot rejoin"
    assert Member(cluster, group).send(member_epoch=2).error_code == ec.UNKNOWN_MEMBER_ID
    assert Member(cluster, f"{group}-none").send(member_epoch=2).error_code == ec.GROUP_ID_NOT_FOUND


def test_a_static_member_leaves_for_a_while_and_comes_back(cluster: MockCluster, group: str) -> None:
    first = Member(cluster, group, instance_id="node-1")
    first.join([TOPIC])
    first.ack()
    second = Member(cluster, group, instance_id="node-1")
    assert second.join([TOPIC]).error_code == ec.UNRELEASED_INSTANCE_ID
    assert second.send(member_epoch=1).error_code == ec.FENCED_INSTANCE_ID
    assert first.leave(static=True).member_epoch == -2
    described = describe(cluster, group)
    assert (described.group_state, described.members[0].member_epoch) == ("Reconciling", -2)
    back = second.join([TOPIC])
    assert (back.member_epoch, second.assigned) == (1, {TOPIC: [0, 1, 2, 3]}), "same epoch, same partitions"
    assert describe(cluster, group).group_epoch == 1, "no rebalance"
    assert first.leave().error_code == ec.FENCED_INSTANCE_ID


def test_a_session_timeout_fences_the_member_and_frees_its_partitions(
    cluster: MockCluster, group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = members(cluster, group, 2)
    a.join([TOPIC])
    a.ack()
    b.join([TOPIC])
    a.ack()
    a.ack()
    b.ack()
    later(cluster, monkeypatch, 30_000)
    b.ack()
    later(cluster, monkeypatch, 60_000)  # a last heartbeated 60 s ago: past the 45 s session timeout; b 30 s
    assert a.beat().error_code == ec.UNKNOWN_MEMBER_ID
    assert (b.beat().member_epoch, b.assigned) == (3, {TOPIC: [0, 1, 2, 3]})


def test_a_member_that_never_revokes_is_fenced_after_its_rebalance_timeout(
    cluster: MockCluster, group: str
) -> None:
    slow, fast = members(cluster, group, 2)
    slow.join([TOPIC], rebalance_timeout_ms=2_000)
    slow.ack()
    fast.join([TOPIC])
    slow.beat()  # told to revoke two; never acknowledges
    tick(cluster, 2_500)
    assert slow.beat().error_code == ec.UNKNOWN_MEMBER_ID
    assert fast.beat().member_epoch == 3 and fast.assigned == {TOPIC: [0, 1, 2, 3]}


def test_group_max_size(group: str) -> None:
    with MockCluster(num_brokers=1, consumer_group_config={"group.consumer.max.size": 2}) as cluster:
        cluster.create_topic(TOPIC, partitions=2)
        a, b, c = members(cluster, group, 3)
        assert a.join([TOPIC]).error_code == 0 and b.join([TOPIC]).error_code == 0
        answer = c.join([TOPIC])
        assert (answer.error_code, answer.error_message) == (
            ec.GROUP_MAX_SIZE_REACHED,
            "The consumer group has reached its maximum capacity of 2 members.",
        )


def test_a_leaving_member_moves_the_group_epoch(cluster: MockCluster, group: str) -> None:
    a, b = members(cluster, group, 2)
    a.join([TOPIC])
    b.join([TOPIC])
    left = b.leave()
    assert (left.error_code, left.member_epoch, left.heartbeat_interval_ms) == (0, -1, 0)
    described = describe(cluster, group)
    assert (described.group_epoch, described.assignment_epoch, described.group_state) == (3, 2, "Assigning")
    assert a.beat().member_epoch == 3 and a.assigned == {TOPIC: [0, 1, 2, 3]}


def test_more_partitions_are_assigned_on_the_next_heartbeat(cluster: MockCluster, group: str) -> None:
    a = Member(cluster, group)
    a.join([TOPIC])
    a.ack()
    cluster.add_partitions(TOPIC, 6)
    assert a.beat().member_epoch == 2 and a.assigned == {TOPIC: [0, 1, 2, 3, 4, 5]}


def test_fault_injection_reaches_consumer_groups(cluster: MockCluster, group: str) -> None:
    """remove_group_member fences as a session timeout would; force_rebalance moves the group epoch;
    move_coordinator makes the old coordinator answer NOT_COORDINATOR; inject_error answers for it."""
    a, b = members(cluster, group, 2)
    a.join([TOPIC])
    b.join([TOPIC])
    assert cluster.remove_group_member(group, b.member_id)
    assert not cluster.remove_group_member(group, b.member_id)
    assert b.beat().error_code == ec.UNKNOWN_MEMBER_ID
    assert a.beat().member_epoch == 3
    cluster.force_rebalance(group)
    assert a.beat().member_epoch == 4
    cluster.inject_error("ConsumerGroupHeartbeat", ec.COORDINATOR_LOAD_IN_PROGRESS)
    assert a.beat().error_code == ec.COORDINATOR_LOAD_IN_PROGRESS
    cluster.inject_error("ConsumerGroupDescribe", ec.COORDINATOR_NOT_AVAILABLE)
    assert describe(cluster, group).error_code == ec.COORDINATOR_NOT_AVAILABLE
    old = cluster.coordinator_for(group, "group")
    cluster.move_coordinator(group, next(b for b in cluster.broker_ids if b != old), "group")
    assert a.beat().error_code == ec.NOT_COORDINATOR
    assert Member(cluster, group).send(member_epoch=4, member_id=a.member_id).error_code == 0, (
        "the new coordinator has the group"
    )


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"group.consumer.migration.policy": "sideways"}, "bidirectional, upgrade, downgrade or disabled"),
        ({"group.consumer.assignors": "uniform,sticky"}, "['sticky']"),
        ({"group.consumer.heartbeat.interval": 5000}, "unknown consumer group setting"),
    ],
)
def test_settings_are_kafkas_and_checked(config: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        MockCluster(num_brokers=1, consumer_group_config=config)
