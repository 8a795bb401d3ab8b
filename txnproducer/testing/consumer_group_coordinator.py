"""The MockCluster's consumer-protocol group coordinator: KIP-848 groups and their online migration.

:class:`ConsumerGroupCoordinator` is the KIP-848 protocol of :mod:`consumer_membership` plus what Kafka 4.1
does between the two group protocols, so that a fleet can move from one to the other without stopping
(``group.consumer.migration.policy``, ``bidirectional`` by default):

- **upgrade**: a ConsumerGroupHeartbeat joining a non-empty classic group (protocol type ``consumer``) turns
  it into a consumer group; its classic members become consumer-group members that keep speaking the classic
  protocol, at the classic generation as their epoch, with their SyncGroup assignment as their target;
- **classic members in a consumer group**: JoinGroup answers at once, with the member's epoch as generation
  (no leader, no member list: the broker assigns), SyncGroup hands out the member's current assignment in
  the version of its subscription, Heartbeat answers REBALANCE_IN_PROGRESS while the member must rejoin -
  its epoch is behind the group's, it must give partitions up, or a partition it waits for was released -
  and a member that does not rejoin or sync within its rebalance timeout, or heartbeat within its session
  timeout, is fenced; offsets are committed with the generation (ILLEGAL_GENERATION otherwise);
- **downgrade**: when the last consumer-protocol member leaves or is fenced and only classic members remain,
  the group becomes a classic group again (generation = the group epoch), preparing a rebalance.

The classic groups themselves live in :class:`~txnproducer.testing.group_coordinator.GroupCoordinator`,
which owns this object and lends it the narrow :class:`ClassicSide` view; this module never imports it.

Simplifications: a classic member's embedded protocol is read from its first protocol's subscription
(Kafka picks the protocol every classic member supports); owned partitions of a v0 subscription are none,
as for an eager client; the downgrade of a group whose leaving member is *replaced* by a classic static
member is not done; assignments are written with topics sorted by name (Kafka: its hash map's order).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Protocol

from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)

from .classic_group import ClassicGroup, GroupState, JoinOutcome, Member, SyncOutcome
from .consumer_group import Assignment, ClassicMemberInfo, ConsumerGroup, ConsumerGroupMember, MemberState
from .consumer_group_requests import GroupError, new_member_id
from .consumer_membership import ConsumerMembership, TopicsView

__all__ = ["ClassicSide", "ConsumerGroupCoordinator"]


class ClassicSide(Protocol):
    """What the migration needs of the classic groups (``GroupCoordinator`` provides it)."""

    def classic_group(self, group_id: str) -> ClassicGroup | None: ...

    def drop_classic_group(self, group_id: str) -> None: ...

    def adopt_classic_group(self, group: ClassicGroup, now: int) -> None: ...


class ConsumerGroupCoordinator(ConsumerMembership):
    """KIP-848 groups of the mock cluster, classic members and the migration (see the module docstring)."""

    def __init__(self, state: TopicsView, classic: ClassicSide) -> None:
        super().__init__(state)
        self._classic = classic

    # ------------------------------------------------------------------ upgrade / downgrade
    def _maybe_upgrade(self, group_id: str, create: bool, now: int) -> ConsumerGroup | None:
        classic = self._classic.classic_group(group_id)
        if classic is None or classic.state is GroupState.DEAD:
            return None
        if not classic.members:
            if create:
                self._classic.drop_classic_group(group_id)  # an empty classic group is simply replaced
                return None
            raise GroupError(ec.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if not create:
            raise GroupError(ec.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        reason = None
        if self.migration_policy.lower() not in ("upgrade", "bidirectional"):
            reason = "online upgrade is disabled"
        elif classic.protocol_type != PROTOCOL_TYPE:
            reason = "the group does not use the consumer embedded protocol"
        elif len(classic.members) > self.max_size:
            reason = "the group size exceeds the consumer group maximum size"
        if reason is not None:
            raise GroupError(
                ec.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {group_id} to consumer group because {reason}.",
            )
        try:
            converted = self._from_classic(classic, now)
        except ValueError as exc:
            raise GroupError(
                ec.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {group_id} to consumer group "
                f"because the embedded consumer protocol is malformed: {exc}.",
            ) from exc
        self._classic.drop_classic_group(group_id)
        return converted

    def _from_classic(self, classic: ClassicGroup, now: int) -> ConsumerGroup:
        """Kafka's ``ConsumerGroup.fromClassicGroup``: members at the generation, assignments kept."""
        generation = classic.generation_id
        group = ConsumerGroup(classic.group_id, group_epoch=generation, assignment_epoch=generation)
        for member in classic.members.values():
            subscription = decode_subscription(
                member.metadata_for(classic.protocol_name or "") or member.protocols[0][1]
            )
            assigned = self._by_id((t, p) for t, p in decode_assignment(member.assignment).partitions)
            group.put(
                ConsumerGroupMember(
                    member.member_id,
                    instance_id=member.group_instance_id,
                    rack_id=subscription.rack_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    member_epoch=generation,
                    previous_member_epoch=generation,
                    rebalance_timeout_ms=member.rebalance_timeout_ms,
                    subscribed_topic_names=tuple(subscription.topics),
                    assigned=assigned,
                    classic=ClassicMemberInfo(member.session_timeout_ms, tuple(member.protocols)),
                    session_deadline_ms=now + member.session_timeout_ms,
                )
            )
            group.targets[member.member_id] = dict(assigned)
        group.metadata = self._subscription_metadata(group)
        return group

    def _maybe_downgrade(self, group: ConsumerGroup, leaving: set[str], now: int) -> bool:
        remaining = [m for m in group.members.values() if m.member_id not in leaving]
        if not remaining or not group.all_use_classic_protocol_except(leaving):
            return False
        if self.migration_policy.lower() not in ("downgrade", "bidirectional"):
            return False
        if len(remaining) > self.classic_max_size:
            return False
        classic = ClassicGroup(
            group.group_id,
            state=GroupState.STABLE,
            previous_state=GroupState.STABLE,
            generation_id=group.group_epoch,
            protocol_type=PROTOCOL_TYPE,
        )
        for member in remaining:
            assert member.classic is not None
            classic.add(
                Member(
                    member_id=member.member_id,
                    group_instance_id=member.instance_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    session_timeout_ms=member.classic.session_timeout_ms,
                    rebalance_timeout_ms=member.rebalance_timeout_ms,
                    protocol_type=PROTOCOL_TYPE,
                    protocols=list(member.classic.protocols),
                    assignment=self._assignment_bytes(member),
                    heartbeat_deadline_ms=now + member.classic.session_timeout_ms,
                )
            )
        classic.protocol_name = classic.select_protocol()
        self.drop_consumer_group(group.group_id)
        self._classic.adopt_classic_group(classic, now)
        return True

    # ------------------------------------------------------------------ JoinGroup of a classic member
    def classic_join(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
    ) -> JoinOutcome:
        """Kafka's ``classicGroupJoinToConsumerGroup``: answered at once with the member's epoch."""
        now = self._now()
        self._run_timers(now)
        group = self._consumer_groups[group_id]
        try:
            unknown = not member_id
            member_id = member_id or new_member_id()
            if member_id not in group.members and len(group.members) >= self.max_size:
                raise GroupError(ec.GROUP_MAX_SIZE_REACHED)
            if protocol_type != PROTOCOL_TYPE or not protocols:
                raise GroupError(ec.INCONSISTENT_GROUP_PROTOCOL)
            if require_known_member_id and unknown:
                return JoinOutcome(ec.MEMBER_ID_REQUIRED, member_id=member_id)
            try:
                subscription = decode_subscription(protocols[0][1])
            except ValueError as exc:
                raise GroupError(ec.INCONSISTENT_GROUP_PROTOCOL) from exc
            member = self._classic_member_for(group, member_id, group_instance_id)
            updated = member.copy()
            updated.instance_id = group_instance_id
            if subscription.rack_id:
                updated.rack_id = subscription.rack_id
            updated.rebalance_timeout_ms = rebalance_timeout_ms
            updated.subscribed_topic_names = tuple(subscription.topics)
            updated.client_id, updated.client_host = client_id, client_host
            updated.classic = ClassicMemberInfo(session_timeout_ms, tuple(protocols))
            bump = self._update_member(group, member, updated)
            owned = tuple(
                (t, tuple(sorted(ps))) for t, ps in self._by_id(subscription.owned_partitions).items()
            )
            joined = self._refresh_and_reconcile(group, updated, bump, owned, now)
            joined.session_deadline_ms = now + session_timeout_ms
            joined.join_deadline_ms = now + rebalance_timeout_ms  # it must SyncGroup within that
            return JoinOutcome(
                ec.NONE,
                member_id=joined.member_id,
                generation_id=joined.member_epoch,
                protocol_type=PROTOCOL_TYPE,
                protocol_name=protocols[0][0],
                leader="",
            )
        except GroupError as error:
            return JoinOutcome(error.code, member_id=member_id)
        finally:
            self._notify()

    def _classic_member_for(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerGroupMember:
        if instance_id is None:
            return group.members.get(member_id) or ConsumerGroupMember(member_id)
        existing = group.static_member(instance_id)
        if existing is None:
            return group.members.get(member_id) or ConsumerGroupMember(member_id)
        if existing.member_id == member_id:
            return existing
        if not existing.uses_classic_protocol and existing.member_epoch != -2:
            raise GroupError(ec.UNRELEASED_INSTANCE_ID)
        replacement = existing.copy()
        replacement.member_id, replacement.member_epoch, replacement.previous_member_epoch = member_id, 0, 0
        group.replace(existing.member_id, replacement)
        return replacement

    # ------------------------------------------------------------------ SyncGroup, Heartbeat, LeaveGroup
    def classic_sync(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> SyncOutcome:
        """Kafka's ``classicGroupSyncToConsumerGroup``: the member's current assignment."""
        now = self._now()
        self._run_timers(now)
        group = self._consumer_groups[group_id]
        try:
            member = self._classic_member(group, member_id, group_instance_id, generation_id)
            assert member.classic is not None
            if (protocol_type is not None and protocol_type != PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != member.classic.protocols[0][0]
            ):
                raise GroupError(ec.INCONSISTENT_GROUP_PROTOCOL)
            if (
                group.group_epoch > member.member_epoch
                and member.state is not MemberState.UNREVOKED_PARTITIONS
            ):
                member.join_deadline_ms = member.join_deadline_ms or now + member.rebalance_timeout_ms
                raise GroupError(ec.REBALANCE_IN_PROGRESS)
            member.join_deadline_ms = None
            member.session_deadline_ms = now + member.classic.session_timeout_ms
            return SyncOutcome(ec.NONE, protocol_type, protocol_name, self._assignment_bytes(member))
        except GroupError as error:
            return SyncOutcome(error.code)
        finally:
            self._notify()

    def classic_heartbeat(
        self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        """Kafka's ``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS: rejoin."""
        now = self._now()
        self._run_timers(now)
        group = self._consumer_groups[group_id]
        try:
            member = self._classic_member(group, member_id, group_instance_id, generation_id)
        except GroupError as error:
            return error.code
        assert member.classic is not None
        member.session_deadline_ms = now + member.classic.session_timeout_ms
        if (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member)
            )
        ):
            if member.join_deadline_ms is None:
                member.join_deadline_ms = now + member.rebalance_timeout_ms
            return ec.REBALANCE_IN_PROGRESS
        return ec.NONE

    def classic_leave(
        self, group_id: str, members: Iterable[tuple[str, str | None]]
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """Kafka's ``classicGroupLeaveToConsumerGroup``: the valid members are fenced together."""
        now = self._now()
        self._run_timers(now)
        group = self._consumer_groups[group_id]
        results: list[tuple[str, str | None, int]] = []
        leaving: set[str] = set()
        for member_id, instance_id in members:
            try:
                member = self._find_member(group, member_id, instance_id)
                if instance_id is None and not member.uses_classic_protocol:
                    raise GroupError(ec.UNKNOWN_MEMBER_ID)
                leaving.add(member.member_id)
                results.append((member_id, instance_id, ec.NONE))
            except GroupError as error:
                results.append((member_id, instance_id, error.code))
        if leaving:
            self.fence(group, leaving, now)
            self._notify()
        return ec.NONE, results

    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int
    ) -> ConsumerGroupMember:
        member = self._find_member(group, member_id, instance_id)
        if not member.uses_classic_protocol:
            raise GroupError(ec.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol.")
        if generation_id != member.member_epoch:
            raise GroupError(ec.ILLEGAL_GENERATION)
        return member

    @staticmethod
    def _find_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(ec.UNKNOWN_MEMBER_ID)
            return member
        found = group.static_member(instance_id)
        if found is None:
            raise GroupError(ec.UNKNOWN_MEMBER_ID)
        if member_id and found.member_id != member_id:
            raise GroupError(ec.FENCED_INSTANCE_ID)
        return found

    # ------------------------------------------------------------------ helpers
    def _by_id(self, partitions: Iterable[tuple[str, int]]) -> Assignment:
        """(topic name, partition) pairs as an assignment by topic id; unknown topics are left out."""
        out: dict[uuid.UUID, set[int]] = {}
        for name, partition in partitions:
            topic = self._state.topics.get(name)
            if topic is not None:
                out.setdefault(topic.topic_id, set()).add(partition)
        return {t: frozenset(ps) for t, ps in out.items()}

    def _assignment_bytes(self, member: ConsumerGroupMember) -> bytes:
        """The member's assignment as a classic client reads it, in the version of its subscription."""
        assert member.classic is not None
        metadata = member.classic.protocols[0][1]
        version = (
            min(max(int.from_bytes(metadata[:2], "big", signed=True), 0), 3) if len(metadata) >= 2 else 0
        )
        pairs = [(name, p) for t, ps in member.assigned.items() if (name := self.topic_name(t)) for p in ps]
        return encode_assignment(pairs, version=version)
