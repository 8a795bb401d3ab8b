"""ConsumerGroupDescribe (key 69): v0-1, KIP-848's describe of consumer-protocol groups.

Behaviour, per group: NOT_COORDINATOR unless this broker coordinates it; GROUP_ID_NOT_FOUND for a group that
does not exist ("Group x not found.") or is a classic group ("Group x is not a consumer group."), with
state "" and epochs 0; otherwise its state (``Empty``, ``Assigning``, ``Reconciling``, ``Stable``), group and
target assignment epochs, the assignor in use (the one most members name, else the default), and each
member: epoch, subscription (topic names, regex - "" when none), client id and host, current assignment
(without partitions pending revocation) and target assignment, each partition set by topic id and name.

Authorization (KafkaApis.handleConsumerGroupDescribe): Describe on each group, else
GROUP_AUTHORIZATION_FAILED for it.

Version notes: v1 adds each member's ``member_type`` (0 a classic-protocol member, 1 a consumer-protocol
member; -1 in v0).

Simplifications: authorized operations are never computed (INT32_MIN, "not requested"); topics of an
assignment are listed by name.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_group_describe import (
    API_KEY,
    CLASSIC_MEMBER,
    CONSUMER_MEMBER,
    MAX_VERSION,
    MIN_VERSION,
    ConsumerGroupDescribeResponse,
)

from ..cluster_state import GROUP_KEY
from ..consumer_group import ConsumerGroup, ConsumerGroupMember
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext

_GROUP = ConsumerGroupDescribeResponse.DescribedGroup
_MEMBER = _GROUP.Member


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    groups = []
    for group_id in request.group_ids:
        if not ctx.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_error(group_id, ec.GROUP_AUTHORIZATION_FAILED, None))
        elif not is_coordinator(state, ctx, GROUP_KEY, group_id):
            groups.append(_error(group_id, ec.NOT_COORDINATOR, None))
        else:
            error, message, group = state.groups.describe_consumer_group(group_id)
            if group is None:
                groups.append(_error(group_id, error, message))
            else:
                groups.append(
                    _described(
                        group, v, state.groups.consumer.topic_name, state.groups.consumer.assignor_names()[0]
                    )
                )
    return ConsumerGroupDescribeResponse[v](throttle_time_ms=0, groups=groups)


def _error(group_id: str, code: int, message: str | None) -> Any:
    return _GROUP(
        error_code=code,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        assignor_name="",
        members=[],
    )


def _described(
    group: ConsumerGroup, version: int, name_of: Callable[[uuid.UUID], str | None], default_assignor: str
) -> Any:
    members = [_member(group, m, version, name_of) for m in group.members.values()]
    return _GROUP(
        error_code=ec.NONE,
        error_message=None,
        group_id=group.group_id,
        group_state=group.state(),
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_assignor(default_assignor),
        members=members,
    )


def _member(
    group: ConsumerGroup,
    member: ConsumerGroupMember,
    version: int,
    name_of: Callable[[uuid.UUID], str | None],
) -> Any:
    fields: dict[str, Any] = dict(
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=list(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex or "",
        assignment=_assignment(member.assigned, name_of),
        target_assignment=_assignment(group.targets.get(member.member_id, {}), name_of),
    )
    if version >= 1:
        fields["member_type"] = CLASSIC_MEMBER if member.uses_classic_protocol else CONSUMER_MEMBER
    return _MEMBER(**fields)


def _assignment(
    partitions: Mapping[uuid.UUID, frozenset[int]], name_of: Callable[[uuid.UUID], str | None]
) -> Any:
    topic_cls = _MEMBER.Assignment.TopicPartitions
    return _MEMBER.Assignment(
        topic_partitions=[
            topic_cls(topic_id=topic, topic_name=name_of(topic) or "", partitions=sorted(ps))
            for topic, ps in sorted(partitions.items(), key=lambda item: name_of(item[0]) or "")
        ]
    )


API = Api(API_KEY, "ConsumerGroupDescribe", MIN_VERSION, MAX_VERSION, handle)
