"""Produce (key 0): v3-13 (v3-11 while transaction.version < 2).

Kafka 4.1.0 advertises v0-13, but kafka-python has no schema below v3 (Kafka 4 rejects v0-2 anyway).

Behaviour, per partition, in the broker's order:
- unknown partition: UNKNOWN_TOPIC_OR_PARTITION; this broker not the leader: NOT_LEADER_OR_FOLLOWER;
- ``acks`` not -1, 0 or 1: INVALID_REQUIRED_ACKS;
- records that are not well-formed magic-v2 batches (framing, magic, CRC-32C unless
  ``validate_crc=False``, a client-written control batch): CORRUPT_MESSAGE with log_start_offset -1;
- a batch larger than the topic's ``max.message.bytes``: MESSAGE_TOO_LARGE, nothing appended;
- transactional batches: without a transactional id INVALID_TXN_STATE; otherwise the partition leader's
  KIP-890 check (``TransactionCoordinator.verify_produce``, on the first transactional batch's producer id
  and epoch): TV1 verification that the partition was added, or the TV2 implicit add;
- then the partition log's producer-state checks (``PartitionLog.append``): a duplicate of one of the
  producer's last five batches is answered with the original offset; epoch and sequence errors carry
  the log start offset and no message. All batches of a partition are appended or none.
Any append wakes waiting fetches. With ``acks=0`` there is no answer at all.

Authorization (KafkaApis.handleProduceRequest), before anything else:
- a request carrying transactional batches needs Write on its transactional id: otherwise every partition is
  answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED (with Kafka's message) and nothing is appended;
- each topic needs Write: TOPIC_AUTHORIZATION_FAILED for each of its partitions (before the partition's
  existence is checked); the other partitions are handled as usual.

Version notes:
- v10+: NOT_LEADER_OR_FOLLOWER carries ``current_leader`` and the response lists ``node_endpoints``.
- v11: TRANSACTION_ABORTABLE for a partition not in the transaction (v3-10: INVALID_TXN_STATE with the
  broker's message).
- v12+ with TV2 finalized: the partition is added to the transaction implicitly, and a producer unknown
  to the partition must start at sequence 0.
- v13: topics are named by topic id; an unknown id is UNKNOWN_TOPIC_ID for each of its partitions.

Simplifications: a single replica, so acks -1 and 1 are the same and the high watermark is the log end;
without an authorizer, transactional batches without a transactional id stay INVALID_TXN_STATE per partition
(Kafka answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED there even without one); with acks=0 an authorization
failure is not answered (Kafka closes the connection);
records are never decompressed or validated beyond the batch headers; ``log_append_time_ms`` is always -1
(CreateTime) and ``record_errors`` always empty; no request timeout, quotas or throttling.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer import ProduceResponse

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..partition_log import HEADER, HEADER_SIZE, InvalidRecordsError, parse_batches
from ..security.acl import Operation, ResourceType
from ._common import broker_list, leader_hint
from .api import Api, RequestContext

_log = get_logger("txnproducer.testing.broker")


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
            out["current_leader"] = leader_hint(state, topic, part.index)
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


def coordinator_to_verify_with(state: ClusterState, ctx: RequestContext, request: Any) -> int | None:
    """The broker this leader's KIP-890 check of ``request`` asks before appending: the coordinator of the
    request's transactional id, when a partition this broker leads gets a transactional batch of a producer
    without an open transaction there (Kafka's leader verifies, or under TV2 adds, the partition with the
    coordinator then). None when no check is needed. The network side holds such a Produce while that
    coordinator does not answer (``server.py``)."""
    tid = request.transactional_id
    if tid is None:
        return None
    for topic in request.topic_data:
        name = topic.name
        if ctx.api_version >= 13:
            topic_id = getattr(topic, "topic_id", None)
            found = state.topic_by_id(topic_id) if topic_id is not None else None
            name = found.name if found is not None else None
        for part in topic.partition_data:
            log = state.partition_log(name, part.index) if name else None
            if log is None or log.leader_id != ctx.broker_id:
                continue
            try:
                batches = parse_batches(part.records or b"", validate_crc=False)
            except InvalidRecordsError:
                continue
            if any(b.transactional and not log.has_ongoing_transaction(b.producer_id) for b in batches):
                return state.coordinator_for(1, tid)
    return None


def _has_transactional_records(request: Any) -> bool:
    """Whether any batch of the request has the transactional bit (Kafka's ``RequestUtils``); reads only
    batch headers, so a malformed batch is left to the partition's own checks."""
    for topic in request.topic_data:
        for part in topic.partition_data:
            data, pos = part.records or b"", 0
            while pos + HEADER_SIZE <= len(data):
                _, length, _, _, _, attributes, *_ = HEADER.unpack_from(data, pos)
                if attributes & 0x10:
                    return True
                if length <= 0:
                    break
                pos += 12 + length
    return False


def _transactional_id_refused(ctx: RequestContext, request: Any) -> bool:
    """Kafka: transactional batches need Write on the request's transactional id (a null id has none)."""
    tid = request.transactional_id
    if ctx.authorizer is None:
        return False
    if tid is not None and ctx.allows(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        return False
    return _has_transactional_records(request)


def _refused_partition(index: int, code: int, message: str | None = None) -> dict[str, Any]:
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": -1, "record_errors": [], "error_message": message}


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    if _transactional_id_refused(ctx, request):
        if request.acks == 0:
            return None
        code = ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return api_messages.build(ProduceResponse, v, {"throttle_time_ms": 0, "responses": [
            {"name": t.name, "topic_id": getattr(t, "topic_id", None), "partition_responses": [
                _refused_partition(p.index, code, ec.describe(code).description) for p in t.partition_data]}
            for t in request.topic_data]})
    responses = []
    appended = False
    writable: dict[str, bool] = {}
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
            if name not in writable:
                writable[name] = ctx.allows(Operation.WRITE, ResourceType.TOPIC, name)
            if not writable[name]:
                parts.append(_refused_partition(part.index, ec.TOPIC_AUTHORIZATION_FAILED))
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
            for b in broker_list(state)
        ]
    return api_messages.build(ProduceResponse, v, values)


API = Api(0, "Produce", 0, 13, handle, tv1_max_version=11)
