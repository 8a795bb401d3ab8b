"""DescribeConfigs (key 32): v1-4, a minimal one.

Behaviour:
- Broker resources (type 4): the transaction-related settings the Kafka 4.1.0 recording reports, with
  the values this cluster runs under where it has them (``transaction.max.timeout.ms``,
  ``auto.create.topics.enable``, ``num.partitions``), config source 5 (static broker config).
- Topic resources (type 2): four configs (cleanup.policy, min.insync.replicas, retention.ms,
  max.message.bytes): the value CreateTopics set, with config source 1 (topic config), or else the
  broker default with source 5; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION ("Topic x does not
  exist").
- Other resource types: no configs, no error. ``configuration_keys`` filters by name.

Authorization (Kafka's ConfigHelper.handleDescribeConfigsRequest): DescribeConfigs on the cluster for a broker
resource (CLUSTER_AUTHORIZATION_FAILED), on the topic for a topic (TOPIC_AUTHORIZATION_FAILED), on the group
for a group (type 32, GROUP_AUTHORIZATION_FAILED), each with the error's message and no configs, checked
before the resource's existence.

Simplifications: results keep the request's order (Kafka lists refused resources last); no synonyms and no
documentation; the fixed values do not follow the cluster (a topic created with another
``max_message_bytes`` still reports 1048588; ``transaction.two.phase.commit.enable`` is "false" and
``group.initial.rebalance.delay.ms`` "0" whatever the cluster settings).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.configs import DescribeConfigsResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..security.acl import Operation, ResourceType
from .api import Api, RequestContext


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


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    results = []
    for r in request.resources:
        entry: dict[str, Any] = {
            "error_code": ec.NONE,
            "error_message": "",
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }
        refused = _refusal(ctx, r.resource_type, r.resource_name)
        if refused != ec.NONE:
            entry.update(error_code=refused, error_message=ec.describe(refused).description)
            results.append(entry)
            continue
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
            overrides = state.topics[r.resource_name].configs
            # a config set at creation is a topic config (source 1), the rest the broker's defaults
            configs = [(n, overrides[n], ct, False, 1) if n in overrides else (n, val, ct, False, 5)
                       for n, val, ct in _TOPIC_CONFIGS]
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


#: config resource type -> (the ACL resource DescribeConfigs is checked on, the error when refused)
_DESCRIBE_CONFIGS = {
    4: (ResourceType.CLUSTER, ec.CLUSTER_AUTHORIZATION_FAILED),  # BROKER
    8: (ResourceType.CLUSTER, ec.CLUSTER_AUTHORIZATION_FAILED),  # BROKER_LOGGER
    2: (ResourceType.TOPIC, ec.TOPIC_AUTHORIZATION_FAILED),
    32: (ResourceType.GROUP, ec.GROUP_AUTHORIZATION_FAILED),
}


def _refusal(ctx: RequestContext, resource_type: int, name: str) -> int:
    """The authorization error of describing the configs of one resource, or NONE."""
    if resource_type not in _DESCRIBE_CONFIGS:
        return ec.NONE
    acl_type, error = _DESCRIBE_CONFIGS[resource_type]
    if acl_type is ResourceType.CLUSTER:
        name = "kafka-cluster"
    return ec.NONE if ctx.allows(Operation.DESCRIBE_CONFIGS, acl_type, name) else error


API = Api(32, "DescribeConfigs", 1, 4, handle)
