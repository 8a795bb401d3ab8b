"""ListOffsets (key 2): v1-10.

Behaviour, per partition, in Kafka's order (``Partition.getLocalLog``; every broker holds a replica):
unknown UNKNOWN_TOPIC_OR_PARTITION; v4+ a ``current_leader_epoch`` older than the partition's
FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (-1 is not checked); then, not the leader,
NOT_LEADER_OR_FOLLOWER:
- timestamp -2 (earliest) and -4 (earliest local): the log start offset, with the first cached leader
  epoch when it covers the log start, else -1 (``UnifiedLog.fetchOffsetByTimestamp``); -5 (earliest
  tiered): the log start offset with the current leader epoch;
- -1 (latest): the high watermark, or the last stable offset for read_committed, with the current
  leader epoch;
- -3 (max timestamp): the largest batch max timestamp and the last offset of that batch;
- a timestamp >= 0: the base offset of the first batch whose max timestamp is at least that, answered
  with the requested timestamp; none: offset and timestamp -1.
Answers other than earliest carry the partition's current leader epoch.

Authorization (KafkaApis.handleListOffsetRequest): Describe on each topic; a refused topic's partitions are
TOPIC_AUTHORIZATION_FAILED (timestamp and offset -1), checked before their existence.

Version notes: v2+ has the isolation level (read_committed only from v2); fields a version does not have
are dropped when the response is built.

Simplifications: timestamps are looked up per batch, not per record (the answer's timestamp is the
requested one, not the found record's); one local log, so "earliest local/tiered" are the log start;
topics are answered in the request's order (Kafka lists refused topics last).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.offsets import ListOffsetsResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..security.acl import Operation, ResourceType
from ._common import led_here
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    read_committed = v >= 2 and request.isolation_level == 1
    topics = []
    for t in request.topics:
        parts = []
        describable = ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, t.name)
        for p in t.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "error_code": ec.NONE,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            current = p.current_leader_epoch if v >= 4 else -1
            entry["error_code"], log = led_here(
                state, ctx, t.name, p.partition_index, describable, current
            )
            if log is not None:
                entry["leader_epoch"] = log.leader_epoch
                ts = p.timestamp
                if ts in (-2, -4):  # earliest, earliest local (one local log)
                    entry["offset"] = log.log_start_offset
                    entry["leader_epoch"] = log.earliest_epoch()
                elif ts == -1:  # latest
                    entry["offset"] = log.last_stable_offset if read_committed else log.high_watermark
                elif ts == -3:  # max timestamp
                    max_ts, offset = log.max_timestamp_offset()
                    entry.update(timestamp=max_ts, offset=offset)
                elif ts < 0:  # -5 earliest tiered: nothing is tiered, the log start
                    entry["offset"] = log.log_start_offset
                else:
                    found = log.offset_for_timestamp(ts)
                    if found is not None:
                        entry.update(timestamp=ts, offset=found)
            parts.append(entry)
        topics.append({"name": t.name, "partitions": parts})
    return api_messages.build(ListOffsetsResponse, v, {"throttle_time_ms": 0, "topics": topics})


API = Api(2, "ListOffsets", 1, 10, handle)
