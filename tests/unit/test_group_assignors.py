"""The eager assignors a txnproducer leader runs, checked against the Java client's results.

What users rely on: in a group of mixed clients the same assignor name means the same split
whoever leads, every subscribed partition goes to exactly one subscriber, and static members
(ordered by group instance id) keep their partitions whoever else joins later.
"""

from __future__ import annotations

import pytest

from txnproducer._internal.group.classic.assignors import (
    ASSIGNORS,
    MemberSubscription,
    assign_range,
    assign_roundrobin,
)


def member(member_id: str, *topics: str, instance: str | None = None) -> MemberSubscription:
    return MemberSubscription(member_id, instance, topics)


def test_range_gives_consecutive_ranges_first_members_one_more() -> None:
    # Java's RangeAssignorTest.testTwoConsumersOneTopicThreePartitions and friends
    plan = assign_range([member("c1", "t"), member("c0", "t")], {"t": 3})
    assert plan == {"c0": [("t", 0), ("t", 1)], "c1": [("t", 2)]}
    plan = assign_range([member("a", "t1", "t2"), member("b", "t1", "t2")], {"t1": 3, "t2": 3})
    assert plan == {"a": [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)], "b": [("t1", 2), ("t2", 2)]}


def test_range_per_topic_counts_only_its_subscribers() -> None:
    plan = assign_range([member("a", "t1"), member("b", "t1", "t2")], {"t1": 2, "t2": 2})
    assert plan == {"a": [("t1", 0)], "b": [("t1", 1), ("t2", 0), ("t2", 1)]}


def test_roundrobin_deals_partitions_in_turn_skipping_non_subscribers() -> None:
    # Java's RoundRobinAssignorTest.testTwoConsumersTwoTopicsSixPartitions
    plan = assign_roundrobin([member("c1", "t1", "t2"), member("c0", "t1", "t2")], {"t1": 3, "t2": 3})
    assert plan == {"c0": [("t1", 0), ("t1", 2), ("t2", 1)], "c1": [("t1", 1), ("t2", 0), ("t2", 2)]}
    plan = assign_roundrobin([member("a", "t1"), member("b", "t1", "t2")], {"t1": 2, "t2": 2})
    assert plan == {"a": [("t1", 0)], "b": [("t1", 1), ("t2", 0), ("t2", 1)]}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_static_members_come_first_by_instance_id(name: str) -> None:
    """Java's MemberInfo order: a static member keeps its share whatever the dynamic ids are."""
    members = [member("zz-dynamic", "t"), member("m-2", "t", instance="b"), member("m-1", "t", instance="a")]
    plan = ASSIGNORS[name](members, {"t": 3})
    assert plan["m-1"] == [("t", 0)] and plan["m-2"] == [("t", 1)] and plan["zz-dynamic"] == [("t", 2)]


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@pytest.mark.parametrize("counts", [{"t": 1}, {"t": 6}, {"t": 7, "u": 2}, {"t": 0}, {}])
def test_every_partition_goes_to_exactly_one_subscriber(name: str, counts: dict[str, int]) -> None:
    members = [member(f"m{i}", "t", "u") for i in range(3)] + [member("only-t", "t")]
    plan = ASSIGNORS[name](members, counts)
    given = [tp for partitions in plan.values() for tp in partitions]
    wanted = [(t, p) for t in ("t", "u") for p in range(counts.get(t, 0))]
    assert sorted(given) == sorted(wanted)
    assert all(t == "t" for t, _ in plan["only-t"])
    assert set(plan) == {m.member_id for m in members}


def test_topics_missing_from_the_metadata_get_no_partitions() -> None:
    assert assign_range([member("a", "gone")], {}) == {"a": []}
    assert assign_roundrobin([member("a", "gone")], {}) == {"a": []}
