"""CreateTopics (key 19): v2-7.

Behaviour:
- An existing topic: TOPIC_ALREADY_EXISTS ("Topic 'x' already exists.").
- ``num_partitions`` 0 or below -1: INVALID_PARTITIONS ("Number of partitions must be larger than 0.").
- -1 partitions / replication factor mean the cluster defaults (``default_partitions``, cluster size).
- ``validate_only`` answers what would be created without creating it (topic id stays null).
- Created topics answer their topic id, partition count and replication factor; ``configs`` is empty.

Version notes: fields a version does not have (topic id v7, counts v5+) are dropped when the response is
built.

Simplifications: requested replica assignments and topic configs are ignored (every broker is a replica;
``max.message.bytes`` is only settable through ``MockCluster.create_topic``); no timeout, no
controller redirection, no topic name validation.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin.topics import CreateTopicsResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
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


API = Api(19, "CreateTopics", 2, 7, handle)
