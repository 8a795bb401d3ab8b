"""TxnOffsetCommit (key 28): v0-5 (v0-4 while transaction.version < 2).

Behaviour:
- Sent to the *group* coordinator: NOT_COORDINATOR unless this broker coordinates the group id (checked
  before anything else); then an empty transactional id is INVALID_REQUEST.
- ``TransactionCoordinator.txn_offset_commit``: the group's ``__consumer_offsets`` partition must be in
  the transaction (TV1, after AddOffsetsToTxn) or is added implicitly (v5 with TV2); PRODUCER_FENCED
  is passed on as INVALID_PRODUCER_EPOCH; then the group checks generation and member (KIP-447:
  generation -1 always passes) and stages the offsets until the transaction's marker.
- One error code for every partition of the request, in request order grouped by topic.

Version notes:
- v2+: committed leader epoch (-1 before).
- v3+ (KIP-447): generation id, member id and group instance id are checked.
- v0-3: TRANSACTION_ABORTABLE (partition not in the transaction) is answered as INVALID_TXN_STATE.
- v5 with TV2 finalized: implicit add of the offsets partition, no AddOffsetsToTxn needed.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import TxnOffsetCommitResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY, ClusterState
from ._common import is_coordinator
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    offsets: dict[tuple[str, int], tuple[int, int, str | None]] = {}
    for topic in request.topics:
        for p in topic.partitions:
            leader_epoch = p.committed_leader_epoch if version >= 2 else -1
            offsets[(topic.name, int(p.partition_index))] = (int(p.committed_offset), int(leader_epoch),
                                                             p.committed_metadata)
    if not is_coordinator(state, ctx, GROUP_KEY, request.group_id):
        error = ec.NOT_COORDINATOR
    elif not request.transactional_id:
        error = ec.INVALID_REQUEST
    else:
        error = state.txn.txn_offset_commit(
            request.transactional_id, request.group_id, request.producer_id, request.producer_epoch,
            request.generation_id if version >= 3 else -1, request.member_id if version >= 3 else "",
            request.group_instance_id if version >= 3 else None, offsets, version)
    resp_cls = TxnOffsetCommitResponse
    topic_cls = resp_cls.TxnOffsetCommitResponseTopic
    part_cls = topic_cls.TxnOffsetCommitResponsePartition
    grouped: dict[str, list[Any]] = {}
    for topic_name, partition in offsets:
        grouped.setdefault(topic_name, []).append(part_cls(partition_index=partition, error_code=error))
    return resp_cls[version](throttle_time_ms=0,
                             topics=[topic_cls(name=t, partitions=ps) for t, ps in grouped.items()])


API = Api(28, "TxnOffsetCommit", 0, 5, handle, tv1_max_version=4)
