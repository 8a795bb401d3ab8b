"""LeaveGroup (key 13): v0-5.

Behaviour: NOT_COORDINATOR unless this broker coordinates the group; otherwise ``GroupCoordinator.leave``
removes the members and rebalances the rest. An unknown group is UNKNOWN_MEMBER_ID.

Authorization (KafkaApis.handleLeaveGroupRequest): Read on the group, before anything else
(GROUP_AUTHORIZATION_FAILED, no members).

Version notes:
- v0-2: one member (``member_id``); its own error is the response's error.
- v3+ (KIP-345): a batch of members with a result each; an empty member id with a group instance id
  removes that static member (administrative removal).

Simplifications: none here; the group coordinator's own are stated in ``group_membership.py``.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import LeaveGroupResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if not ctx.allows(Operation.READ, ResourceType.GROUP, request.group_id):
        return LeaveGroupResponse[v](throttle_time_ms=0, error_code=ec.GROUP_AUTHORIZATION_FAILED, members=[])
    if not is_coordinator(state, ctx, GROUP_KEY, request.group_id):
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


API = Api(13, "LeaveGroup", 0, 5, handle)
