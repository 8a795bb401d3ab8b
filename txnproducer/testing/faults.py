"""Fault-injection rules the broker connections consult, and error responses mirroring a request.

A rule matches an API key and optionally a broker, and is consumed request by request (``count``).
The connection asks ``FaultPlan.take(kind, api_key, broker_id)`` at the matching moment:
``error`` before handling (answer with an error response instead), ``delay`` before sending,
``drop_before`` / ``drop_after`` around handling. Black-holed brokers read and never answer.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import attrs

from txnproducer._internal.protocol import error_codes as ec

from . import api_messages

ERROR = "error"
DELAY = "delay"
DROP_BEFORE = "drop_before"
DROP_AFTER = "drop_after"


@attrs.define
class _Rule:
    kind: str
    api_key: int
    broker_id: int | None
    remaining: int
    payloads: list[Any]
    taken: int = 0


class FaultPlan:
    """Pending faults; thread-safe (each connection thread consults it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._black_holes: set[int | None] = set()

    def add(self, kind: str, api_key: int, broker_id: int | None, count: int, payloads: list[Any]) -> None:
        if count < 1:
            raise ValueError("count must be >= 1")
        with self._lock:
            self._rules.append(_Rule(kind, api_key, broker_id, count, payloads))

    def take(self, kind: str, api_key: int, broker_id: int) -> tuple[bool, Any]:
        """Consume one matching rule occurrence: (True, payload) or (False, None)."""
        with self._lock:
            for rule in self._rules:
                if rule.kind != kind or rule.api_key != api_key:
                    continue
                if rule.broker_id is not None and rule.broker_id != broker_id:
                    continue
                # successive requests take successive payloads; the last one repeats
                payload = rule.payloads[min(rule.taken, len(rule.payloads) - 1)]
                rule.taken += 1
                rule.remaining -= 1
                if rule.remaining <= 0:
                    self._rules.remove(rule)
                return True, payload
        return False, None

    def set_black_hole(self, broker_id: int | None, enabled: bool) -> None:
        with self._lock:
            if enabled:
                self._black_holes.add(broker_id)
            else:
                self._black_holes.discard(broker_id)
                if broker_id is None:
                    self._black_holes.clear()

    def is_black_hole(self, broker_id: int) -> bool:
        with self._lock:
            return None in self._black_holes or broker_id in self._black_holes

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._black_holes.clear()


def _topics_partitions(
    topics: Any, name_attr: str, parts_attr: str, index_attr: str | None
) -> list[tuple[Any, list[int]]]:
    out = []
    for topic in topics or []:
        parts = getattr(topic, parts_attr) or []
        indexes = [p if index_attr is None else getattr(p, index_attr) for p in parts]
        out.append((getattr(topic, name_attr, None), indexes))
    return out


def error_response(api_key: int, version: int, request: Any, code: int, state: Any = None) -> Any:
    """A response of ``version`` whose error codes are all ``code``, mirroring the request's items.

    Per-item entries (topics/partitions, coordinator keys, groups, transactions) get ``code``; a
    top-level ``error_code`` is set where the schema has one (not for Fetch, whose top-level code
    means a fetch-session error to clients).
    """
    resp_cls = api_messages.response_class(api_key)
    if resp_cls is None:
        raise ValueError(f"no response class for api key {api_key}")
    v: dict[str, Any] = {}
    if api_key == 0:
        v["responses"] = [
            {
                "name": t.name,
                "topic_id": getattr(t, "topic_id", None),
                "partition_responses": [
                    {"index": p.index, "error_code": code, "base_offset": -1} for p in t.partition_data
                ],
            }
            for t in request.topic_data
        ]
    elif api_key == 1:
        v["responses"] = [
            {
                "topic": getattr(t, "topic", None),
                "topic_id": getattr(t, "topic_id", None),
                "partitions": [
                    {
                        "partition_index": p.partition,
                        "error_code": code,
                        "high_watermark": -1,
                        "last_stable_offset": -1,
                        "log_start_offset": -1,
                        "records": None,
                    }
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ]
    elif api_key == 2:
        v["topics"] = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": code, "timestamp": -1, "offset": -1}
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ]
    elif api_key == 3:
        if state is not None:
            v["brokers"] = [
                {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                for b in state.brokers.values()
                if b.alive
            ]
            v["cluster_id"] = state.cluster_id
            v["controller_id"] = state.controller_id
        v["topics"] = [
            {"error_code": code, "name": t.name, "topic_id": getattr(t, "topic_id", None), "partitions": []}
            for t in (request.topics or [])
        ]
        v["error_code"] = code
    elif api_key == 10:
        if version >= 4:
            v["coordinators"] = [
                {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": None}
                for k in request.coordinator_keys
            ]
        else:
            v.update(error_code=code, node_id=-1, host="", port=-1, error_message=None)
    elif api_key in (8, 28):
        v["topics"] = [
            {
                "name": t.name,
                # TxnOffsetCommitResponse topics have no topic_id (OffsetCommit v10+ has)
                **({"topic_id": getattr(t, "topic_id", None)} if api_key == 8 else {}),
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": code} for p in t.partitions
                ],
            }
            for t in request.topics
        ]
    elif api_key == 9:
        if version >= 8:
            v["groups"] = [{"group_id": g.group_id, "error_code": code, "topics": []} for g in request.groups]
        else:
            v["error_code"] = code
            v["topics"] = [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p, "committed_offset": -1, "metadata": None, "error_code": code}
                        for p in t.partition_indexes
                    ],
                }
                for t in (request.topics or [])
            ]
    elif api_key == 15:
        v["groups"] = [
            {
                "error_code": code,
                "group_id": g,
                "group_state": "",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
            }
            for g in request.groups
        ]
    elif api_key == 19:
        v["topics"] = [
            {
                "name": t.name,
                "error_code": code,
                "error_message": None,
                "num_partitions": -1,
                "replication_factor": -1,
                "configs": None,
            }
            for t in request.topics
        ]
    elif api_key == 22:
        v.update(error_code=code, producer_id=-1, producer_epoch=-1)
    elif api_key == 24:
        if version >= 4:
            v["error_code"] = code
            v["results_by_transaction"] = [
                {
                    "transactional_id": txn.transactional_id,
                    "topic_results": [
                        {
                            "name": t.name,
                            "results_by_partition": [
                                {"partition_index": p, "partition_error_code": code} for p in t.partitions
                            ],
                        }
                        for t in txn.topics
                    ],
                }
                for txn in request.transactions
            ]
        else:
            v["results_by_topic_v3_and_below"] = [
                {
                    "name": t.name,
                    "results_by_partition": [
                        {"partition_index": p, "partition_error_code": code} for p in t.partitions
                    ],
                }
                for t in request.v3_and_below_topics
            ]
    elif api_key == 26:
        v.update(error_code=code, producer_id=-1, producer_epoch=-1)
    elif api_key == 32:
        v["results"] = [
            {
                "error_code": code,
                "error_message": None,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
                "configs": [],
            }
            for r in request.resources
        ]
    elif api_key == 61:
        v["topics"] = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p, "error_code": code, "error_message": None, "active_producers": []}
                    for p in t.partition_indexes
                ],
            }
            for t in request.topics
        ]
    elif api_key == 65:
        v["transaction_states"] = [
            {
                "error_code": code,
                "transactional_id": tid,
                "transaction_state": "",
                "transaction_timeout_ms": 0,
                "transaction_start_time_ms": 0,
                "producer_id": 0,
                "producer_epoch": 0,
                "topics": [],
            }
            for tid in request.transactional_ids
        ]
    elif api_key == 18:
        v.update(error_code=code, api_keys=[])
    elif api_messages.has_field(resp_cls, "error_code", version):
        v["error_code"] = code
    return api_messages.build(resp_cls, version, v)


def response_error_codes(response: Any) -> tuple[int, ...]:
    """Every non-zero ``*error_code`` anywhere in a response (for the request log)."""
    found: list[int] = []

    def walk(obj: Any) -> None:
        struct_ = getattr(obj, "_struct", None)
        if struct_ is None:
            return
        for name in struct_.fields:
            value = getattr(obj, name, None)
            if value is None:
                continue
            if name.endswith("error_code"):
                if isinstance(value, int) and value != ec.NONE:
                    found.append(value)
            elif isinstance(value, list):
                for item in value:
                    walk(item)
            elif hasattr(value, "_struct"):
                walk(value)

    with contextlib.suppress(Exception):  # never break the connection over logging
        walk(response)
    return tuple(found)
