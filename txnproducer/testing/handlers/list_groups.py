"""ListGroups (key 16): v0-5.

Behaviour: the live groups this broker coordinates, with protocol type and state: classic groups (type
"classic") and KIP-848 consumer-protocol groups (type "consumer", protocol type "consumer", their states
``Empty``/``Assigning``/``Reconciling``/``Stable``).

Authorization (KafkaApis.handleListGroupsRequest): with Describe on the cluster every group is listed;
otherwise only the groups the principal may describe.

Version notes:
- v4+: state filter (case-insensitive).
- v5+: type filter ("classic", "consumer"; case-insensitive).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.groups import ListGroupsResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    states = {s.lower() for s in (request.states_filter or [])} if v >= 4 else set()
    types = {t.lower() for t in (request.types_filter or [])} if v >= 5 else set()
    listed = []
    every_group = ctx.allows(Operation.DESCRIBE, ResourceType.CLUSTER)
    typed = [(*g, "classic") for g in state.groups.list_groups()]
    typed += [(*g, "consumer") for g in state.groups.list_consumer_groups()]
    for group_id, protocol_type, group_state, group_type in typed:
        if not is_coordinator(state, ctx, GROUP_KEY, group_id):
            continue
        if not (every_group or ctx.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id)):
            continue
        if states and group_state.lower() not in states:
            continue
        if types and group_type not in types:
            continue
        listed.append(
            ListGroupsResponse.ListedGroup(
                group_id=group_id, protocol_type=protocol_type, group_state=group_state, group_type=group_type
            )
        )
    return ListGroupsResponse[v](throttle_time_ms=0, error_code=ec.NONE, groups=listed)


API = Api(16, "ListGroups", 0, 5, handle)
