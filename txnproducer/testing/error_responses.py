"""The response a request gets when an error code answers it instead of its handler.

Used for injected errors (``MockCluster.inject_error``: the request is not executed) and for a handler
that raised (UNKNOWN_SERVER_ERROR). The answer has the request's version and mirrors its items - topics
and partitions, coordinator keys, groups, transactions - each carrying the code, so a client sees the
error exactly where it would look for it. Kept apart from the fault rules (``faults.py``): this is
protocol shaping per API, that is bookkeeping of what to inject when.
"""

from __future__ import annotations

from typing import Any

from . import api_messages


def error_response(api_key: int, version: int, request: Any, code: int, state: Any = None,
                   log_start_offset: int | None = None) -> Any:
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
                    {"index": p.index, "error_code": code, "base_offset": -1,
                     "log_start_offset": -1 if log_start_offset is None else log_start_offset}
                    for p in t.partition_data
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
    elif api_key == 27:
        v["markers"] = [
            {
                "producer_id": m.producer_id,
                "topics": [
                    {"name": t.name,
                     "partitions": [{"partition_index": p, "error_code": code} for p in t.partition_indexes]}
                    for t in m.topics
                ],
            }
            for m in request.markers
        ]
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
    elif api_key == 69:
        v["groups"] = [
            {"error_code": code, "error_message": None, "group_id": g, "group_state": "", "group_epoch": 0,
             "assignment_epoch": 0, "assignor_name": "", "members": []}
            for g in request.group_ids
        ]
    elif api_messages.has_field(resp_cls, "error_code", version):
        v["error_code"] = code
    return api_messages.build(resp_cls, version, v)
