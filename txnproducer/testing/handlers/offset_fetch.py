"""OffsetFetch (key 9): v1-9.

Behaviour: NOT_COORDINATOR unless this broker coordinates the group; otherwise the committed offset,
leader epoch and metadata of each requested partition (-1 and "" for a partition without one), or of
every committed partition when the topic list is null. Staged transactional offsets (TxnOffsetCommit
before its marker) are not visible.

Authorization (KafkaApis.handleOffsetFetchRequest), per group and before the coordinator checks: Describe on
the group (GROUP_AUTHORIZATION_FAILED); then Describe on each topic - a requested topic that is refused is
answered after the others with TOPIC_AUTHORIZATION_FAILED and offset -1 for each partition; a fetch of every
partition leaves refused topics out.

Version notes:
- v1: no top-level error - a group error is set on every requested partition.
- v7+: ``require_stable`` - a partition with a pending transactional offset answers
  UNSTABLE_OFFSET_COMMIT (KIP-447) instead of the older committed offset.
- v8+: several groups per request, each with its own error.
- v9+: the member id and epoch of a KIP-848 consumer-protocol group's member are checked
  (``GroupCoordinator.validate_offset_fetch``): STALE_MEMBER_EPOCH or UNKNOWN_MEMBER_ID as the group's error,
  with no topics; null and -1 (an admin client) pass; classic groups ignore them, as Kafka 4.1 does.
- Kafka 4.1.0 stops at v9 (v10 names topics by id and is not advertised).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import OffsetFetchResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY
from ..security.acl import Operation, ResourceType
from ._common import GroupHost, is_coordinator
from .api import Api, RequestContext

_V8_TOPIC = OffsetFetchResponse.OffsetFetchResponseGroup.OffsetFetchResponseTopics
_V8_PARTITION = _V8_TOPIC.OffsetFetchResponsePartitions


def handle(state: GroupHost, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    require_stable = bool(request.require_stable) if v >= 7 else False
    if v >= 8:
        groups = [_fetch_group(state, ctx, g.group_id, g.topics, require_stable, v,
                               (g.member_id, g.member_epoch) if v >= 9 else (None, -1))
                  for g in request.groups]
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
    state: GroupHost,
    ctx: RequestContext,
    group_id: str,
    requested: list[Any] | None,
    require_stable: bool,
    version: int,
    member: tuple[str | None, int] = (None, -1),
) -> tuple[str, list[Any], int]:
    if not ctx.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id):
        return group_id, [], ec.GROUP_AUTHORIZATION_FAILED
    if not is_coordinator(state, ctx, GROUP_KEY, group_id):
        return group_id, [], ec.NOT_COORDINATOR
    member_error = state.groups.validate_offset_fetch(group_id, *member)
    if member_error:
        return group_id, [], member_error

    def describable(topic: str) -> bool:
        return ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, topic)

    partitions = None
    refused: list[tuple[str, int]] = []
    if requested is not None:
        partitions = [(t.name, p) for t in requested for p in t.partition_indexes if describable(t.name)]
        refused = [(t.name, p) for t in requested for p in t.partition_indexes if not describable(t.name)]
    rows = state.groups.fetch_offsets(group_id=group_id, partitions=partitions, require_stable=require_stable)
    if requested is None:
        rows = [row for row in rows if describable(row[0][0])]
    rows += [(tp, None, ec.TOPIC_AUTHORIZATION_FAILED) for tp in refused]
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


API = Api(9, "OffsetFetch", 1, 9, handle)
