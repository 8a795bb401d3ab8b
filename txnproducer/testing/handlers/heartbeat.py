"""Heartbeat (key 12): v0-4.

Behaviour: NOT_COORDINATOR unless this broker coordinates the group; otherwise
``GroupCoordinator.heartbeat`` extends the member's session and answers REBALANCE_IN_PROGRESS while the
group prepares a rebalance (how members learn they must rejoin), UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION or
FENCED_INSTANCE_ID when the member is not current.

Authorization (KafkaApis.handleHeartbeatRequest): Read on the group, before anything else
(GROUP_AUTHORIZATION_FAILED).

Version notes: v3+ carries the group instance id (static members).

Simplifications: none here; the group coordinator's own are stated in ``group_membership.py``.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import HeartbeatResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if not ctx.allows(Operation.READ, ResourceType.GROUP, request.group_id):
        return HeartbeatResponse[v](throttle_time_ms=0, error_code=ec.GROUP_AUTHORIZATION_FAILED)
    if not is_coordinator(state, ctx, GROUP_KEY, request.group_id):
        return HeartbeatResponse[v](throttle_time_ms=0, error_code=ec.NOT_COORDINATOR)
    error = state.groups.heartbeat(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if v >= 3 else None,
    )
    return HeartbeatResponse[v](throttle_time_ms=0, error_code=error)


API = Api(12, "Heartbeat", 0, 4, handle)
