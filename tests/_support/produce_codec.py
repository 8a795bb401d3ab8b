"""Shared by the Produce codec tests (test_produce_codec.py, the reference against kafka-python, and
test_produce_codec_compiled.py, the compiled codec against the reference): records in every buffer type a
caller may pass, kafka-python's ProduceResponse built from plain values, and a decoded answer as plain
tuples to compare."""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer import ProduceResponse

from txnproducer._internal.protocol.produce_request import Records
from txnproducer._internal.protocol.produce_response import ProduceResponseData

_RT = ProduceResponse.TopicProduceResponse
_RP = _RT.PartitionProduceResponse


def as_records(kind: str, payload: bytes) -> Records:
    if kind == "bytearray":
        return bytearray(payload)
    if kind == "memoryview":
        return memoryview(payload)
    if kind == "memoryview-slice":  # a view into a bigger buffer, as a caller might pass
        return memoryview(b"<<" + payload + b">>")[2:2 + len(payload)]
    return payload


def reference_response(version: int, topics: Any, throttle_time_ms: int, node_endpoints: Any) -> Any:
    """kafka-python's ProduceResponse at ``version`` (fields absent from it are left out)."""
    out_topics = []
    for name, topic_id, parts in topics:
        out_parts = []
        for p in parts:
            kw: dict[str, Any] = {"index": p["index"], "error_code": p["error_code"],
                                  "base_offset": p["base_offset"],
                                  "log_append_time_ms": p["log_append_time_ms"]}
            if version >= 5:
                kw["log_start_offset"] = p["log_start_offset"]
            if version >= 8:
                kw["record_errors"] = [
                    _RP.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                    for i, m in p["record_errors"]]
                kw["error_message"] = p["error_message"]
            if version >= 10 and p["current_leader"] is not None:
                kw["current_leader"] = _RP.LeaderIdAndEpoch(leader_id=p["current_leader"][0],
                                                            leader_epoch=p["current_leader"][1])
            out_parts.append(_RP(**kw))
        key = {"topic_id": topic_id} if version >= 13 else {"name": name}
        out_topics.append(_RT(partition_responses=out_parts, **key))
    kw = {"responses": out_topics, "throttle_time_ms": throttle_time_ms}
    if version >= 10 and node_endpoints is not None:
        kw["node_endpoints"] = [ProduceResponse.NodeEndpoint(node_id=n, host=h, port=p, rack=r)
                                for n, h, p, r in node_endpoints]
    return ProduceResponse(version=version, **kw)


def leader(value: tuple[int, int] | None) -> tuple[int, int] | None:
    """An absent CurrentLeader and the schema's default (-1, -1) mean the same: no hint."""
    return None if value is None or value == (-1, -1) else value


def normalized(decoded: ProduceResponseData) -> list[Any]:
    out = []
    for t in decoded.responses:
        parts = [(p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset,
                  tuple((e.batch_index, e.batch_index_error_message) for e in p.record_errors),
                  p.error_message, leader(p.current_leader)) for p in t.partition_responses]
        out.append((t.name, t.topic_id, parts))
    return [out, decoded.throttle_time_ms, tuple(tuple(n) for n in decoded.node_endpoints)]
