"""DescribeProducers (key 61): v0.

Behaviour: per requested partition, the producer state its leader keeps (``PartitionLog.producer_states``):
producer id and epoch, last sequence, last timestamp, coordinator epoch of the last marker, and the first
offset of the ongoing transaction (-1 when none). Unknown partition: UNKNOWN_TOPIC_OR_PARTITION. Any
replica answers, as in Kafka (``ReplicaManager.activeProducerState``: a follower answers from its own
replica, which is what ``kafka-transactions.sh describe-producers --broker-id`` asks); a broker that is no
replica, or a partition without an online log (``MockCluster.set_partition_offline``), answers
NOT_LEADER_OR_FOLLOWER.

Authorization (KafkaApis.handleDescribeProducersRequest): Read on each topic, before its existence is checked;
a refused topic's partitions are TOPIC_AUTHORIZATION_FAILED with Kafka's message.

Simplifications: every broker is a replica of every partition and replication is instant, so a follower
answers with exactly the leader's state (a real follower may lag); producer state never expires
(``producer.id.expiration.ms`` is only reported, not applied); the coordinator epoch is 0 for every
marker this mock writes.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.transactions import DescribeProducersResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..security.acl import Operation, ResourceType
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    topics = []
    for t in request.topics:
        parts = []
        readable = ctx.allows(Operation.READ, ResourceType.TOPIC, t.name)
        for p in t.partition_indexes:
            log = state.partition_log(t.name, p)
            if not readable:
                code = ec.TOPIC_AUTHORIZATION_FAILED
                parts.append({"partition_index": p, "error_code": code,
                              "error_message": ec.describe(code).description, "active_producers": []})
                continue
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
            if log.offline or ctx.broker_id not in state.replicas_of(t.name, p):
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


API = Api(61, "DescribeProducers", 0, 0, handle)
