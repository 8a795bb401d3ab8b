"""The partition assignors a leader runs: Kafka's eager "range" and "roundrobin".

Why the Java client's algorithms exactly (``RangeAssignor``, ``RoundRobinAssignor``): in a mixed
group the leader may be a Java, librdkafka, kafka-python or txnproducer member, and the group
chooses the assignor by name. Whoever leads, the same name must mean the same split, so that a
static member gets the same partitions back whichever member computed them. Members are ordered as
Java's ``MemberInfo`` orders them: static members first, by group instance id, then dynamic members
by member id.

Both are pure functions of the members' subscriptions and the topics' partition counts; topics
unknown to the metadata (not created yet) get no partitions, as in Java.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

__all__ = ["ASSIGNORS", "MemberSubscription", "assign_range", "assign_roundrobin"]

TopicPartitionKey = tuple[str, int]


@attrs.frozen
class MemberSubscription:
    """One member of the group as the leader sees it in the JoinGroup answer."""

    member_id: str
    group_instance_id: str | None
    topics: tuple[str, ...]

    def sort_key(self) -> tuple[int, str]:
        # Java's MemberInfo.compareTo: static members (by instance id) before dynamic ones (by member id)
        if self.group_instance_id is not None:
            return (0, self.group_instance_id)
        return (1, self.member_id)


Assignor = Callable[[list[MemberSubscription], Mapping[str, int]], dict[str, list[TopicPartitionKey]]]


def assign_range(members: list[MemberSubscription],
                 partition_counts: Mapping[str, int]) -> dict[str, list[TopicPartitionKey]]:
    """Per topic, consecutive ranges over its subscribers in order; the first ``n % k`` subscribers
    get one partition more (Java's RangeAssignor without rack information)."""
    result: dict[str, list[TopicPartitionKey]] = {m.member_id: [] for m in members}
    ordered = sorted(members, key=MemberSubscription.sort_key)
    for topic in sorted({t for m in members for t in m.topics}):
        count = partition_counts.get(topic)
        if not count:
            continue
        subscribers = [m for m in ordered if topic in m.topics]
        per_member, extra = divmod(count, len(subscribers))
        for i, member in enumerate(subscribers):
            start = per_member * i + min(i, extra)
            length = per_member + (1 if i < extra else 0)
            result[member.member_id].extend((topic, p) for p in range(start, start + length))
    return result


def assign_roundrobin(members: list[MemberSubscription],
                      partition_counts: Mapping[str, int]) -> dict[str, list[TopicPartitionKey]]:
    """Every partition of every subscribed topic (topics by name, partitions ascending) dealt in turn
    to the members in order, skipping a member not subscribed to its topic (Java's
    RoundRobinAssignor)."""
    result: dict[str, list[TopicPartitionKey]] = {m.member_id: [] for m in members}
    ordered = sorted(members, key=MemberSubscription.sort_key)
    if not ordered:
        return result
    turn = 0
    for topic in sorted({t for m in members for t in m.topics}):
        for partition in range(partition_counts.get(topic) or 0):
            while topic not in ordered[turn % len(ordered)].topics:
                turn += 1
            result[ordered[turn % len(ordered)].member_id].append((topic, partition))
            turn += 1
    return result


#: Assignor by protocol name (the names every Kafka client uses).
ASSIGNORS: dict[str, Assignor] = {"range": assign_range, "roundrobin": assign_roundrobin}
