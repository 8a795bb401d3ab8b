"""SyncGroup (key 14): v0-5.

Behaviour:
- NOT_COORDINATOR unless this broker coordinates the group.
- ``GroupCoordinator.sync``: the leader's request carries every member's assignment; a follower's request
  blocks until it arrives (or the round fails: REBALANCE_IN_PROGRESS). Errors: UNKNOWN_MEMBER_ID,
  ILLEGAL_GENERATION, FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, REBALANCE_IN_PROGRESS.

Authorization (KafkaApis.handleSyncGroupRequest): Read on the group, before anything else
(GROUP_AUTHORIZATION_FAILED).

Version notes:
- v3+: group instance id (static members).
- v5+: protocol type and name, checked against the group's (INCONSISTENT_GROUP_PROTOCOL) and returned.

Simplifications: none here; the group coordinator's own are stated in ``group_membership.py``.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import SyncGroupResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if not ctx.allows(Operation.READ, ResourceType.GROUP, request.group_id):
        return SyncGroupResponse[v](throttle_time_ms=0, error_code=ec.GROUP_AUTHORIZATION_FAILED,
                                    assignment=b"")
    if not is_coordinator(state, ctx, GROUP_KEY, request.group_id):
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


API = Api(14, "SyncGroup", 0, 5, handle)
