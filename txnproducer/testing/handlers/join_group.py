"""JoinGroup (key 11): v0-9.

Behaviour:
- NOT_COORDINATOR unless this broker coordinates the group.
- ``GroupCoordinator.join`` runs the classic rebalance (Kafka's GroupMetadataManager for classic groups):
  the request blocks - parked on ``state.cond``, lock released - until the join phase completes; the
  leader's answer lists every member's metadata for the chosen protocol, followers get none. Errors:
  INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT, INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID,
  FENCED_INSTANCE_ID, and REBALANCE_IN_PROGRESS when a parked join gives up (its rebalance timeout plus
  a margin).

Authorization (KafkaApis.handleJoinGroupRequest): Read on the group, before anything else;
GROUP_AUTHORIZATION_FAILED with an empty member id otherwise.

Version notes:
- v0: no rebalance timeout (the session timeout is used).
- v4+ (KIP-394): a new dynamic member first gets MEMBER_ID_REQUIRED with its member id and rejoins with it.
- v5+ (KIP-345): static membership by group instance id; a restarted static member takes its old place.
- v0-6: the protocol name is "" rather than null when there is none (nullable from v7).
- v9 (KIP-814): ``skip_assignment`` for a static leader that rejoined unchanged.

Simplifications: none here; the group coordinator's own are stated in ``group_membership.py``.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import JoinGroupResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if not ctx.allows(Operation.READ, ResourceType.GROUP, request.group_id):
        return _join_response(v, error_code=ec.GROUP_AUTHORIZATION_FAILED, member_id="")
    if not is_coordinator(state, ctx, GROUP_KEY, request.group_id):
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


API = Api(11, "JoinGroup", 0, 9, handle)
