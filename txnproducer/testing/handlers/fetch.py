"""Fetch (key 1): v4-18.

Behaviour:
- Per partition, in Kafka's order (``Partition.localLogWithEpochOrThrow``): unknown partition
  UNKNOWN_TOPIC_OR_PARTITION (v13+: an unknown topic id is UNKNOWN_TOPIC_ID); a ``current_leader_epoch``
  (v9+, -1 is not checked) older than the partition's FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH;
  not the leader NOT_LEADER_OR_FOLLOWER; a fetch offset below the log start or above the high watermark
  OFFSET_OUT_OF_RANGE. Otherwise whole stored batches from the one holding the fetch offset, exactly
  the bytes the producer sent (base offset and leader epoch rewritten).
- read_committed (isolation level 1) reads up to the last stable offset and lists the aborted
  transactions overlapping what it returns (``[]`` when it returns nothing); read_uncommitted reads up to
  the high watermark and answers ``aborted_transactions`` null - the shapes the 4.1.0 recordings show.
- Size: at most ``partition_max_bytes`` per partition and ``max_bytes`` in all, except that the first
  batch of the response is returned whatever its size (KIP-74).
- Long poll: with less than ``min_bytes`` of data the handler waits on ``state.cond`` (woken by appends
  and markers) until there is enough, ``max_wait_ms`` has passed or the cluster closes; any partition
  error answers at once.
- Fetch sessions (v7+, KIP-227, ``fetch_sessions.py``): a full fetch with epoch 0 opens a session whose
  id the answer carries; an incremental fetch names only changed partitions (and ``forgotten_topics_data``)
  and is answered with only the partitions that have records, an error, or a moved high watermark or
  log start offset (Kafka's ``CachedPartition.maybeUpdateResponseData``; a moved last stable offset alone
  is not answered: the client learns it with the next answer that is). Session errors
  (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR) are the
  top-level ``error_code`` with no partitions.

Authorization (KafkaApis.handleFetchRequest): Read on each topic, checked after the topic id is resolved and
before the partition's existence: TOPIC_AUTHORIZATION_FAILED for each partition of a refused topic (an error,
so the fetch answers at once).

Version notes:
- v12+: NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH carry ``current_leader`` (KIP-951); v16+ the
  answer lists those leaders in ``node_endpoints``.
- v13+: topics are named by topic id.

Simplifications: no follower fetching (``replica_id``, rack and preferred read replica -1); the
``last_fetched_epoch`` divergence check (KIP-595, followers) is not made - consumers send -1, as the
Java client does; no retention, so the log start offset moves only with ``delete_records``; batches are
never down-converted or split.
"""

from __future__ import annotations

import time
from typing import Any

from kafka.protocol.consumer.fetch import FetchResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..fetch_sessions import SessionPartition
from ..security.acl import Operation, ResourceType
from ._common import broker_list, leader_hint
from .api import Api, RequestContext

_HINTED = (ec.NOT_LEADER_OR_FOLLOWER, ec.FENCED_LEADER_EPOCH)


def _requested(
    state: ClusterState, request: Any, v: int
) -> tuple[list[SessionPartition], list[tuple[Any, int]]]:
    """The request's partitions and forgotten partitions, topics named (by name where known)."""

    def name_of(t: Any) -> tuple[str | None, Any]:
        if v >= 13:
            found = state.topic_by_id(t.topic_id)
            return (found.name if found is not None else None), t.topic_id
        topic = state.topics.get(t.topic)
        return t.topic, (topic.topic_id if topic is not None else None)

    parts = []
    for t in request.topics:
        name, topic_id = name_of(t)
        for p in t.partitions:
            epoch = p.current_leader_epoch if v >= 9 else -1
            parts.append(
                SessionPartition(name, topic_id, p.partition, p.fetch_offset, p.partition_max_bytes, epoch)
            )
    forgotten: list[tuple[Any, int]] = []
    for t in (request.forgotten_topics_data or []) if v >= 7 else []:
        name, topic_id = name_of(t)
        forgotten.extend((name if name is not None else topic_id, index) for index in t.partitions)
    return parts, forgotten


def _partition(
    state: ClusterState,
    ctx: RequestContext,
    p: SessionPartition,
    read_committed: bool,
    budget: int,
    first: bool,
    readable: dict[str, bool],
) -> dict[str, Any]:
    """One partition's answer; ``budget`` bytes may still be returned (``first``: KIP-74 applies)."""
    v = ctx.api_version
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
    name = p.topic
    if name is not None and not readable.setdefault(
        name, ctx.allows(Operation.READ, ResourceType.TOPIC, name)
    ):
        entry["error_code"] = ec.TOPIC_AUTHORIZATION_FAILED
        return entry
    log = state.partition_log(name, p.partition) if name is not None else None
    if log is None:
        entry["error_code"] = ec.UNKNOWN_TOPIC_ID if v >= 13 else ec.UNKNOWN_TOPIC_OR_PARTITION
        return entry
    if 0 <= p.current_leader_epoch < log.leader_epoch:
        entry["error_code"] = ec.FENCED_LEADER_EPOCH
    elif p.current_leader_epoch > log.leader_epoch:
        entry["error_code"] = ec.UNKNOWN_LEADER_EPOCH
    elif log.leader_id != ctx.broker_id:
        entry["error_code"] = ec.NOT_LEADER_OR_FOLLOWER
    if entry["error_code"] != ec.NONE:
        if v >= 12 and entry["error_code"] in _HINTED and name is not None:
            entry["current_leader"] = leader_hint(state, name, p.partition)
        return entry
    hw, lso = log.high_watermark, log.last_stable_offset
    entry.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=log.log_start_offset)
    if p.fetch_offset < log.log_start_offset or p.fetch_offset > hw:
        entry["error_code"] = ec.OFFSET_OUT_OF_RANGE
        return entry
    limit = lso if read_committed else hw
    data, end = log.read(p.fetch_offset, min(p.max_bytes, max(budget, 0)), limit, min_one=first)
    entry["records"] = data
    if read_committed:
        entry["aborted_transactions"] = (
            [
                {"producer_id": a.producer_id, "first_offset": a.first_offset}
                for a in log.aborted_transactions(p.fetch_offset, end)
            ]
            if data
            else []
        )
    return entry


def _worth_answering(p: SessionPartition, entry: dict[str, Any]) -> bool:
    """Whether an incremental fetch answers this partition (Kafka's ``IncrementalFetchContext``)."""
    return (
        bool(entry["records"])
        or entry["error_code"] != ec.NONE
        or p.reported != (entry["high_watermark"], entry["log_start_offset"])
    )


def _fetch_once(
    state: ClusterState, ctx: RequestContext, request: Any, partitions: list[SessionPartition], full: bool
) -> tuple[list[tuple[SessionPartition, dict[str, Any]]], int]:
    read_committed = request.isolation_level == 1
    remaining = request.max_bytes if ctx.api_version >= 3 else 2**31 - 1
    total = 0
    readable: dict[str, bool] = {}
    out = []
    for p in partitions:
        entry = _partition(state, ctx, p, read_committed, remaining, total == 0, readable)
        size = len(entry["records"] or b"")
        remaining -= size
        total += size
        if full or _worth_answering(p, entry):
            out.append((p, entry))
    return out, total


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    """Answer at once if there is data (>= min_bytes) or no wait was asked; else wait on ``state.cond``."""
    v = ctx.api_version
    requested, forgotten = _requested(state, request, v)
    if v >= 7:
        step = state.fetch_sessions.begin(
            ctx.broker_id, request.session_id, request.session_epoch, requested, forgotten, by_id=v >= 13
        )
        if step.error_code != ec.NONE:
            return api_messages.build(
                FetchResponse,
                v,
                {"throttle_time_ms": 0, "error_code": step.error_code, "session_id": 0, "responses": []},
            )
        partitions, full, session_id = step.partitions, step.full, step.session_id
    else:
        partitions, full, session_id = requested, True, 0
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000.0
    while True:
        answered, total = _fetch_once(state, ctx, request, partitions, full)
        errors = any(entry["error_code"] != ec.NONE for _, entry in answered)
        remaining = deadline - time.monotonic()
        if total >= request.min_bytes or errors or remaining <= 0 or state.closed:
            break
        state.cond.wait(remaining)
    responses: dict[Any, dict[str, Any]] = {}
    for p, entry in answered:
        p.reported = (entry["high_watermark"], entry["log_start_offset"])
        key = p.topic_id if v >= 13 else p.topic
        topic = responses.setdefault(
            key,
            {
                "topic": p.topic if v < 13 else None,
                "topic_id": p.topic_id if v >= 13 else None,
                "partitions": [],
            },
        )
        topic["partitions"].append(entry)
    values: dict[str, Any] = {
        "throttle_time_ms": 0,
        "error_code": ec.NONE,
        "session_id": session_id,
        "responses": list(responses.values()),
    }
    if v >= 16 and any(entry["error_code"] in _HINTED for _, entry in answered):
        values["node_endpoints"] = broker_list(state)
    return api_messages.build(FetchResponse, v, values)


API = Api(1, "Fetch", 4, 18, handle)
