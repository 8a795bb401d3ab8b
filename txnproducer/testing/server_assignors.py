"""The server-side assignors of the MockCluster's consumer-protocol groups: ``uniform`` and ``range``.

KIP-848 moved assignment into the broker: the group coordinator computes every member's *target*
assignment when the group epoch moves (a member joins, leaves or changes its subscription, a topic
changes) and members converge on it over their heartbeats. A test that checks which member got which
partition - and the conformance replay, which compares the mock's answers with a real Kafka 4.1.0's -
needs the same choices the broker makes, so this module computes them as Kafka's group-coordinator
classes do (``UniformAssignor``, ``UniformHomogeneousAssignmentBuilder``, ``RangeAssignor``, Kafka 4.1),
on plain Python values.

Where the order of a Java hash map decides the result, the order is reproduced (:func:`java_hash_order`):
Kafka's uniform assignor walks the members in the order of a ``java.util.HashMap`` keyed by member id, and
the topics in the order of a ``HashSet`` of topic ids - the bucket of each key's ``hashCode()``, spread as
``HashMap`` spreads it, in a table sized as Java sizes it. ``range`` sorts members (instance ids first) and
needs no such thing.

Simplifications, stated here as the room's rule asks:

- ``uniform`` with members subscribed to *different* topic sets (Kafka's heterogeneous builder, an iterative
  balancer of several hundred lines) is approximated: previous target partitions are kept while a member is
  under its share, the rest go, topic by topic (by name) and partition by partition, to the subscriber with
  the fewest partitions, then single partitions move - along chains of members, each giving one of a topic
  the next subscribes to - from the fullest to the emptiest while that narrows the gap. Balanced and sticky
  like Kafka's, but the partitions chosen can differ.
- Rack-aware assignment (KIP-881) is not implemented: ``rack_id`` is kept and described, never used.
- Within one hash bucket Java keeps insertion order; the mock uses the order members joined the group.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

import attrs

__all__ = [
    "ASSIGNORS",
    "DEFAULT_ASSIGNOR",
    "MemberSpec",
    "TargetAssignment",
    "java_hash_order",
    "java_string_hash",
    "java_uuid_hash",
    "range_assign",
    "uniform_assign",
]

#: topic id -> partitions; a member's assignment (previous or new)
TopicPartitions = dict[uuid.UUID, frozenset[int]]
#: member id -> its assignment
TargetAssignment = dict[str, TopicPartitions]
K = TypeVar("K")


@attrs.frozen
class MemberSpec:
    """What an assignor knows of a member: its subscription (topic ids) and its previous target."""

    member_id: str
    instance_id: str | None
    #: the subscribed topic ids, in the order the member's subscription lists them (the order Java keeps
    #: for topic ids in one hash bucket)
    topics: tuple[uuid.UUID, ...]
    previous: Mapping[uuid.UUID, frozenset[int]] = attrs.field(factory=dict)


# ----------------------------------------------------------------------------------------- Java order
def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """``String.hashCode()``: s[0]*31^(n-1) + ... over UTF-16 code units, as a signed 32-bit int."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def java_uuid_hash(value: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode()``: the two 64-bit halves xor-ed, then folded to 32 bits."""
    most, least = value.int >> 64, value.int & ((1 << 64) - 1)
    h = most ^ least
    return _int32((h >> 32) ^ h)


def _table_size(count: int) -> int:
    """The capacity of a ``HashMap``/``HashSet`` holding ``count`` keys, grown from the default 16."""
    capacity = 16
    while count > capacity * 3 // 4:
        capacity *= 2
    return capacity


def java_hash_order(keys: Iterable[K], hash_of: Callable[[K], int]) -> list[K]:
    """``keys`` in the iteration order of a Java ``HashMap`` built from them in this order: by bucket
    (the hash spread as ``h ^ (h >>> 16)``, masked by the table size), insertion order within a bucket."""
    items = list(keys)
    mask = _table_size(len(items)) - 1

    def bucket(key: K) -> int:
        h = hash_of(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    ranked = sorted(range(len(items)), key=lambda i: (bucket(items[i]), i))
    return [items[i] for i in ranked]


def _int_order(values: Iterable[int]) -> list[int]:
    """A ``HashSet<Integer>``'s iteration order (an int hashes to itself)."""
    return java_hash_order(values, lambda v: v)


# ----------------------------------------------------------------------------------------- uniform
def uniform_assign(members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> TargetAssignment:
    """Kafka's ``uniform`` assignor: balanced (sizes differ by at most one), then sticky.

    ``members`` in the order they joined; ``partitions`` the partition count of every topic any member
    subscribes to (a topic that does not exist is left out: its subscribers get nothing of it).
    """
    if not members:
        return {}
    if len({frozenset(m.topics) for m in members}) == 1:
        return _uniform_homogeneous(members, partitions)
    return _uniform_heterogeneous(members, partitions)


def _uniform_homogeneous(
    members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]
) -> TargetAssignment:
    """``UniformHomogeneousAssignmentBuilder``: every member subscribes to the same topics."""
    ordered = java_hash_order(members, lambda m: java_string_hash(m.member_id))
    topics = java_hash_order([t for t in members[0].topics if t in partitions], java_uuid_hash)
    owned = {(t, p) for m in members for t, ps in m.previous.items() for p in ps}
    unassigned = [(t, p) for t in topics for p in range(partitions[t]) if (t, p) not in owned]
    total = sum(partitions[t] for t in topics)
    if not topics:
        return {m.member_id: {} for m in members}
    minimum, extra = divmod(total, len(members))
    target: TargetAssignment = {}
    unfilled: list[tuple[str, int]] = []
    subscribed = set(topics)
    for index, member in enumerate(ordered):
        quota, has_extra = minimum, False
        if extra > 0:
            quota, has_extra = quota + 1, True
        kept: TopicPartitions = {}
        for topic in java_hash_order(member.previous, java_uuid_hash):
            current = member.previous[topic]
            if topic not in subscribed:
                continue  # a topic no longer subscribed leaves the assignment entirely
            if len(current) <= quota:
                quota -= len(current)
                kept[topic] = current
                continue
            keep = []
            for partition in _int_order(current):
                if quota > 0:
                    quota -= 1
                    keep.append(partition)
                else:
                    unassigned.append((topic, partition))
            if keep:
                kept[topic] = frozenset(keep)
        # a member that did not fill its extra slot from what it had gives the slot up while enough members
        # are left to take the extras: they stay with the members already holding them (stickiness)
        if quota > 0 and has_extra and len(ordered) - index > extra:
            quota, has_extra = quota - 1, False
        if quota > 0:
            unfilled.append((member.member_id, quota))
        if has_extra:
            extra -= 1
        target[member.member_id] = kept
    position = 0
    for member_id, quota in unfilled:
        given = dict(target[member_id])
        for _ in range(quota):
            if position >= len(unassigned):
                break
            topic, partition = unassigned[position]
            position += 1
            given[topic] = given.get(topic, frozenset()) | {partition}
        target[member_id] = given
    return target


def _uniform_heterogeneous(
    members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]
) -> TargetAssignment:
    """Members subscribed to different topics: balanced and sticky, not Kafka's exact choices (see above)."""
    subscribers: dict[uuid.UUID, list[str]] = {}
    for member in members:
        for topic in member.topics:
            if topic in partitions:
                subscribers.setdefault(topic, []).append(member.member_id)
    # each member's fair share: its subscribed partitions divided among their subscribers
    share = {
        m.member_id: sum(partitions[t] / len(subscribers[t]) for t in m.topics if t in subscribers)
        for m in members
    }
    target: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in members}
    taken: set[tuple[uuid.UUID, int]] = set()
    for member in members:
        budget = int(share[member.member_id] + 0.999999)
        for topic in sorted(member.previous, key=str):
            if topic not in member.topics or topic not in partitions:
                continue
            for partition in sorted(member.previous[topic]):
                if budget > 0 and partition < partitions[topic] and (topic, partition) not in taken:
                    target[member.member_id].setdefault(topic, set()).add(partition)
                    taken.add((topic, partition))
                    budget -= 1

    def size(member_id: str) -> int:
        return sum(len(ps) for ps in target[member_id].values())

    for topic in sorted(subscribers, key=str):
        for partition in range(partitions[topic]):
            if (topic, partition) not in taken:
                emptiest = min(subscribers[topic], key=size)
                target[emptiest].setdefault(topic, set()).add(partition)
    topics_of = {m.member_id: {t for t in m.topics if t in subscribers} for m in members}
    for _ in range(10_000):
        if not _shift_one(target, [m.member_id for m in members], topics_of, size):
            break
    return {m: {t: frozenset(ps) for t, ps in given.items()} for m, given in target.items()}


def _shift_one(
    target: dict[str, dict[uuid.UUID, set[int]]],
    order: list[str],
    topics_of: Mapping[str, set[uuid.UUID]],
    size: Callable[[str], int],
) -> bool:
    """Move one partition's worth from the fullest member that can reach the emptiest one, along a chain of
    members where each gives a partition of a topic the next subscribes to; False when none narrows a gap."""
    for low in sorted(order, key=size):
        came_from: dict[str, tuple[str, uuid.UUID] | None] = {low: None}
        queue = [low]
        while queue:
            receiver = queue.pop(0)
            for giver in order:
                if giver in came_from:
                    continue
                common = sorted(
                    (t for t in target[giver] if t in topics_of[receiver] and target[giver][t]), key=str
                )
                if common:
                    came_from[giver] = (receiver, common[0])
                    queue.append(giver)
        givers = [m for m in came_from if m != low and size(m) - size(low) >= 2]
        if not givers:
            continue
        giver = max(givers, key=size)
        while (step := came_from[giver]) is not None:
            receiver, topic = step
            partition = max(target[giver][topic])
            target[giver][topic].discard(partition)
            if not target[giver][topic]:
                del target[giver][topic]
            target[receiver].setdefault(topic, set()).add(partition)
            giver = receiver
        return True
    return False


# ----------------------------------------------------------------------------------------- range
def range_assign(members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> TargetAssignment:
    """Kafka's server-side ``range`` assignor (not sticky): members sorted by instance id (static members
    first) and then by member id; each topic cut into contiguous ranges, the first ``count % members``
    members one partition longer; a member past the end of a topic gets nothing of it."""

    def order(member: MemberSpec) -> tuple[int, str]:
        return (0, member.instance_id) if member.instance_id is not None else (1, member.member_id)

    ordered = sorted(members, key=order)
    counts: dict[uuid.UUID, int] = {}
    for member in ordered:
        for topic in member.topics:
            if topic in partitions:
                counts[topic] = counts.get(topic, 0) + 1
    next_range = dict.fromkeys(counts, 0)
    extra = {t: partitions[t] % n for t, n in counts.items()}
    target: TargetAssignment = {}
    for member in ordered:
        given: TopicPartitions = {}
        for topic in member.topics:
            if topic not in counts:
                continue
            start = next_range[topic]
            if start >= partitions[topic]:
                continue
            end = min(start + partitions[topic] // counts[topic], partitions[topic])
            if extra[topic] > 0:
                end += 1
                extra[topic] -= 1
            next_range[topic] = end
            given[topic] = frozenset(range(start, end))
        target[member.member_id] = given
    return target


#: the assignors a broker offers, by the name ``server_assignor`` selects (``group.consumer.assignors``)
ASSIGNORS: dict[str, Callable[[Sequence[MemberSpec], Mapping[uuid.UUID, int]], TargetAssignment]] = {
    "uniform": uniform_assign,
    "range": range_assign,
}
#: the assignor of a group whose members name none (the first of ``group.consumer.assignors``)
DEFAULT_ASSIGNOR = "uniform"
