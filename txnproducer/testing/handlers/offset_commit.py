"""OffsetCommit (key 8): v2-9.

Behaviour, one error per partition:
- NOT_COORDINATOR unless this broker coordinates the group; a partition of an unknown topic
  UNKNOWN_TOPIC_OR_PARTITION (checked before the group, as Kafka's request handler does).
- ``GroupCoordinator.commit_offsets``: generation -1 on a group without members is a "simple" commit
  (admin client, manual assignment; the group is created if needed); otherwise the member must be current
  (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID), REBALANCE_IN_PROGRESS while the group
  completes a rebalance; metadata over 4096 bytes is OFFSET_METADATA_TOO_LARGE. Committed offsets are
  visible at once.

Authorization (KafkaApis.handleOffsetCommitRequest), before the coordinator checks: Read on the group
(GROUP_AUTHORIZATION_FAILED for every partition), then Read on each topic (TOPIC_AUTHORIZATION_FAILED for a
refused topic's partitions; the others are committed as usual).

Version notes:
- v6+: committed leader epoch (-1 before).
- v7+: group instance id (static members).
- v9+: a commit with a generation to a group that does not exist is GROUP_ID_NOT_FOUND (ILLEGAL_GENERATION
  before).
- Kafka 4.1.0 stops at v9; v10 names topics by id and is not advertised.

Simplifications: no retention of offsets (they never expire); no ``__consumer_offsets`` log is written.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import OffsetCommitResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY
from ..group_offsets import CommittedOffset, TopicPartitionKey
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
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
    errors: dict[TopicPartitionKey, int]
    if not ctx.allows(Operation.READ, ResourceType.GROUP, request.group_id):
        errors = dict.fromkeys(offsets, ec.GROUP_AUTHORIZATION_FAILED)
    else:
        readable = {t: ctx.allows(Operation.READ, ResourceType.TOPIC, t) for t, _ in order}
        refused = {tp: ec.TOPIC_AUTHORIZATION_FAILED for tp in offsets if not readable[tp[0]]}
        allowed = {tp: o for tp, o in offsets.items() if tp not in refused}
        if not is_coordinator(state, ctx, GROUP_KEY, request.group_id):
            errors = dict.fromkeys(allowed, ec.NOT_COORDINATOR)
        elif allowed or not offsets:  # (an empty request still reaches the coordinator, as it always did)
            errors = state.groups.commit_offsets(
                group_id=request.group_id,
                generation_id=request.generation_id_or_member_epoch,
                member_id=request.member_id,
                group_instance_id=request.group_instance_id if v >= 7 else None,
                api_version=v,
                offsets=allowed,
                known_topics=state.topics.keys(),
            )
        else:
            errors = {}
        errors.update(refused)
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


API = Api(8, "OffsetCommit", 2, 9, handle)
