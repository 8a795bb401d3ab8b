"""ConsumerGroupHeartbeat (key 68): v0-1, the KIP-848 consumer group protocol.

Behaviour:
- The request is validated first, on any broker (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR,
  INVALID_REGULAR_EXPRESSION, with Kafka 4.1's messages: ``consumer_group_requests.validate``, as Kafka's
  ``GroupCoordinatorService`` does before it routes); then NOT_COORDINATOR unless this broker coordinates
  the group.
- ``ConsumerGroupCoordinator.heartbeat`` (``consumer_membership.py``) joins (epoch 0), leaves
  (-1; -2 for a static member leaving for a while) or heartbeats: the answer carries the member id and epoch,
  the heartbeat interval and, when it changed or the request was a full one, the partitions the member may
  use now (by topic id). Errors as Kafka answers them: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
  FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND (epoch above 0 for a
  group that does not exist, or a classic group that may not become a consumer group), each with a message;
  an error answer has no member id, epoch 0 and interval 0.
- A heartbeat joining a non-empty classic group turns it into a consumer group (online upgrade,
  ``consumer_group_coordinator.py``).

Authorization (KafkaApis.handleConsumerGroupHeartbeatRequest): Read on the group, before anything else
(GROUP_AUTHORIZATION_FAILED).

Version notes:
- v1 (Kafka 4.0, KIP-1082): ``subscribed_topic_regex``; the member id is chosen by the client and an empty
  one is INVALID_REQUEST ("MemberId can't be empty."). v0: a join with an empty member id gets one made up.

Simplifications: subscribed topics are not authorized (Kafka 4.1 checks Describe on them); error answers of
this handler (authorization, NOT_COORDINATOR) carry no message.
"""

from __future__ import annotations

from typing import Any

from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_group_heartbeat import (
    API_KEY,
    MAX_VERSION,
    MIN_VERSION,
    ConsumerGroupHeartbeatResponse,
)

from ..cluster_state import GROUP_KEY
from ..consumer_group_requests import GroupError, HeartbeatAnswer, HeartbeatRequest, validate
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext

_ASSIGNMENT = ConsumerGroupHeartbeatResponse.Assignment
_TOPIC = ConsumerGroupHeartbeatResponse.Assignment.TopicPartitions


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if not ctx.allows(Operation.READ, ResourceType.GROUP, request.group_id):
        return _response(v, HeartbeatAnswer(ec.GROUP_AUTHORIZATION_FAILED))
    owned = request.topic_partitions
    names = request.subscribed_topic_names
    heartbeat = HeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=request.subscribed_topic_regex if v >= 1 else None,
        server_assignor=request.server_assignor,
        owned=None if owned is None else tuple((t.topic_id, tuple(t.partitions)) for t in owned),
        client_id=ctx.client_id or "",
        api_version=v,
    )
    try:
        validate(heartbeat, state.groups.consumer.assignor_names())
    except GroupError as error:
        return _response(v, HeartbeatAnswer(error.code, error.message))
    if not is_coordinator(state, ctx, GROUP_KEY, request.group_id):
        return _response(v, HeartbeatAnswer(ec.NOT_COORDINATOR))
    return _response(v, state.groups.consumer.heartbeat(heartbeat))


def _response(version: int, answer: HeartbeatAnswer) -> Any:
    assignment = None
    if answer.assignment is not None:
        assignment = _ASSIGNMENT(
            topic_partitions=[
                _TOPIC(topic_id=topic, partitions=partitions)
                for topic, partitions in answer.assignment.items()
            ]
        )
    return ConsumerGroupHeartbeatResponse[version](
        throttle_time_ms=0,
        error_code=answer.error_code,
        error_message=answer.error_message,
        member_id=answer.member_id,
        member_epoch=answer.member_epoch,
        heartbeat_interval_ms=answer.heartbeat_interval_ms,
        assignment=assignment,
    )


API = Api(API_KEY, "ConsumerGroupHeartbeat", MIN_VERSION, MAX_VERSION, handle)
