"""Metadata (key 3): v0-13.

Behaviour:
- Brokers: the alive ones, in node id order; the controller is the first broker while it is alive, else
  the lowest alive id (-1 if none).
- Topics: all of them for a null topic list (and for an empty list in v0), otherwise the requested ones;
  a requested unknown topic is created (``state.create_topic``, default partition count) when
  auto-creation is allowed - v4+ ``allow_auto_topic_creation`` and the cluster's ``auto_create_topics``
  - and answered UNKNOWN_TOPIC_OR_PARTITION (null topic id) otherwise.
- A topic requested by id only (v10+: null name) that does not exist is UNKNOWN_TOPIC_ID.
- Partitions: leader and leader epoch from the partition log; every broker is a replica, starting at the
  preferred leader; the in-sync replicas are the alive ones, the others are listed as offline. A partition
  without a leader (``MockCluster.set_partition_offline``) is LEADER_NOT_AVAILABLE with leader -1, no
  in-sync replica and every replica offline, as KRaft brokers answer for a partition whose replicas are
  all down.

Authorization (KafkaApis.handleTopicMetadataRequest):
- A requested topic needs Describe, checked before its existence is (no existence is disclosed):
  TOPIC_AUTHORIZATION_FAILED with no partitions and the zero topic id - or, asked by id, a null name and
  the topic's id. An all-topics request lists only the topics the principal may describe.
- Auto-creating a topic needs Create on the cluster or on the topic; without it, TOPIC_AUTHORIZATION_FAILED.

Version notes: fields a version does not have are dropped when the response is built
(``api_messages.build``), so one answer serves v0-13.

Simplifications: replication factor = cluster size and a replica is in sync exactly when its broker is
alive; no internal topics are listed (``__consumer_offsets`` does not exist as a topic here); topic and
cluster authorized operations are not computed; topics are answered in the request's order (Kafka lists the
refused ones after the others).
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.metadata import MetadataResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..security.acl import Operation, ResourceType
from ._common import broker_list
from .api import Api, RequestContext

_ZERO_ID = uuid.UUID(int=0)


def _topic_error(code: int, name: str | None, topic_id: uuid.UUID) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False, "partitions": []}


def _topic_metadata(state: ClusterState, name: str) -> dict[str, Any]:
    topic = state.topics[name]
    alive = set(state.alive_broker_ids())
    parts = []
    for log in topic.partitions:
        replicas = state.replicas_of(name, log.partition)
        online = alive if log.leader_id >= 0 else set()
        parts.append(
            {
                "error_code": ec.NONE if log.leader_id >= 0 else ec.LEADER_NOT_AVAILABLE,
                "partition_index": log.partition,
                "leader_id": log.leader_id,
                "leader_epoch": log.leader_epoch,
                "replica_nodes": replicas,
                "isr_nodes": [r for r in replicas if r in online],
                "offline_replicas": [r for r in replicas if r not in online],
            }
        )
    return {
        "error_code": ec.NONE,
        "name": name,
        "topic_id": topic.topic_id,
        "is_internal": False,
        "partitions": parts,
    }


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    topics_out: list[dict[str, Any]] = []
    requested = request.topics
    if requested is None or (v == 0 and not requested):
        topics_out = [_topic_metadata(state, n) for n in sorted(state.topics)
                      if ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, n)]
    else:
        allow = bool(request.allow_auto_topic_creation) if v >= 4 else True
        for t in requested:
            name = t.name
            if name is None and getattr(t, "topic_id", None) is not None:
                found = state.topic_by_id(t.topic_id)
                if found is None:
                    topics_out.append(_topic_error(ec.UNKNOWN_TOPIC_ID, None, t.topic_id))
                    continue
                name = found.name
                if not ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, name):  # ids are not secret
                    topics_out.append(_topic_error(ec.TOPIC_AUTHORIZATION_FAILED, None, found.topic_id))
                    continue
            elif not ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, name):
                topics_out.append(_topic_error(ec.TOPIC_AUTHORIZATION_FAILED, name, _ZERO_ID))
                continue
            if name not in state.topics:
                if allow and state.auto_create_topics and name:
                    if not (ctx.allows(Operation.CREATE, ResourceType.CLUSTER)
                            or ctx.allows(Operation.CREATE, ResourceType.TOPIC, name)):
                        topics_out.append(_topic_error(ec.TOPIC_AUTHORIZATION_FAILED, name, _ZERO_ID))
                        continue
                    state.create_topic(name)
                else:
                    topics_out.append(_topic_error(ec.UNKNOWN_TOPIC_OR_PARTITION, name, _ZERO_ID))
                    continue
            topics_out.append(_topic_metadata(state, name))
    return api_messages.build(
        MetadataResponse,
        v,
        {
            "throttle_time_ms": 0,
            "brokers": broker_list(state),
            "cluster_id": state.cluster_id,
            "controller_id": state.controller_id
            if state.brokers[state.controller_id].alive
            else (state.alive_broker_ids() or [-1])[0],
            "topics": topics_out,
            "error_code": ec.NONE,
        },
    )


API = Api(3, "Metadata", 0, 13, handle)
