"""WriteTxnMarkers (key 27): v1-2 - write the ABORT marker of one producer's transaction on one partition.

This is how a *hanging* transaction ends (KIP-664, the Java Admin's ``abortTransaction``): the request
a coordinator normally sends the partition leaders, sent by an operator to the leader of the partition
the coordinator forgot. The leader appends the ABORT control batch for the producer id, which closes the
producer's open transaction there: the last stable offset moves on and ``read_committed`` consumers
skip the aborted records. The coordinator is not involved and not told - which is why it must be a
transaction the coordinator no longer tracks (``abort.py`` checks that first).

The marker carries the producer id and epoch the leader holds for the open transaction and a coordinator
epoch not below the one of the producer's last marker (DescribeProducers gives all three; -1, no marker
yet, becomes 0 as in ``kafka-transactions.sh``). The leader refuses an older epoch (INVALID_PRODUCER_EPOCH)
or coordinator epoch (TRANSACTION_COORDINATOR_FENCED): the transaction was ended or moved on meanwhile.

Versions: Kafka 4.0 removed v0, 4.1 speaks v1. v2 (Kafka 4.2, KIP-1228) adds each marker's
``transaction_version``; a leader checks a TV2 marker's epoch strictly (the coordinator's TV2 markers
carry epoch + 1). An operator's marker carries the epoch the partition already has, so it is sent as
version 0 ("legacy", the field's default and what a marker without a version means), which keeps the
leader's pre-KIP-1228 check (marker epoch >= the producer's epoch) on every transaction version.

Authorization (Kafka 4.1's ``handleWriteTxnMarkersRequest``): Alter on the Cluster, or else ClusterAction
on the Cluster - normally only brokers (and super users) have either; refused, every partition answers
CLUSTER_AUTHORIZATION_FAILED (an :class:`AdminAuthorizationError`).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import WriteTxnMarkersRequest

from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, NothingToAbortError, UnexpectedBrokerError
from .results import TopicPartition

__all__ = ["LEGACY_TRANSACTION_VERSION", "MOVED", "write_abort_marker"]

LEGACY_TRANSACTION_VERSION = 0
MOVED = frozenset({ec.NOT_LEADER_OR_FOLLOWER, ec.UNKNOWN_TOPIC_OR_PARTITION})
CLUSTER_ACL = "Alter or ClusterAction on the Cluster"


def _request(
    tp: TopicPartition, producer_id: int, producer_epoch: int, coordinator_epoch: int, version: int
) -> Any:
    marker: dict[str, Any] = {
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "transaction_result": False,  # ABORT
        "topics": [
            WriteTxnMarkersRequest.WritableTxnMarker.WritableTxnMarkerTopic(
                name=tp.topic, partition_indexes=[tp.partition]
            )
        ],
        "coordinator_epoch": max(coordinator_epoch, 0),
    }
    if version >= 2:
        marker["transaction_version"] = LEGACY_TRANSACTION_VERSION
    return WriteTxnMarkersRequest(
        version=version, markers=[WriteTxnMarkersRequest.WritableTxnMarker(**marker)]
    )


def write_abort_marker(
    conn: AdminConnection,
    leader: int,
    tp: TopicPartition,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    deadline: Deadline,
) -> int:
    """Ask ``leader`` to write the ABORT marker; returns NONE, or a code of :data:`MOVED` (the
    caller looks the leader up again). Raises for everything else."""
    answer = conn.send(
        leader,
        WriteTxnMarkersRequest,
        lambda v: _request(tp, producer_id, producer_epoch, coordinator_epoch, v),
        deadline,
        f"writing the ABORT marker of producer {producer_id} on {tp}",
    )
    codes = [int(p.error_code) for m in answer.markers for t in m.topics for p in t.partitions]
    if len(codes) != 1:
        raise UnexpectedBrokerError(
            f"WriteTxnMarkers on broker {leader} answered {len(codes)} results for one partition"
        )
    code = codes[0]
    if code == ec.NONE or code in MOVED:
        return code
    if code == ec.CLUSTER_AUTHORIZATION_FAILED:
        raise AdminAuthorizationError(
            f"not authorized to write transaction markers on {tp} (CLUSTER_AUTHORIZATION_FAILED): grant"
            f" {CLUSTER_ACL} (usually only brokers and super users have it)",
            error_code=code,
            acl=CLUSTER_ACL,
        )
    if code in (ec.INVALID_PRODUCER_EPOCH, ec.PRODUCER_FENCED):
        raise NothingToAbortError(
            f"the leader of {tp} holds producer {producer_id} at an epoch above {producer_epoch}"
            f" ({ec.error_name(code)}): its transaction was ended or fenced meanwhile; nothing was written",
            error_code=code,
        )
    if code == ec.TRANSACTION_COORDINATOR_FENCED:
        raise NothingToAbortError(
            f"coordinator epoch {coordinator_epoch} is older than the one of producer {producer_id}'s last"
            f" marker on {tp} (TRANSACTION_COORDINATOR_FENCED): use the coordinator epoch describe-producers"
            " shows; nothing was written",
            error_code=code,
        )
    raise UnexpectedBrokerError(f"WriteTxnMarkers for {tp} answered {ec.error_name(code)}", error_code=code)
