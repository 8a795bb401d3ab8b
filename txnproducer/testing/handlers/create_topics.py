"""CreateTopics (key 19): v2-7.

Behaviour:
- An existing topic: TOPIC_ALREADY_EXISTS ("Topic 'x' already exists.").
- ``num_partitions`` 0 or below -1: INVALID_PARTITIONS ("Number of partitions must be larger than 0.").
- -1 partitions / replication factor mean the cluster defaults (``default_partitions``, cluster size).
- ``validate_only`` answers what would be created without creating it (topic id stays null).
- Created topics answer their topic id, partition count and replication factor; ``configs`` is empty.

Authorization (Kafka's ControllerApis.createTopics, where brokers forward CreateTopics): Create on the
cluster, or else on each topic - a refused topic is TOPIC_AUTHORIZATION_FAILED ("Authorization failed."),
checked before its existence; a created topic the principal may not DescribeConfigs is answered without its
partition count and replication factor and with ``topic_config_error_code`` TOPIC_AUTHORIZATION_FAILED.

Version notes: fields a version does not have (topic id v7, counts v5+) are dropped when the response is
built.

Simplifications: requested replica assignments are ignored (every broker is a replica); requested topic
configs are stored and reported by DescribeConfigs but change no behaviour (``cleanup.policy=compact``
compacts nothing; ``max.message.bytes`` is only enforced when set through ``MockCluster.create_topic``);
no timeout, no controller redirection, no topic name validation.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin.topics import CreateTopicsResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..security.acl import Operation, ResourceType
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    out = []
    any_topic = ctx.allows(Operation.CREATE, ResourceType.CLUSTER)
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
        if not (any_topic or ctx.allows(Operation.CREATE, ResourceType.TOPIC, t.name)):
            entry.update(error_code=ec.TOPIC_AUTHORIZATION_FAILED, error_message="Authorization failed.")
        elif t.name in state.topics:
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
                topic.configs.update({c.name: c.value for c in (t.configs or []) if c.value is not None})
                entry.update(topic_id=topic.topic_id, num_partitions=count, replication_factor=rf)
            if not ctx.allows(Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, t.name):
                entry.update(num_partitions=-1, replication_factor=-1,
                             topic_config_error_code=ec.TOPIC_AUTHORIZATION_FAILED)
        out.append(entry)
    return api_messages.build(CreateTopicsResponse, ctx.api_version, {"throttle_time_ms": 0, "topics": out})


API = Api(19, "CreateTopics", 2, 7, handle)
