"""Wire handlers of the group coordinator APIs (8, 9, 11-16) for the MockCluster.

They translate between kafka-python request/response objects of every supported version and the
version-independent :class:`~txnproducer.testing.group_coordinator.GroupCoordinator`, so the
protocol logic never deals with field presence per version. Each handler first answers
NOT_COORDINATOR when this broker is not the group's coordinator, as a real broker does (clients
then look the coordinator up again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kafka.protocol.admin.groups import (
    DescribeGroupsResponse,
    ListGroupsResponse,
)
from kafka.protocol.consumer.group import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)

from txnproducer._internal.protocol import error_codes as ec

from ._dispatch import RequestContext, handles
from .group_offsets import CommittedOffset, TopicPartitionKey

if TYPE_CHECKING:  # pragma: no cover
    from .group_coordinator import GroupCoordinator

SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {
    8: (2, 9),  # OffsetCommit (v10 uses topic ids; Kafka 4.1 stops at 9)
    9: (1, 9),  # OffsetFetch
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 6),  # DescribeGroups
    16: (0, 5),  # ListGroups
}

_V8_TOPIC = OffsetFetchResponse.OffsetFetchResponseGroup.OffsetFetchResponseTopics
_V8_PARTITION = _V8_TOPIC.OffsetFetchResponsePartitions


class _ClusterView(Protocol):
    """The parts of ``ClusterState`` the handlers use."""

    @property
    def groups(self) -> GroupCoordinator: ...

    @property
    def topics(self) -> Mapping[str, Any]: ...

    def coordinator_for(self, key_type: int, key: str) -> int: ...


def _is_coordinator(state: _ClusterView, ctx: RequestContext, group_id: str) -> bool:
    return state.coordinator_for(0, group_id) == ctx.broker_id


# ---------------------------------------------------------------------------- JoinGroup (11)
@handles(11)
def handle_join_group(state: _ClusterView, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if not _is_coordinator(state, ctx, request.group_id):
        return _join_response(v, error_code=ec.NOT_COORDINATOR, member_id=request.member_id)
    outcome = state.groups.join(
        group_id=request.group_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if v >= 5 else None,
        client_id=ctx.client_id or "",
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms if v >= 1 else -1,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member_id=v >= 4 and (request.group_instance_id if v >= 5 else None) is None,
    )
    return _join_response(
        v,
        error_code=outcome.error_code,
        generation_id=outcome.generation_id,
        protocol_type=outcome.protocol_type,
        protocol_name=outcome.protocol_name,
        leader=outcome.leader,
        skip_assignment=outcome.skip_assignment,
        member_id=outcome.member_id,
        members=[
            JoinGroupResponse.JoinGroupResponseMember(member_id=mid, group_instance_id=gid, metadata=metadata)
            for mid, gid, metadata in outcome.members
        ],
    )


def _join_response(
    version: int,
    *,
    error_code: int,
    member_id: str,
    generation_id: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str = "",
    skip_assignment: bool = False,
    members: list[Any] | None = None,
) -> Any:
    return JoinGroupResponse[version](
        throttle_time_ms=0,
        error_code=error_code,
        generation_id=generation_id,
        protocol_type=protocol_type,
        # ProtocolName is nullable only from v7; older versions carry "" for "none".
        protocol_name=protocol_name if protocol_name is not None or version >= 7 else "",
        leader=leader,
        skip_assignment=skip_assignment,
        member_id=member_id,
        members=members or [],
    )


# ---------------------------------------------------------------------------- SyncGroup (14)
@handles(14)
def handle_sync_group(state: _ClusterView, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if not _is_coordinator(state, ctx, request.group_id):
        return SyncGroupResponse[v](throttle_time_ms=0, error_code=ec.NOT_COORDINATOR, assignment=b"")
    outcome = state.groups.sync(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if v >= 3 else None,
        protocol_type=request.protocol_type if v >= 5 else None,
        protocol_name=request.protocol_name if v >= 5 else None,
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    return SyncGroupResponse[v](
        throttle_time_ms=0,
        error_code=outcome.error_code,
        protocol_type=outcome.protocol_type,
        protocol_name=outcome.protocol_name,
        assignment=outcome.assignment,
    )


# ---------------------------------------------------------------------------- Heartbeat (12)
@handles(12)
def handle_heartbeat(state: _ClusterView, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if not _is_coordinator(state, ctx, request.group_id):
        return HeartbeatResponse[v](throttle_time_ms=0, error_code=ec.NOT_COORDINATOR)
    error = state.groups.heartbeat(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if v >= 3 else None,
    )
    return HeartbeatResponse[v](throttle_time_ms=0, error_code=error)


# ---------------------------------------------------------------------------- LeaveGroup (13)
@handles(13)
def handle_leave_group(state: _ClusterView, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if not _is_coordinator(state, ctx, request.group_id):
        return LeaveGroupResponse[v](throttle_time_ms=0, error_code=ec.NOT_COORDINATOR, members=[])
    if v >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    top_error, results = state.groups.leave(group_id=request.group_id, members=leaving)
    if v < 3:
        # v0-2 have one member and no per-member list: its error is the response's error.
        if top_error == ec.NONE and results:
            top_error = results[0][2]
        return LeaveGroupResponse[v](throttle_time_ms=0, error_code=top_error)
    return LeaveGroupResponse[v](
        throttle_time_ms=0,
        error_code=top_error,
        members=[
            LeaveGroupResponse.MemberResponse(member_id=mid, group_instance_id=gid, error_code=err)
            for mid, gid, err in results
        ],
    )


# ---------------------------------------------------------------------------- OffsetCommit (8)
@handles(8)
def handle_offset_commit(state: _ClusterView, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    offsets: dict[TopicPartitionKey, CommittedOffset] = {}
    order: list[tuple[str, list[int]]] = []
    for topic in request.topics:
        order.append((topic.name, [p.partition_index for p in topic.partitions]))
        for p in topic.partitions:
            offsets[(topic.name, p.partition_index)] = CommittedOffset(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch if v >= 6 else -1,
                metadata=p.committed_metadata,
            )
    if not _is_coordinator(state, ctx, request.group_id):
        errors = dict.fromkeys(offsets, ec.NOT_COORDINATOR)
    else:
        errors = state.groups.commit_offsets(
            group_id=request.group_id,
            generation_id=request.generation_id_or_member_epoch,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id if v >= 7 else None,
            api_version=v,
            offsets=offsets,
            known_topics=state.topics.keys(),
        )
    topic_cls = OffsetCommitResponse.OffsetCommitResponseTopic
    partition_cls = topic_cls.OffsetCommitResponsePartition
    return OffsetCommitResponse[v](
        throttle_time_ms=0,
        topics=[
            topic_cls(
                name=name,
                partitions=[
                    partition_cls(partition_index=p, error_code=errors[(name, p)]) for p in partitions
                ],
            )
            for name, partitions in order
        ],
    )


# ---------------------------------------------------------------------------- OffsetFetch (9)
@handles(9)
def handle_offset_fetch(state: _ClusterView, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    require_stable = bool(request.require_stable) if v >= 7 else False
    if v >= 8:
        groups = [_fetch_group(state, ctx, g.group_id, g.topics, require_stable, v) for g in request.groups]
        return OffsetFetchResponse[v](
            throttle_time_ms=0,
            groups=[
                OffsetFetchResponse.OffsetFetchResponseGroup(group_id=gid, topics=topics, error_code=err)
                for gid, topics, err in groups
            ],
        )
    _, topics, error = _fetch_group(state, ctx, request.group_id, request.topics, require_stable, v)
    if v < 2 and error:
        # v1 has no top-level error: every requested partition carries it.
        topics = _all_partitions_error(request.topics or [], error)
        error = ec.NONE
    return OffsetFetchResponse[v](throttle_time_ms=0, topics=topics, error_code=error)


def _fetch_group(
    state: _ClusterView,
    ctx: RequestContext,
    group_id: str,
    requested: list[Any] | None,
    require_stable: bool,
    version: int,
) -> tuple[str, list[Any], int]:
    if not _is_coordinator(state, ctx, group_id):
        return group_id, [], ec.NOT_COORDINATOR
    partitions = None
    if requested is not None:
        partitions = [(t.name, p) for t in requested for p in t.partition_indexes]
    rows = state.groups.fetch_offsets(group_id=group_id, partitions=partitions, require_stable=require_stable)
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), committed, error in rows:
        fields: dict[str, Any] = {
            "partition_index": partition,
            "committed_offset": committed.offset if committed is not None else -1,
            "committed_leader_epoch": committed.leader_epoch if committed is not None else -1,
            "metadata": committed.metadata if committed is not None else "",
            "error_code": error,
        }
        if version >= 8:
            item = _V8_PARTITION(**fields)
        else:
            item = OffsetFetchResponse.OffsetFetchResponseTopic.OffsetFetchResponsePartition(**fields)
        by_topic.setdefault(topic, []).append(item)
    if version >= 8:
        topic_cls: Any = OffsetFetchResponse.OffsetFetchResponseGroup.OffsetFetchResponseTopics
    else:
        topic_cls = OffsetFetchResponse.OffsetFetchResponseTopic
    return group_id, [topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()], ec.NONE


def _all_partitions_error(requested: list[Any], error: int) -> list[Any]:
    topic_cls = OffsetFetchResponse.OffsetFetchResponseTopic
    partition_cls = topic_cls.OffsetFetchResponsePartition
    return [
        topic_cls(
            name=t.name,
            partitions=[
                partition_cls(partition_index=p, committed_offset=-1, metadata="", error_code=error)
                for p in t.partition_indexes
            ],
        )
        for t in requested
    ]


# ---------------------------------------------------------------------------- DescribeGroups (15)
@handles(15)
def handle_describe_groups(state: _ClusterView, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    group_cls = DescribeGroupsResponse.DescribedGroup
    member_cls = group_cls.DescribedGroupMember
    described = []
    for group_id in request.groups:
        base: dict[str, Any] = {
            "group_id": group_id,
            "error_message": None,
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": None,  # bitfield codec: None encodes INT32_MIN ("not requested")
        }
        if not _is_coordinator(state, ctx, group_id):
            described.append(group_cls(error_code=ec.NOT_COORDINATOR, group_state="", **base))
            continue
        desc = state.groups.describe(group_id)
        if desc is None:
            if v >= 6:
                base["error_message"] = f"Group {group_id} not found."
                described.append(group_cls(error_code=ec.GROUP_ID_NOT_FOUND, group_state="Dead", **base))
            else:
                described.append(group_cls(error_code=ec.NONE, group_state="Dead", **base))
            continue
        base["protocol_type"] = desc.protocol_type
        base["protocol_data"] = desc.protocol_name
        base["members"] = [
            member_cls(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata,
                member_assignment=m.assignment,
            )
            for m in desc.members
        ]
        described.append(group_cls(error_code=ec.NONE, group_state=desc.state, **base))
    return DescribeGroupsResponse[v](throttle_time_ms=0, groups=described)


# ---------------------------------------------------------------------------- ListGroups (16)
@handles(16)
def handle_list_groups(state: _ClusterView, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    states = {s.lower() for s in (request.states_filter or [])} if v >= 4 else set()
    types = {t.lower() for t in (request.types_filter or [])} if v >= 5 else set()
    listed = []
    for group_id, protocol_type, group_state in state.groups.list_groups():
        if not _is_coordinator(state, ctx, group_id):
            continue
        if states and group_state.lower() not in states:
            continue
        if types and "classic" not in types:
            continue
        listed.append(
            ListGroupsResponse.ListedGroup(
                group_id=group_id, protocol_type=protocol_type, group_state=group_state, group_type="classic"
            )
        )
    return ListGroupsResponse[v](throttle_time_ms=0, error_code=ec.NONE, groups=listed)
