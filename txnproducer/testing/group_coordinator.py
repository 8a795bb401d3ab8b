"""The MockCluster's classic consumer-group coordinator: membership, committed and transactional offsets.

Third-party consumers (kafka-python's KafkaConsumer, confluent-kafka's Consumer with the classic
protocol) and our exactly-once loop need a real group coordinator: join/sync rebalances that elect
a leader and hand out its assignment, heartbeats that keep members alive, committed offsets, and
the transactional offsets a producer stages with TxnOffsetCommit. This module implements that
protocol the way Kafka's ``GroupMetadataManager`` does for classic groups (states Empty,
PreparingRebalance, CompletingRebalance, Stable, Dead; generation-fenced offset commits), on plain
Python values. The rebalance protocol itself (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, timers) is
:class:`~txnproducer.testing.group_membership.GroupMembership`, which :class:`GroupCoordinator` extends
with offsets (OffsetCommit, OffsetFetch, the transaction coordinator's TxnOffsetCommit staging) and the
DescribeGroups / ListGroups views. The wire handlers (``handlers/join_group.py`` and its siblings) call
it; it never imports them.

KIP-848 consumer-protocol groups share the group id space and the offsets: :attr:`GroupCoordinator.consumer`
(:class:`~txnproducer.testing.consumer_group_coordinator.ConsumerGroupCoordinator`) holds them, and this
class routes a classic request for a consumer group's id there (a classic member of a consumer group,
KIP-848's online migration), validates offset commits and fetches of consumer groups with member epochs,
and lends it the classic groups to convert (:meth:`classic_group`, :meth:`drop_classic_group`,
:meth:`adopt_classic_group`).

Threading: as for :mod:`group_membership` - every public method runs with ``state.lock`` held.

Simplifications: offsets never expire and no ``__consumer_offsets`` log is written; a transaction's
offsets are staged in memory until its marker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from txnproducer._internal.protocol import error_codes as ec

from .classic_group import ClassicGroup, GroupState, JoinOutcome, SyncOutcome
from .consumer_group import ConsumerGroup
from .consumer_group_coordinator import ConsumerGroupCoordinator
from .group_membership import GroupMembership, StateView
from .group_offsets import CommittedOffset, GroupOffsets, TopicPartitionKey

__all__ = [
    "CommittedOffset",
    "GroupCoordinator",
    "GroupDescription",
    "GroupState",
    "MemberDescription",
]


@attrs.frozen
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@attrs.frozen
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    generation_id: int
    leader: str | None
    members: tuple[MemberDescription, ...]


class GroupCoordinator(GroupMembership):
    """Classic consumer groups and their offsets for the whole mock cluster.

    The group settings are :class:`GroupMembership`'s (fast-test defaults; change them on the instance
    before clients connect); ``offset_metadata_max_bytes`` is Kafka's offset.metadata.max.bytes.
    """

    offset_metadata_max_bytes: int = 4096

    def __init__(self, state: StateView) -> None:
        super().__init__(state)
        self._offsets: dict[str, GroupOffsets] = {}
        #: the KIP-848 consumer-protocol groups (their ConsumerGroupHeartbeat handler calls it directly)
        self.consumer = ConsumerGroupCoordinator(state, classic=self)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ inspection / test API
    def group_ids(self) -> list[str]:
        return [g.group_id for g in self._groups.values() if g.state is not GroupState.DEAD]

    def group(self, group_id: str) -> ClassicGroup | None:
        """The live group model (for assertions in tests; do not mutate)."""
        return self._groups.get(group_id)

    def describe(self, group_id: str) -> GroupDescription | None:
        """The group as DescribeGroups shows it, or None if it does not exist."""
        group = self._groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return None
        stable = group.state is GroupState.STABLE
        protocol = group.protocol_name or ""
        members = tuple(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                # Kafka shows the protocol metadata only once the group is Stable.
                metadata=m.metadata_for(protocol) if stable else b"",
                assignment=m.assignment,
            )
            for m in group.members.values()
        )
        return GroupDescription(
            group_id=group.group_id,
            state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_name=protocol if stable else "",
            generation_id=group.generation_id,
            leader=group.leader_id,
            members=members,
        )

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """Committed (visible) offsets of a group: {(topic, partition): offset}."""
        offsets = self._offsets.get(group_id)
        if offsets is None:
            return {}
        return {tp: c.offset for tp, c in offsets.committed.items()}

    def pending_txn_offsets(self, group_id: str) -> dict[int, dict[tuple[str, int], int]]:
        """Staged transactional offsets per producer id (not yet visible)."""
        offsets = self._offsets.get(group_id)
        if offsets is None:
            return {}
        return {pid: {tp: c.offset for tp, c in staged.items()} for pid, staged in offsets.pending.items()}

    # ------------------------------------------------------------------ fault injection
    def force_rebalance(self, group_id: str) -> None:
        """Start a rebalance now, as a metadata change would: members learn it from Heartbeat (a consumer
        group: its group epoch moves, and its members reconcile to a new target assignment)."""
        if self.consumer.force_new_epoch(group_id):
            return
        group = self._groups.get(group_id)
        if group is None or not group.members:
            return
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, self._now())
            self._notify()

    def remove_member(self, group_id: str, member_id: str) -> bool:
        """Remove a member as if its session had timed out; returns False if it was not a member."""
        if self.consumer.is_consumer_group(group_id):
            return self.consumer.remove_consumer_member(group_id, member_id)
        group = self._groups.get(group_id)
        if group is None:
            return False
        member = group.members.get(member_id)
        if member is None:
            return group.pending_members.pop(member_id, None) is not None
        self._remove_member_and_update(group, member, self._now())
        self._notify()
        return True

    # ------------------------------------------------------------------ offsets
    def commit_offsets(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        api_version: int,
        offsets: Mapping[TopicPartitionKey, CommittedOffset],
        known_topics: Iterable[str] | None = None,
    ) -> dict[TopicPartitionKey, int]:
        """Handle an OffsetCommit; returns the error code per partition.

        ``known_topics`` (when given) makes partitions of unknown topics answer
        UNKNOWN_TOPIC_OR_PARTITION, as Kafka's request handler does before the coordinator.
        """
        topics = None if known_topics is None else set(known_topics)
        group = self._groups.get(group_id)
        error = ec.NONE
        if self.consumer.is_consumer_group(group_id):
            error = self.consumer.validate_offset_commit(
                group_id, member_id, group_instance_id, generation_id, transactional=False,
                api_version=api_version)
        elif group is None:
            if generation_id < 0:
                group = self._create_group(group_id)  # a "simple" group: offsets only
            else:
                error = ec.GROUP_ID_NOT_FOUND if api_version >= 9 else ec.ILLEGAL_GENERATION
        if group is not None:
            error = self._validate_offset_commit(
                group, member_id, group_instance_id, generation_id, transactional=False
            )
        results: dict[TopicPartitionKey, int] = {}
        store = self._offsets.setdefault(group_id, GroupOffsets())
        for tp, value in offsets.items():
            if topics is not None and tp[0] not in topics:
                results[tp] = ec.UNKNOWN_TOPIC_OR_PARTITION
            elif error != ec.NONE:
                results[tp] = error
            elif len((value.metadata or "").encode()) > self.offset_metadata_max_bytes:
                results[tp] = ec.OFFSET_METADATA_TOO_LARGE
            else:
                store.commit(tp, attrs.evolve(value, metadata=value.metadata or ""))
                results[tp] = ec.NONE
        return results

    def fetch_offsets(
        self, *, group_id: str, partitions: Iterable[TopicPartitionKey] | None, require_stable: bool
    ) -> list[tuple[TopicPartitionKey, CommittedOffset | None, int]]:
        """Handle one group of an OffsetFetch: [(tp, committed or None, error)].

        ``partitions`` None means every partition with a committed offset. With ``require_stable``
        a partition that has a pending transactional offset answers UNSTABLE_OFFSET_COMMIT.
        """
        store = self._offsets.get(group_id, GroupOffsets())
        wanted = list(store.committed) if partitions is None else list(partitions)
        results: list[tuple[TopicPartitionKey, CommittedOffset | None, int]] = []
        for tp in wanted:
            if require_stable and store.has_pending(tp):
                results.append((tp, None, ec.UNSTABLE_OFFSET_COMMIT))
            else:
                results.append((tp, store.committed.get(tp), ec.NONE))
        return results

    # -- used by the transaction coordinator (contract A) ---------------------------------------
    def validate_txn_offset_commit(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        """Kafka's checks for TxnOffsetCommit (KIP-447): generation -1 always passes; otherwise the
        group must exist (ILLEGAL_GENERATION) and the member belong to this generation."""
        if self.consumer.is_consumer_group(group_id):
            return self.consumer.validate_offset_commit(group_id, member_id, group_instance_id, generation_id,
                                                        transactional=True, api_version=5)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return ec.ILLEGAL_GENERATION
            group = self._create_group(group_id)
        return self._validate_offset_commit(
            group, member_id, group_instance_id, generation_id, transactional=True
        )

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        """The group error of an OffsetFetch v9+ (member id and epoch): checked for consumer-protocol groups
        (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID), ignored for classic ones, as Kafka 4.1 does."""
        if self.consumer.is_consumer_group(group_id):
            return self.consumer.validate_offset_fetch(group_id, member_id, member_epoch)
        return ec.NONE

    def stage_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        offsets: dict[tuple[str, int], tuple[int, int, str | None]],
    ) -> None:
        """Keep a transaction's offsets aside until its marker (complete_txn_offsets)."""
        if group_id not in self._groups and not self.consumer.is_consumer_group(group_id):
            self._create_group(group_id)
        store = self._offsets.setdefault(group_id, GroupOffsets())
        for tp, (offset, leader_epoch, metadata) in offsets.items():
            store.stage(producer_id, tp, CommittedOffset(offset, leader_epoch, metadata or ""))

    def complete_txn_offsets(self, group_id: str, producer_id: int, commit: bool) -> None:
        """The transaction's COMMIT/ABORT marker reached the offsets: publish or drop them."""
        store = self._offsets.get(group_id)
        if store is not None:
            store.complete(producer_id, commit)
            self._notify()

    # ------------------------------------------------------------------ DescribeGroups / ListGroups
    def list_groups(self) -> list[tuple[str, str, str]]:
        """[(group_id, protocol_type, state)] of every live group."""
        listed = []
        for group in self._groups.values():
            if group.state is GroupState.DEAD:
                continue
            listed.append((group.group_id, group.protocol_type or "", group.state.value))
        return listed

    def list_consumer_groups(self) -> list[tuple[str, str, str]]:
        """[(group_id, protocol_type, state)] of the consumer-protocol groups (ListGroups' "consumer")."""
        return [(gid, "consumer", g.state()) for gid in self.consumer.group_ids()
                if (g := self.consumer.consumer_group(gid)) is not None]

    def describe_consumer_group(self, group_id: str) -> tuple[int, str | None, ConsumerGroup | None]:
        """ConsumerGroupDescribe's view: (error, message, group) - GROUP_ID_NOT_FOUND for an unknown or a
        classic group, with Kafka's messages."""
        group = self.consumer.consumer_group(group_id)
        if group is not None:
            return ec.NONE, None, group
        classic = self._groups.get(group_id)
        if classic is not None and classic.state is not GroupState.DEAD:
            return ec.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.", None
        return ec.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None

    # ------------------------------------------------------------------ classic requests to consumer groups
    def join(self, **request: Any) -> JoinOutcome:
        """JoinGroup: a non-empty consumer group answers its classic members (online migration); an empty
        one is dropped and the request handled as a classic group's, as Kafka does."""
        group = self.consumer.consumer_group(request["group_id"])
        if group is not None:
            if group.members:
                return self.consumer.classic_join(client_host=self.client_host, **request)
            self.consumer.drop_consumer_group(group.group_id)
        return super().join(**request)

    def sync(self, **request: Any) -> SyncOutcome:
        if self.consumer.is_consumer_group(request["group_id"]):
            request.pop("assignments", None)
            return self.consumer.classic_sync(**request)
        return super().sync(**request)

    def heartbeat(self, **request: Any) -> int:
        if self.consumer.is_consumer_group(request["group_id"]):
            return self.consumer.classic_heartbeat(**request)
        return super().heartbeat(**request)

    def leave(self, *, group_id: str,
              members: Iterable[tuple[str, str | None]]) -> tuple[int, list[tuple[str, str | None, int]]]:
        if self.consumer.is_consumer_group(group_id):
            return self.consumer.classic_leave(group_id, members)
        return super().leave(group_id=group_id, members=members)

    def tick(self, now_ms: int) -> None:
        super().tick(now_ms)
        self.consumer.tick(now_ms)

    # -- the classic groups the migration converts (ClassicSide) ---------------------------------------
    def classic_group(self, group_id: str) -> ClassicGroup | None:
        return self._groups.get(group_id)

    def drop_classic_group(self, group_id: str) -> None:
        """Forget a classic group turned consumer group; its parked requests answer REBALANCE_IN_PROGRESS."""
        group = self._groups.pop(group_id, None)
        if group is not None:
            for member in group.members.values():
                member.complete_join(JoinOutcome(ec.REBALANCE_IN_PROGRESS, member_id=member.member_id))
                member.complete_sync(SyncOutcome(ec.REBALANCE_IN_PROGRESS))
            self._notify()

    def adopt_classic_group(self, group: ClassicGroup, now: int) -> None:
        """A consumer group turned classic: it rebalances, its members learn it from Heartbeat."""
        self._groups[group.group_id] = group
        self._prepare_rebalance(group, now)
        self._notify()

    # ------------------------------------------------------------------ helpers
    def _validate_offset_commit(
        self,
        group: ClassicGroup,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        *,
        transactional: bool,
    ) -> int:
        if group.state is GroupState.DEAD:
            return ec.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.state is GroupState.EMPTY:
            return ec.NONE  # a simple commit (admin client / manual assignment)
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = group.validate_member(member_id, group_instance_id)
            if error != ec.NONE:
                return error
            if generation_id != group.generation_id:
                return ec.ILLEGAL_GENERATION
        elif not transactional and group.state is not GroupState.EMPTY:
            return ec.UNKNOWN_MEMBER_ID
        if not transactional and group.state is GroupState.COMPLETING_REBALANCE:
            return ec.REBALANCE_IN_PROGRESS
        return ec.NONE
