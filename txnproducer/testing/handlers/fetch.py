"""Fetch (key 1): v4-18.

Behaviour:
- Per partition: unknown partition UNKNOWN_TOPIC_OR_PARTITION (v13+: an unknown topic id is
  UNKNOWN_TOPIC_ID); not the leader NOT_LEADER_OR_FOLLOWER; a fetch offset below the log start or above
  the high watermark OFFSET_OUT_OF_RANGE. Otherwise whole stored batches from the one holding the fetch
  offset, exactly the bytes the producer sent (base offset and leader epoch rewritten).
- read_committed (isolation level 1) reads up to the last stable offset and lists the aborted
  transactions overlapping what it returns (``[]`` when it returns nothing); read_uncommitted reads up to
  the high watermark and answers ``aborted_transactions`` null - the shapes the 4.1.0 recordings show.
- Size: at most ``partition_max_bytes`` per partition and ``max_bytes`` in all, except that the first
  batch of the response is returned whatever its size (KIP-74).
- Long poll: with less than ``min_bytes`` of data the handler waits on ``state.cond`` (woken by appends
  and markers) until there is enough, ``max_wait_ms`` has passed or the cluster closes; any partition
  error answers at once.

Authorization (KafkaApis.handleFetchRequest): Read on each topic, checked after the topic id is resolved and
before the partition's existence: TOPIC_AUTHORIZATION_FAILED for each partition of a refused topic (an error,
so the fetch answers at once).

Version notes:
- v12+: NOT_LEADER_OR_FOLLOWER carries ``current_leader``.
- v13+: topics are named by topic id.

Simplifications: no fetch sessions (``session_id`` 0, every fetch is a full fetch, the session fields of
the request are ignored); no follower fetching (``replica_id``, rack and preferred read replica -1);
no retention, so the log start offset is always 0; batches are never down-converted or split.
"""

from __future__ import annotations

import time
from typing import Any

from kafka.protocol.consumer.fetch import FetchResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..security.acl import Operation, ResourceType
from ._common import leader_hint
from .api import Api, RequestContext


def _fetch_once(state: ClusterState, ctx: RequestContext, request: Any) -> tuple[list[dict[str, Any]], int]:
    v = ctx.api_version
    read_committed = request.isolation_level == 1
    remaining = request.max_bytes if v >= 3 else 2**31 - 1
    total = 0
    out = []
    readable: dict[str, bool] = {}
    for t in request.topics:
        if v >= 13:
            found = state.topic_by_id(t.topic_id)
            name = found.name if found is not None else None
        else:
            name = t.topic
        parts = []
        for p in t.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition,
                "error_code": ec.NONE,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            if name is not None and not readable.setdefault(
                    name, ctx.allows(Operation.READ, ResourceType.TOPIC, name)):
                entry["error_code"] = ec.TOPIC_AUTHORIZATION_FAILED
                parts.append(entry)
                continue
            log = state.partition_log(name, p.partition) if name is not None else None
            if log is None:
                entry["error_code"] = ec.UNKNOWN_TOPIC_ID if v >= 13 else ec.UNKNOWN_TOPIC_OR_PARTITION
                parts.append(entry)
                continue
            if log.leader_id != ctx.broker_id:
                entry["error_code"] = ec.NOT_LEADER_OR_FOLLOWER
                if v >= 12 and name is not None:
                    entry["current_leader"] = leader_hint(state, name, p.partition)
                parts.append(entry)
                continue
            hw, lso = log.high_watermark, log.last_stable_offset
            entry.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=log.log_start_offset)
            if p.fetch_offset < log.log_start_offset or p.fetch_offset > hw:
                entry["error_code"] = ec.OFFSET_OUT_OF_RANGE
                parts.append(entry)
                continue
            limit = lso if read_committed else hw
            data, end = log.read(
                p.fetch_offset, min(p.partition_max_bytes, max(remaining, 0)), limit, min_one=(total == 0)
            )
            entry["records"] = data
            remaining -= len(data)
            total += len(data)
            if read_committed:
                entry["aborted_transactions"] = (
                    [
                        {"producer_id": a.producer_id, "first_offset": a.first_offset}
                        for a in log.aborted_transactions(p.fetch_offset, end)
                    ]
                    if data
                    else []
                )
            parts.append(entry)
        out.append(
            {
                "topic": t.topic if v < 13 else None,
                "topic_id": t.topic_id if v >= 13 else None,
                "partitions": parts,
            }
        )
    return out, total


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    """Answer at once if there is data (>= min_bytes) or no wait was asked; else wait on ``state.cond``."""
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000.0
    min_bytes = request.min_bytes
    while True:
        responses, total = _fetch_once(state, ctx, request)
        errors = any(p["error_code"] != ec.NONE for t in responses for p in t["partitions"])
        remaining = deadline - time.monotonic()
        if total >= min_bytes or errors or remaining <= 0 or state.closed:
            break
        state.cond.wait(remaining)
    return api_messages.build(
        FetchResponse,
        ctx.api_version,
        {
            "throttle_time_ms": 0,
            "error_code": ec.NONE,
            "session_id": 0,
            "responses": responses,
        },
    )


API = Api(1, "Fetch", 4, 18, handle)
