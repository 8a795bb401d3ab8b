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
  preferred leader; the in-sync replicas are the alive ones, the others are listed as offline.

Version notes: fields a version does not have are dropped when the response is built
(``api_messages.build``), so one answer serves v0-13.

Simplifications: replication factor = cluster size and a replica is in sync exactly when its broker is
alive; no internal topics are listed (``__consumer_offsets`` does not exist as a topic here); topic
authorized operations are not computed.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.metadata import MetadataResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ._common import broker_list
from .api import Api, RequestContext


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


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
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
