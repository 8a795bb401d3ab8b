"""The broker's data-path and metadata APIs: what a partition leader answers.

ApiVersions, Metadata, FindCoordinator, CreateTopics, Produce, Fetch, ListOffsets, DescribeProducers
and a minimal DescribeConfigs. Every handler runs with ``state.lock`` held (see ``_dispatch``).
Answers follow Apache Kafka 4.1 as recorded in ``shared/conformance/kafka-4.1.0``: error codes,
``log_start_offset`` -1 on verification failures, duplicate answers carrying the original offset,
read_committed fetches stopping at the last stable offset with ``aborted_transactions`` [] vs null.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from kafka.protocol.admin.configs import DescribeConfigsResponse
from kafka.protocol.admin.topics import CreateTopicsResponse
from kafka.protocol.admin.transactions import DescribeProducersResponse
from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsResponse
from kafka.protocol.metadata import ApiVersionsResponse, FindCoordinatorResponse, MetadataResponse
from kafka.protocol.producer import ProduceResponse

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol import error_codes as ec

from . import api_messages
from ._dispatch import RequestContext, handles, registered_api_keys
from .cluster_state import ClusterState
from .partition_log import InvalidRecordsError, parse_batches

_log = get_logger("txnproducer.testing.broker")


# Apache Kafka 4.1.0's ApiVersions answer (api_versions.json), the versions this mock may advertise;
# each is further intersected with kafka-python's schema range and the registered handlers.
KAFKA_41_VERSIONS: dict[int, tuple[int, int]] = {
    0: (0, 13),
    1: (4, 18),
    2: (1, 10),
    3: (0, 13),
    8: (2, 9),
    9: (1, 9),
    10: (0, 6),
    11: (0, 9),
    12: (0, 4),
    13: (0, 5),
    14: (0, 5),
    15: (0, 6),
    16: (0, 5),
    17: (0, 1),
    18: (0, 4),
    19: (2, 7),
    20: (1, 6),
    21: (0, 2),
    22: (0, 5),
    23: (2, 4),
    24: (0, 5),
    25: (0, 4),
    26: (0, 5),
    27: (1, 1),
    28: (0, 5),
    29: (1, 3),
    30: (1, 3),
    31: (1, 3),
    32: (1, 4),
    33: (0, 2),
    34: (1, 2),
    35: (1, 4),
    36: (0, 2),
    37: (0, 3),
    42: (0, 2),
    43: (0, 2),
    44: (0, 1),
    45: (0, 1),
    46: (0, 0),
    47: (0, 0),
    48: (0, 1),
    49: (0, 1),
    50: (0, 0),
    51: (0, 0),
    55: (0, 2),
    57: (0, 2),
    60: (0, 2),
    61: (0, 0),
    65: (0, 0),
    66: (0, 2),
    74: (0, 1),
    75: (0, 0),
}
# Versions Kafka only advertises once transaction.version >= 2 is finalized (KIP-890).
TV1_CAPS: dict[int, int] = {0: 11, 24: 4, 25: 4, 26: 4, 28: 4}

METADATA_VERSION_LEVEL = 27


# InitProducerId v6 (KIP-939) is advertised only when 2PC is enabled (Kafka 4.1 with
# transaction.two.phase.commit.enable off caps it at v5 - see the conformance api_versions.json).
TWO_PC_VERSIONS: dict[int, int] = {22: 6}


def advertised_versions(transaction_version: int, enable_2pc: bool = False) -> list[tuple[int, int, int]]:
    """(api_key, min, max) for every API this mock answers, as ApiVersions reports them."""
    out = []
    registered = registered_api_keys()
    for key, (lo, hi) in sorted(KAFKA_41_VERSIONS.items()):
        if key not in registered:
            continue
        cls = api_messages.request_class(key)
        if cls is None:
            continue
        schema_lo, schema_hi = cls.valid_versions
        if enable_2pc and key in TWO_PC_VERSIONS:
            hi = TWO_PC_VERSIONS[key]
        lo, hi = max(lo, schema_lo), min(hi, schema_hi)
        if transaction_version < 2 and key in TV1_CAPS:
            hi = min(hi, TV1_CAPS[key])
        if lo <= hi:
            out.append((key, lo, hi))
    return out


# ---------------------------------------------------------------------------------- ApiVersions
@handles(18)
def api_versions(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    tv = state.transaction_version
    values: dict[str, Any] = {
        "error_code": ec.NONE,
        "api_keys": [
            {"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in advertised_versions(
                tv, bool(state.settings.get("enable_2pc", False)))
        ],
        "throttle_time_ms": 0,
    }
    if ctx.api_version >= 3:
        supported = [
            ("group.version", 0, 1),
            ("kraft.version", 0, 1),
            ("metadata.version", 7, METADATA_VERSION_LEVEL),
            ("transaction.version", 0, 2),
        ]
        if ctx.api_version < 4:  # KIP-1022: v3 omits features whose minimum is 0
            supported = [f for f in supported if f[1] > 0]
        finalized = [("group.version", 1), ("kraft.version", 1), ("metadata.version", METADATA_VERSION_LEVEL)]
        if tv > 0:
            finalized.insert(1, ("transaction.version", tv))
        values.update(
            supported_features=[{"name": n, "min_version": lo, "max_version": hi} for n, lo, hi in supported],
            finalized_features_epoch=state.features_epoch,
            finalized_features=[
                {"name": n, "max_version_level": lvl, "min_version_level": lvl} for n, lvl in finalized
            ],
            zk_migration_ready=False,
        )
    return api_messages.build(ApiVersionsResponse, ctx.api_version, values)


# ------------------------------------------------------------------------------------- Metadata
def _broker_list(state: ClusterState) -> list[dict[str, Any]]:
    return [
        {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
        for b in sorted(state.brokers.values(), key=lambda b: b.node_id)
        if b.alive
    ]


def _topic_metadata(state: ClusterState, name: str) -> dict[str, Any]:
    topic = state.topics[name]
    alive = set(state.alive_broker_ids())
    parts = []
    for log in topic.partitions:
        replicas = state.replicas_of(name, log.partition)
        parts.append(
            {
                "error_code": ec.NONE,
                "partition_index": log.partition,
                "leader_id": log.leader_id,
                "leader_epoch": log.leader_epoch,
                "replica_nodes": replicas,
                "isr_nodes": [r for r in replicas if r in alive],
                "offline_replicas": [r for r in replicas if r not in alive],
            }
        )
    return {
        "error_code": ec.NONE,
        "name": name,
        "topic_id": topic.topic_id,
        "is_internal": False,
        "partitions": parts,
    }


@handles(3)
def metadata(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    topics_out: list[dict[str, Any]] = []
    requested = request.topics
    if requested is None or (v == 0 and not requested):
        topics_out = [_topic_metadata(state, n) for n in sorted(state.topics)]
    else:
        allow = bool(request.allow_auto_topic_creation) if v >= 4 else True
        for t in requested:
            name = t.name
            if name is None and getattr(t, "topic_id", None) is not None:
                found = state.topic_by_id(t.topic_id)
                if found is None:
                    topics_out.append(
                        {
                            "error_code": ec.UNKNOWN_TOPIC_ID,
                            "name": None,
                            "topic_id": t.topic_id,
                            "is_internal": False,
                            "partitions": [],
                        }
                    )
                    continue
                name = found.name
            if name not in state.topics:
                if allow and state.auto_create_topics and name:
                    state.create_topic(name)
                else:
                    topics_out.append(
                        {
                            "error_code": ec.UNKNOWN_TOPIC_OR_PARTITION,
                            "name": name,
                            "topic_id": uuid.UUID(int=0),
                            "is_internal": False,
                            "partitions": [],
                        }
                    )
                    continue
            topics_out.append(_topic_metadata(state, name))
    return api_messages.build(
        MetadataResponse,
        v,
        {
            "throttle_time_ms": 0,
            "brokers": _broker_list(state),
            "cluster_id": state.cluster_id,
            "controller_id": state.controller_id
            if state.brokers[state.controller_id].alive
            else (state.alive_broker_ids() or [-1])[0],
            "topics": topics_out,
            "error_code": ec.NONE,
        },
    )


# ------------------------------------------------------------------------------ FindCoordinator
def _coordinator_entry(state: ClusterState, key_type: int, key: str) -> dict[str, Any]:
    if key_type not in (0, 1):
        return {
            "key": key,
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": ec.INVALID_REQUEST,
            "error_message": f"Unsupported key type {key_type}",
        }
    node = state.coordinator_for(key_type, key)
    broker = state.brokers.get(node)
    if broker is None or not broker.alive:
        return {
            "key": key,
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": ec.COORDINATOR_NOT_AVAILABLE,
            "error_message": None,
        }
    return {
        "key": key,
        "node_id": node,
        "host": broker.host,
        "port": broker.port,
        "error_code": ec.NONE,
        "error_message": "",
    }


@handles(10)
def find_coordinator(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    key_type = request.key_type if v >= 1 else 0
    if v >= 4:
        return api_messages.build(
            FindCoordinatorResponse,
            v,
            {
                "throttle_time_ms": 0,
                "coordinators": [_coordinator_entry(state, key_type, k) for k in request.coordinator_keys],
            },
        )
    entry = _coordinator_entry(state, key_type, request.key)
    message = entry["error_message"]
    if entry["error_code"] == ec.NONE:
        message = "NONE"  # what Kafka answers on success for v1-v3
    return api_messages.build(
        FindCoordinatorResponse,
        v,
        {
            "throttle_time_ms": 0,
            "error_code": entry["error_code"],
            "error_message": message,
            "node_id": entry["node_id"],
            "host": entry["host"],
            "port": entry["port"],
        },
    )


# --------------------------------------------------------------------------------- CreateTopics
@handles(19)
def create_topics(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    out = []
    for t in request.topics:
        entry: dict[str, Any] = {
            "name": t.name,
            "topic_id": uuid.UUID(int=0),
            "error_code": ec.NONE,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],
        }
        if t.name in state.topics:
            entry.update(
                error_code=ec.TOPIC_ALREADY_EXISTS, error_message=f"Topic '{t.name}' already exists."
            )
        elif t.num_partitions == 0 or t.num_partitions < -1:
            entry.update(
                error_code=ec.INVALID_PARTITIONS, error_message="Number of partitions must be larger than 0."
            )
        else:
            count = t.num_partitions if t.num_partitions > 0 else state.default_partitions
            rf = t.replication_factor if t.replication_factor > 0 else len(state.brokers)
            if request.validate_only:
                entry.update(num_partitions=count, replication_factor=rf)
            else:
                topic = state.create_topic(t.name, count)
                entry.update(topic_id=topic.topic_id, num_partitions=count, replication_factor=rf)
        out.append(entry)
    return api_messages.build(CreateTopicsResponse, ctx.api_version, {"throttle_time_ms": 0, "topics": out})


# -------------------------------------------------------------------------------------- Produce
def _leader_hint(state: ClusterState, topic: str, partition: int) -> dict[str, Any] | None:
    log = state.partition_log(topic, partition)
    if log is None:
        return None
    return {"leader_id": log.leader_id, "leader_epoch": log.leader_epoch}


def _produce_partition(
    state: ClusterState, ctx: RequestContext, request: Any, topic: str, part: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": part.index,
        "error_code": ec.NONE,
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": None,
    }
    log = state.partition_log(topic, part.index)
    if log is None:
        out["error_code"] = ec.UNKNOWN_TOPIC_OR_PARTITION
        return out
    if log.leader_id != ctx.broker_id:
        out["error_code"] = ec.NOT_LEADER_OR_FOLLOWER
        if ctx.api_version >= 10:
            out["current_leader"] = _leader_hint(state, topic, part.index)
        return out
    if request.acks not in (-1, 0, 1):
        out["error_code"] = ec.INVALID_REQUIRED_ACKS
        return out
    try:
        batches = parse_batches(part.records or b"", validate_crc=state.settings.get("validate_crc", True))
    except InvalidRecordsError as exc:
        # Kafka answers corrupt batches with log_start_offset -1 and no message
        _log.info("mock.corrupt_batch", topic=topic, partition=part.index, reason=str(exc))
        out["error_code"] = ec.CORRUPT_MESSAGE
        return out
    limit = state.topics[topic].max_message_bytes
    if any(len(b.data) > limit for b in batches):
        # Kafka checks each batch against the topic's max.message.bytes before anything else of
        # the producer state; nothing is appended
        out["error_code"] = ec.MESSAGE_TOO_LARGE
        return out
    transactional = [b for b in batches if b.transactional]
    if transactional:
        first = transactional[0]
        if request.transactional_id is None:
            out.update(
                error_code=ec.INVALID_TXN_STATE, error_message="transactional batch without transactional id"
            )
            return out
        code, message = state.txn.verify_produce(
            first.producer_id,
            first.producer_epoch,
            topic,
            part.index,
            ctx.api_version,
            transactional_id=request.transactional_id,
        )
        if code != ec.NONE:
            out.update(error_code=code, error_message=message)
            return out
    strict = bool(transactional) and ctx.api_version >= 12 and state.transaction_version >= 2
    result = log.append(batches, strict)
    # producer-state errors (sequence, epoch) carry the log start offset and, as in Kafka, no message
    out.update(error_code=result.error_code, log_start_offset=log.log_start_offset)
    if result.error_code == ec.NONE:
        out.update(base_offset=result.base_offset, log_append_time_ms=result.log_append_time_ms)
    else:
        _log.info("mock.produce_rejected", error_code=result.error_code, reason=result.error_message)
    return out


@handles(0)
def produce(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    responses = []
    appended = False
    for t in request.topic_data:
        name = t.name
        topic_id = getattr(t, "topic_id", None) if v >= 13 else None
        if v >= 13:
            found = state.topic_by_id(topic_id) if topic_id is not None else None
            name = found.name if found is not None else None
        parts = []
        for part in t.partition_data:
            if name is None:
                parts.append({"index": part.index, "error_code": ec.UNKNOWN_TOPIC_ID, "base_offset": -1})
                continue
            entry = _produce_partition(state, ctx, request, name, part)
            appended = appended or (entry["error_code"] == ec.NONE)
            parts.append(entry)
        responses.append({"name": t.name, "topic_id": topic_id, "partition_responses": parts})
    if appended:
        state.notify_all()
    if request.acks == 0:
        return None
    values: dict[str, Any] = {"responses": responses, "throttle_time_ms": 0}
    if v >= 10 and any(
        p["error_code"] == ec.NOT_LEADER_OR_FOLLOWER for r in responses for p in r["partition_responses"]
    ):
        values["node_endpoints"] = [
            {"node_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
            for b in _broker_list(state)
        ]
    return api_messages.build(ProduceResponse, v, values)


# ---------------------------------------------------------------------------------------- Fetch
def _fetch_once(state: ClusterState, ctx: RequestContext, request: Any) -> tuple[list[dict[str, Any]], int]:
    v = ctx.api_version
    read_committed = request.isolation_level == 1
    remaining = request.max_bytes if v >= 3 else 2**31 - 1
    total = 0
    out = []
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
            log = state.partition_log(name, p.partition) if name is not None else None
            if log is None:
                entry["error_code"] = ec.UNKNOWN_TOPIC_ID if v >= 13 else ec.UNKNOWN_TOPIC_OR_PARTITION
                parts.append(entry)
                continue
            if log.leader_id != ctx.broker_id:
                entry["error_code"] = ec.NOT_LEADER_OR_FOLLOWER
                if v >= 12 and name is not None:
                    entry["current_leader"] = _leader_hint(state, name, p.partition)
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


@handles(1)
def fetch(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
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


# ---------------------------------------------------------------------------------- ListOffsets
@handles(2)
def list_offsets(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    read_committed = v >= 2 and request.isolation_level == 1
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "error_code": ec.NONE,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            log = state.partition_log(t.name, p.partition_index)
            if log is None:
                entry["error_code"] = ec.UNKNOWN_TOPIC_OR_PARTITION
            elif log.leader_id != ctx.broker_id:
                entry["error_code"] = ec.NOT_LEADER_OR_FOLLOWER
            else:
                entry["leader_epoch"] = log.leader_epoch
                ts = p.timestamp
                if ts == -2:  # earliest
                    entry["offset"] = log.log_start_offset
                elif ts == -1:  # latest
                    entry["offset"] = log.last_stable_offset if read_committed else log.high_watermark
                elif ts == -3:  # max timestamp
                    max_ts, offset = log.max_timestamp_offset()
                    entry.update(timestamp=max_ts, offset=offset)
                elif ts < 0:  # -4 earliest local, -5 earliest tiered: a single local log
                    entry["offset"] = log.log_start_offset
                else:
                    found = log.offset_for_timestamp(ts)
                    if found is not None:
                        entry.update(timestamp=ts, offset=found)
            parts.append(entry)
        topics.append({"name": t.name, "partitions": parts})
    return api_messages.build(ListOffsetsResponse, v, {"throttle_time_ms": 0, "topics": topics})


# ---------------------------------------------------------------------------- DescribeProducers
@handles(61)
def describe_producers(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partition_indexes:
            log = state.partition_log(t.name, p)
            if log is None:
                parts.append(
                    {
                        "partition_index": p,
                        "error_code": ec.UNKNOWN_TOPIC_OR_PARTITION,
                        "error_message": None,
                        "active_producers": [],
                    }
                )
                continue
            if log.leader_id != ctx.broker_id:
                parts.append(
                    {
                        "partition_index": p,
                        "error_code": ec.NOT_LEADER_OR_FOLLOWER,
                        "error_message": None,
                        "active_producers": [],
                    }
                )
                continue
            producers = [
                {
                    "producer_id": e.producer_id,
                    "producer_epoch": e.producer_epoch,
                    "last_sequence": e.last_sequence,
                    "last_timestamp": e.last_timestamp,
                    "coordinator_epoch": e.coordinator_epoch,
                    "current_txn_start_offset": -1
                    if e.current_txn_first_offset is None
                    else e.current_txn_first_offset,
                }
                for e in log.producer_states()
            ]
            parts.append(
                {
                    "partition_index": p,
                    "error_code": ec.NONE,
                    "error_message": None,
                    "active_producers": producers,
                }
            )
        topics.append({"name": t.name, "partitions": parts})
    return api_messages.build(
        DescribeProducersResponse, ctx.api_version, {"throttle_time_ms": 0, "topics": topics}
    )


# ------------------------------------------------------------------------------ DescribeConfigs
def _broker_configs(state: ClusterState) -> list[tuple[str, str, int, bool]]:
    """(name, value, config_type, read_only) of the transaction settings Kafka 4.1 reported."""
    return [
        ("transaction.max.timeout.ms", str(state.transaction_max_timeout_ms), 3, True),
        ("transactional.id.expiration.ms", "604800000", 3, True),
        ("group.initial.rebalance.delay.ms", "0", 3, True),
        ("add.partitions.to.txn.retry.backoff.ms", "20", 3, True),
        ("transaction.two.phase.commit.enable", "false", 1, True),
        ("add.partitions.to.txn.retry.backoff.max.ms", "100", 3, True),
        ("producer.id.expiration.ms", "86400000", 3, False),
        ("transaction.partition.verification.enable", "true", 1, False),
        ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "10000", 3, True),
        ("transaction.state.log.num.partitions", "50", 3, True),
        ("transaction.remove.expired.transaction.cleanup.interval.ms", "3600000", 3, True),
        ("auto.create.topics.enable", "true" if state.auto_create_topics else "false", 1, True),
        ("num.partitions", str(state.default_partitions), 3, True),
    ]


_TOPIC_CONFIGS = [
    ("cleanup.policy", "delete", 7),
    ("min.insync.replicas", "1", 3),
    ("retention.ms", "604800000", 5),
    ("max.message.bytes", "1048588", 3),
]


@handles(32)
def describe_configs(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    results = []
    for r in request.resources:
        entry: dict[str, Any] = {
            "error_code": ec.NONE,
            "error_message": "",
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }
        if r.resource_type == 4:  # BROKER
            configs = [(n, val, ct, ro, 5) for n, val, ct, ro in _broker_configs(state)]
        elif r.resource_type == 2:  # TOPIC
            if r.resource_name not in state.topics:
                entry.update(
                    error_code=ec.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=f"Topic {r.resource_name} does not exist",
                )
                results.append(entry)
                continue
            configs = [(n, val, ct, False, 5) for n, val, ct in _TOPIC_CONFIGS]
        else:
            configs = []
        wanted = r.configuration_keys
        entry["configs"] = [
            {
                "name": n,
                "value": val,
                "read_only": ro,
                "config_source": src,
                "is_default": False,
                "is_sensitive": False,
                "synonyms": [],
                "config_type": ct,
                "documentation": None,
            }
            for n, val, ct, ro, src in configs
            if wanted is None or n in wanted
        ]
        results.append(entry)
    return api_messages.build(
        DescribeConfigsResponse, ctx.api_version, {"throttle_time_ms": 0, "results": results}
    )
