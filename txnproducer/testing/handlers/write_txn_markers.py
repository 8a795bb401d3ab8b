"""WriteTxnMarkers (key 27): v1.

Behaviour: the request a transaction coordinator sends partition leaders to end a transaction, and what an
operator's tool (``kafka-transactions.sh abort``, ``txnproducer transactions abort``, KIP-664) sends to
end a *hanging* one. Per marker (producer id and epoch, commit or abort, coordinator epoch) and partition,
in Kafka's order: unknown partition UNKNOWN_TOPIC_OR_PARTITION; this broker not the leader
NOT_LEADER_OR_FOLLOWER; then the leader's producer-state checks (``PartitionLog.check_marker``): an epoch
below the producer's epoch on the partition INVALID_PRODUCER_EPOCH, a coordinator epoch below the one of
the producer's last marker TRANSACTION_COORDINATOR_FENCED. Otherwise the COMMIT or ABORT control batch is
appended: it ends the producer's open transaction on the partition (the last stable offset moves on; an
abort enters the aborted-transactions index read_committed fetches return). A producer without an open
transaction gets the marker too (Kafka appends it; it changes nothing for readers). The coordinator is
not told: a marker written this way for a transaction it still tracks leaves the two disagreeing, which
is why the tools abort only what the coordinator no longer tracks.

Authorization (KafkaApis.handleWriteTxnMarkersRequest): Alter on the cluster, or else ClusterAction on the
cluster; without either, every partition of the request answers CLUSTER_AUTHORIZATION_FAILED and nothing
is written.

Version notes: Kafka 4.0 removed v0 and 4.1.0 advertises v1 only (conformance ``api_versions.json``).
Kafka 4.2 added v2 (KIP-1228): each marker carries the ``transaction_version`` of its transaction, and a
leader checks a TV2 marker's epoch strictly (above the producer's epoch); not declared here, as 4.1 does
not speak it.

Simplifications: markers for ``__consumer_offsets`` partitions (transactional offset commits) are not
modelled - the mock keeps no log for that topic, so they answer UNKNOWN_TOPIC_OR_PARTITION. Not in the
conformance recordings (they hold no WriteTxnMarkers exchange): the answers above follow Kafka's source
and were checked against Kafka 4.1.0 by ``tests/broker/test_admin_broker.py`` (the two refusals, the
repeat with equal epochs, and the ACLs); a recording of them belongs in the next conformance run.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import WriteTxnMarkersResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import ClusterState
from ..security.acl import Operation, ResourceType
from .api import Api, RequestContext


def _append(state: ClusterState, ctx: RequestContext, marker: Any, topic: str, partition: int) -> int:
    log = state.partition_log(topic, partition)
    if log is None:
        return ec.UNKNOWN_TOPIC_OR_PARTITION
    if log.leader_id != ctx.broker_id:
        return ec.NOT_LEADER_OR_FOLLOWER
    refused = log.check_marker(marker.producer_id, marker.producer_epoch, marker.coordinator_epoch)
    if refused is not None:
        return refused.error_code
    log.write_marker(
        marker.producer_id, marker.producer_epoch, bool(marker.transaction_result), marker.coordinator_epoch
    )
    return ec.NONE


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    allowed = ctx.allows(Operation.ALTER, ResourceType.CLUSTER) or ctx.allows(
        Operation.CLUSTER_ACTION, ResourceType.CLUSTER
    )
    results = []
    for marker in request.markers:
        topics = []
        for t in marker.topics:
            codes = [
                ec.CLUSTER_AUTHORIZATION_FAILED if not allowed else _append(state, ctx, marker, t.name, p)
                for p in t.partition_indexes
            ]
            topics.append(
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p, "error_code": code}
                        for p, code in zip(t.partition_indexes, codes, strict=True)
                    ],
                }
            )
        results.append({"producer_id": marker.producer_id, "topics": topics})
    state.notify_all()  # long-polling read_committed fetches may move on
    return api_messages.build(WriteTxnMarkersResponse, ctx.api_version, {"markers": results})


API = Api(27, "WriteTxnMarkers", 1, 1, handle)
