"""OffsetForLeaderEpoch (key 23): v2-4.

Behaviour, per partition: the end offset of the requested leader epoch from the partition's epoch
cache (``PartitionLog.end_offset_for_epoch``, Kafka's ``LeaderEpochFileCache.endOffsetFor``): the
current epoch ends at the log end offset; an earlier epoch where the next one starts (answered with the
largest epoch not above the requested one); an unknown epoch -1/-1. Checked in Kafka's order
(``Partition.getLocalLog``; every broker holds a replica): unknown partition
UNKNOWN_TOPIC_OR_PARTITION; a ``current_leader_epoch`` older than the partition's FENCED_LEADER_EPOCH,
newer UNKNOWN_LEADER_EPOCH (-1 is not checked); then, not the leader, NOT_LEADER_OR_FOLLOWER.

Why the mock needs it: a consumer validates its fetch position with it after a partition's leader epoch
changed (KIP-320); kafka-python 3.0.12 stops fetching the partition for good when the broker does not
answer it (found by the chaos tier: a broker restart stalled a consume-transform-produce group).

Authorization (KafkaApis.handleOffsetForLeaderEpochRequest): Describe on each topic (consumers;
replicas need ClusterAction, not modelled) - a refused topic's partitions are TOPIC_AUTHORIZATION_FAILED.

Simplifications: a single replica, so the requested epoch is answered from the leader's log only;
``replica_id`` is ignored.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.offsets import OffsetForLeaderEpochResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..security.acl import Operation, ResourceType
from ._common import led_here
from .api import Api, RequestContext


def _partition(state: ClusterState, ctx: RequestContext, topic: str, p: Any,
               describable: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"partition": p.partition, "error_code": ec.NONE, "leader_epoch": -1,
                             "end_offset": -1}
    entry["error_code"], log = led_here(state, ctx, topic, p.partition, describable,
                                                 p.current_leader_epoch)
    if log is not None:
        entry["leader_epoch"], entry["end_offset"] = log.end_offset_for_epoch(p.leader_epoch)
    return entry


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    topics = []
    for t in request.topics:
        describable = ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, t.topic)
        topics.append({"topic": t.topic,
                       "partitions": [_partition(state, ctx, t.topic, p, describable) for p in t.partitions]})
    return api_messages.build(OffsetForLeaderEpochResponse, ctx.api_version,
                              {"throttle_time_ms": 0, "topics": topics})


API = Api(23, "OffsetForLeaderEpoch", 2, 4, handle)
