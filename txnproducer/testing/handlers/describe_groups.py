"""DescribeGroups (key 15): v0-6.

Behaviour, per group: NOT_COORDINATOR unless this broker coordinates it; otherwise its state, protocol
type and name and its members (``GroupCoordinator.describe``). Member metadata and the protocol name are
shown only once the group is Stable, as Kafka does.

Authorization (KafkaApis.handleDescribeGroupsRequest): Describe on each group, else GROUP_AUTHORIZATION_FAILED
with an empty state and no members.

Version notes:
- v0-5: a group that does not exist - or is a KIP-848 consumer-protocol group - is answered NONE with state
  "Dead" and no members.
- v6+: GROUP_ID_NOT_FOUND with state "Dead": "Group x not found.", or for a consumer-protocol group "Group x
  is not a classic group." (ConsumerGroupDescribe describes those), as Kafka 4.1 answers.

Simplifications: authorized operations are never computed (the field is left "not requested"); groups are
answered in the request's order (Kafka lists the refused ones first).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import DescribeGroupsResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
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
        if not ctx.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            described.append(group_cls(error_code=ec.GROUP_AUTHORIZATION_FAILED, group_state="", **base))
            continue
        if not is_coordinator(state, ctx, GROUP_KEY, group_id):
            described.append(group_cls(error_code=ec.NOT_COORDINATOR, group_state="", **base))
            continue
        desc = state.groups.describe(group_id)
        if desc is None and v >= 6 and state.groups.consumer.is_consumer_group(group_id):
            base["error_message"] = f"Group {group_id} is not a classic group."
            described.append(group_cls(error_code=ec.GROUP_ID_NOT_FOUND, group_state="Dead", **base))
            continue
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


API = Api(15, "DescribeGroups", 0, 6, handle)
