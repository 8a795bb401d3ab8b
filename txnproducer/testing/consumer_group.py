"""The data model of one KIP-848 consumer-protocol group inside the MockCluster, and its reconciliation.

Kept apart from the coordinator (``consumer_group_coordinator.py``) so that the rules read as rules over a
small, inspectable model, as ``classic_group.py`` is for the classic protocol. It follows Kafka 4.1's
``ConsumerGroup``, ``ConsumerGroupMember`` and ``CurrentAssignmentBuilder``:

- the *group epoch* moves when membership, a subscription or a subscribed topic changes; the *target
  assignment* (every member's partitions, computed by a server-side assignor) is recomputed when the group
  epoch is ahead of the *assignment epoch*;
- each member moves towards its target at its own pace (:func:`reconcile`): partitions it must give up are
  first left out of its assignment and stay *pending revocation* - still owned - until the member's
  heartbeat no longer lists them; partitions another member still owns are handed over only once released;
  a member whose revocations are done moves to the assignment epoch;
- the group state (``Empty``, ``Assigning``, ``Reconciling``, ``Stable``) follows from the epochs.

A member that speaks the classic protocol inside a consumer group (online migration) is a
:class:`ConsumerGroupMember` with :attr:`~ConsumerGroupMember.classic` set: its session timeout and the
protocols (with their subscription bytes) of its JoinGroup.

Nothing here blocks, touches the wire or knows the time; error codes come from the shared catalogue.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping

import attrs

from .server_assignors import DEFAULT_ASSIGNOR

__all__ = [
    "Assignment",
    "ClassicMemberInfo",
    "ConsumerGroup",
    "ConsumerGroupMember",
    "MemberState",
    "reconcile",
]

#: topic id -> partitions
Assignment = dict[uuid.UUID, frozenset[int]]


class MemberState(enum.Enum):
    """Where a member is in its reconciliation (Kafka's ``MemberState``)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@attrs.frozen
class ClassicMemberInfo:
    """What a classic-protocol member of a consumer group joined with (JoinGroup)."""

    session_timeout_ms: int
    #: (protocol name, subscription bytes) in the member's order of preference
    protocols: tuple[tuple[str, bytes], ...]


@attrs.define
class ConsumerGroupMember:
    """One member of a consumer-protocol group."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = "/127.0.0.1"
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    #: "" or None: no expression
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: partitions the member may use now
    assigned: Assignment = attrs.Factory(dict)
    #: partitions the member must give up and still owns
    pending_revocation: Assignment = attrs.Factory(dict)
    classic: ClassicMemberInfo | None = None
    #: timers (absolute ms; None: not scheduled)
    session_deadline_ms: int | None = None
    rebalance_deadline_ms: int | None = None
    #: the epoch the rebalance timer was started in (the timer fences only a member still in it)
    rebalance_deadline_epoch: int = -1
    #: a classic member asked to rejoin (REBALANCE_IN_PROGRESS) or to sync must do so by then
    join_deadline_ms: int | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def has_regex(self) -> bool:
        return bool(self.subscribed_topic_regex)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def owned_partitions(self) -> set[tuple[uuid.UUID, int]]:
        """Every partition the member holds: assigned or still pending revocation."""
        return {
            (t, p)
            for source in (self.assigned, self.pending_revocation)
            for t, ps in source.items()
            for p in ps
        }

    def copy(self) -> ConsumerGroupMember:
        return attrs.evolve(
            self, assigned=dict(self.assigned), pending_revocation=dict(self.pending_revocation)
        )


@attrs.define
class ConsumerGroup:
    """A consumer-protocol group: members, epochs, target assignment, resolved regular expressions."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    #: member id -> member, in the order they joined
    members: dict[str, ConsumerGroupMember] = attrs.Factory(dict)
    #: instance id -> member id
    static_members: dict[str, str] = attrs.Factory(dict)
    #: member id -> target assignment (of the assignment epoch)
    targets: dict[str, Assignment] = attrs.Factory(dict)
    #: regular expression -> the topic names it matched when last resolved
    resolved_regexes: dict[str, frozenset[str]] = attrs.Factory(dict)
    #: expressions a member subscribed to that the coordinator has not resolved yet
    unresolved_regexes: set[str] = attrs.Factory(set)
    #: the cluster's topic names when the expressions were last resolved, and when that was
    regex_topics: frozenset[str] = frozenset()
    regex_resolved_ms: int = 0
    #: the subscribed topics' (name, id, partition count) when the group epoch last moved
    metadata: frozenset[tuple[str, uuid.UUID, int]] = frozenset()

    # -- state -------------------------------------------------------------------------------------
    def state(self) -> str:
        """The state DescribeGroups-like answers show: Empty, Assigning, Reconciling or Stable."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def preferred_assignor(self, default: str = DEFAULT_ASSIGNOR) -> str:
        """The server assignor most members ask for (Kafka counts them; the first named wins a tie here),
        else ``default``."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor:
                counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
        if not counts:
            return default
        best = max(counts.values())
        return next(name for name, count in counts.items() if count == best)

    def all_use_classic_protocol_except(self, leaving: set[str]) -> bool:
        """Whether every member but those ``leaving`` speaks the classic protocol (to downgrade)."""
        return all(m.uses_classic_protocol for m in self.members.values() if m.member_id not in leaving)

    # -- membership --------------------------------------------------------------------------------
    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def put(self, member: ConsumerGroupMember) -> None:
        """Add or replace a member (keeping its place in the join order)."""
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        self.targets.pop(member_id, None)
        if (
            member is not None
            and member.instance_id is not None
            and self.static_members.get(member.instance_id) == member_id
        ):
            del self.static_members[member.instance_id]
        return member

    def replace(self, old_id: str, new: ConsumerGroupMember) -> None:
        """A static member coming back under a new member id takes the old one's place and target."""
        members = {
            (new.member_id if k == old_id else k): (new if k == old_id else v)
            for k, v in self.members.items()
        }
        self.members = members
        if old_id in self.targets:
            self.targets[new.member_id] = self.targets.pop(old_id)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id

    # -- partitions --------------------------------------------------------------------------------
    def owner_of(self, topic_id: uuid.UUID, partition: int) -> ConsumerGroupMember | None:
        """The member holding a partition (assigned or pending revocation), or None when it is free."""
        for member in self.members.values():
            if partition in member.assigned.get(topic_id, ()) or partition in member.pending_revocation.get(
                topic_id, ()
            ):
                return member
        return None

    def partition_epoch(self, topic_id: uuid.UUID, partition: int, asking: str) -> int:
        """Kafka's ``currentPartitionEpoch``: the epoch of another member holding it, -1 when free."""
        owner = self.owner_of(topic_id, partition)
        return -1 if owner is None or owner.member_id == asking else owner.member_epoch

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a member in UNRELEASED_PARTITIONS still waits for a partition another member holds."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic, partitions in self.targets.get(member.member_id, {}).items():
            mine = member.assigned.get(topic, frozenset())
            for partition in partitions - mine:
                if self.partition_epoch(topic, partition, member.member_id) != -1:
                    return True
        return False


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Mapping[uuid.UUID, frozenset[int]],
    owned: list[tuple[uuid.UUID, list[int]]] | None,
    partition_epoch: Callable[[uuid.UUID, int], int],
) -> ConsumerGroupMember:
    """Kafka's ``CurrentAssignmentBuilder.build()``: the member's next state towards ``target``.

    ``owned`` is what the member's heartbeat says it owns (None: not sent, as if it still owned everything);
    ``partition_epoch(topic, partition)`` the epoch of the other member holding a partition, -1 when free.
    Returns the member unchanged (the same object) when there is nothing to do.
    """
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
    elif member.state is MemberState.UNREVOKED_PARTITIONS and _owns_any(owned, member.pending_revocation):
        return member
    return _next_assignment(member, target_epoch, target, owned, partition_epoch)


def _owns_any(owned: list[tuple[uuid.UUID, list[int]]] | None, revoked: Assignment) -> bool:
    if owned is None:
        return True
    return any(p in revoked.get(topic, ()) for topic, partitions in owned for p in partitions)


def _next_assignment(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Mapping[uuid.UUID, frozenset[int]],
    owned: list[tuple[uuid.UUID, list[int]]] | None,
    partition_epoch: Callable[[uuid.UUID, int], int],
) -> ConsumerGroupMember:
    unreleased = False
    assigned: Assignment = {}
    revoking: Assignment = {}
    to_assign: Assignment = {}
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, frozenset())
        current = member.assigned.get(topic, frozenset())
        keep = current & wanted
        revoke = current - keep
        pending = wanted - keep
        free = frozenset(p for p in pending if partition_epoch(topic, p) == -1)
        unreleased = unreleased or free != pending
        if keep:
            assigned[topic] = keep
        if revoke:
            revoking[topic] = revoke
        if free:
            to_assign[topic] = free
    nxt = member.copy()
    if revoking and _owns_any(owned, revoking):
        # revoke first: the member stays in its epoch until it no longer lists these partitions
        nxt.state = MemberState.UNREVOKED_PARTITIONS
        _set_epoch(nxt, member.member_epoch)
        nxt.assigned = assigned
        nxt.pending_revocation = revoking
        return nxt
    for topic, partitions in to_assign.items():
        assigned[topic] = assigned.get(topic, frozenset()) | partitions
    nxt.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    _set_epoch(nxt, target_epoch)
    nxt.assigned = assigned
    nxt.pending_revocation = {}
    return nxt


def _set_epoch(member: ConsumerGroupMember, epoch: int) -> None:
    """Kafka's ``updateMemberEpoch``: the previous epoch becomes the current one, even when unchanged."""
    member.previous_member_epoch = member.member_epoch
    member.member_epoch = epoch


def same_state(a: ConsumerGroupMember, b: ConsumerGroupMember) -> bool:
    """Whether reconciliation changed nothing a client or a timer sees."""
    return (a.state, a.member_epoch, a.assigned, a.pending_revocation) == (
        b.state,
        b.member_epoch,
        b.assigned,
        b.pending_revocation,
    )
