"""The data model of one classic (pre-KIP-848) consumer group inside the MockCluster.

Kept apart from the coordinator so the rebalance protocol (``group_membership.py``) reads as a
sequence of state transitions over a small, inspectable model. The model follows the broker's
``ClassicGroup``: members keyed by member id, static members indexed by group instance id, the
leader, the selected protocol and the generation. Nothing here blocks or touches the wire; the one
rule that answers with an error code (:meth:`ClassicGroup.validate_member`) uses the shared catalogue.
"""

from __future__ import annotations

import enum
from collections import Counter

import attrs

from txnproducer._internal.protocol import error_codes as ec


class GroupState(enum.Enum):
    """The classic group states; the values are the names Kafka reports in DescribeGroups/ListGroups."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Which states a group may move to from each state (as Kafka's ClassicGroupState validates).
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


@attrs.define
class JoinWaiter:
    """A JoinGroup request parked until the join phase completes (the broker's join future).

    ``result`` is set by whoever completes the phase; the handler thread waiting on the cluster
    condition returns it.
    """

    result: JoinOutcome | None = None


@attrs.define
class SyncWaiter:
    """A SyncGroup request parked until the leader's assignment arrives (or the round fails)."""

    result: SyncOutcome | None = None


@attrs.frozen
class JoinOutcome:
    """What a JoinGroup response carries, independent of the wire version."""

    error_code: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    # (member_id, group_instance_id, metadata) for the leader; empty for followers.
    members: tuple[tuple[str, str | None, bytes], ...] = ()


@attrs.frozen
class SyncOutcome:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@attrs.define
class Member:
    """One member of a classic group."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    # A member added during this rebalance: its heartbeat is not "satisfied" by a pending join.
    is_new: bool = False
    join_waiter: JoinWaiter | None = None
    sync_waiter: SyncWaiter | None = None
    heartbeat_deadline_ms: int = 0

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """True when a rejoin carries exactly the protocols (and metadata) this member has."""
        return self.protocols == protocols

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka's rule: a parked join/sync counts as a heartbeat, except for members new this round."""
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync

    def complete_join(self, outcome: JoinOutcome) -> None:
        if self.join_waiter is not None:
            self.join_waiter.result = outcome
            self.join_waiter = None

    def complete_sync(self, outcome: SyncOutcome) -> None:
        if self.sync_waiter is not None:
            self.sync_waiter.result = outcome
            self.sync_waiter = None


@attrs.define
class ClassicGroup:
    """A classic group: membership, generation, protocol and the timers the coordinator runs."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = attrs.Factory(dict)
    static_members: dict[str, str] = attrs.Factory(dict)  # group_instance_id -> member_id
    # Member ids handed out with MEMBER_ID_REQUIRED, not joined yet -> expiry time (ms).
    pending_members: dict[str, int] = attrs.Factory(dict)
    pending_sync_members: set[str] = attrs.Factory(set)
    new_member_added: bool = False
    # Timers (absolute ms, None = not scheduled).
    join_deadline_ms: int | None = None
    initial_join: bool = False  # the join timer is the initial-rebalance delay
    initial_delay_ms: int = 0
    initial_remaining_ms: int = 0
    sync_deadline_ms: int | None = None
    sync_generation: int = -1

    # -- state -------------------------------------------------------------------------------
    def transition_to(self, target: GroupState) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise RuntimeError(
                f"group {self.group_id}: illegal transition {self.state.value} -> {target.value}"
            )
        self.previous_state = self.state
        self.state = target

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    # -- membership ----------------------------------------------------------------------------
    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def validate_member(self, member_id: str, group_instance_id: str | None) -> int:
        """Is the sender a current member? UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID (a static member's old id)
        or NONE - the check every member request and member-bound offset commit starts with."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return ec.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ec.FENCED_INSTANCE_ID
            return ec.NONE
        if member_id not in self.members:
            return ec.UNKNOWN_MEMBER_ID
        return ec.NONE

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        self.pending_members.pop(member_id, None)
        self.pending_sync_members.discard(member_id)
        if member is None:
            return None
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, group_instance_id: str, old_id: str, new_id: str) -> Member:
        """Give a static member a new member id; the old id's parked requests are fenced by the caller."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[group_instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return member

    def has_all_members_joined(self) -> bool:
        return all(m.awaiting_join for m in self.members.values()) and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did; False if nobody rejoined."""
        if self.leader_id is not None and self.members[self.leader_id].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols -----------------------------------------------------------------------------
    def _candidate_protocols(self) -> list[str]:
        """Protocols every member supports, in the first member's preference order."""
        members = list(self.members.values())
        if not members:
            return []
        common = set(members[0].protocol_names())
        for member in members[1:]:
            common &= set(member.protocol_names())
        return [name for name in members[0].protocol_names() if name in common]

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Whether a (re)joining member is compatible with the group (INCONSISTENT_GROUP_PROTOCOL if not)."""
        if self.state is GroupState.EMPTY or not self.members:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        candidates = set(self._candidate_protocols())
        return any(name in candidates for name, _ in protocols)

    def select_protocol(self) -> str | None:
        """Each member votes for its most preferred protocol among those all members support."""
        candidates = self._candidate_protocols()
        if not candidates:
            return None
        votes: Counter[str] = Counter()
        for member in self.members.values():
            for name in member.protocol_names():
                if name in candidates:
                    votes[name] += 1
                    break
        best = max(votes.values())
        return next(name for name in candidates if votes[name] == best)

    def init_next_generation(self) -> None:
        self.generation_id += 1
        self.pending_sync_members.clear()
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY)

    def current_member_list(self) -> tuple[tuple[str, str | None, bytes], ...]:
        """What the leader receives in its JoinGroup response: every member's metadata for the protocol."""
        protocol = self.protocol_name or ""
        return tuple(
            (m.member_id, m.group_instance_id, m.metadata_for(protocol)) for m in self.members.values()
        )
