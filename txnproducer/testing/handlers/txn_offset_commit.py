"""TxnOffsetCommit (key 28): v0-5 (v0-4 while transaction.version < 2).

Behaviour:
- Sent to the *group* coordinator: NOT_COORDINATOR unless this broker coordinates the group id (checked
  before anything else); then an empty transactional id is INVALID_REQUEST.
- ``TransactionCoordinator.txn_offset_commit``: the group's ``__consumer_offsets`` partition must be in
  the transaction (TV1, after AddOffsetsToTxn) or is added implicitly (v5 with TV2); PRODUCER_FENCED
  is passed on as INVALID_PRODUCER_EPOCH; then the group checks generation and member (KIP-447:
  generation -1 always passes) and stages the offsets until the transaction's marker.
- One error code for every partition of the request, in request order grouped by topic.

Authorization (KafkaApis.handleTxnOffsetCommitRequest), before the coordinator checks: Write on the
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then Read on the group (GROUP_AUTHORIZATION_FAILED),
each for every partition; then Read on each topic - a refused topic's partitions TOPIC_AUTHORIZATION_FAILED,
the other partitions go on to the coordinator (and are committed if it accepts them).

Version notes:
- v2+: committed leader epoch (-1 before).
- v3+ (KIP-447): generation id, member id and group instance id are checked.
- v0-3: TRANSACTION_ABORTABLE (partition not in the transaction) is answered as INVALID_TXN_STATE.
- v5 with TV2 finalized: implicit add of the offsets partition, no AddOffsetsToTxn needed (the request is
  held while the transaction coordinator it must ask is black-holed, see ``coordinator_to_verify_with``).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import TxnOffsetCommitResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import GROUP_KEY, ClusterState
from ..security.acl import Operation, ResourceType
from ..txn_metadata import OFFSETS_TOPIC, offsets_partition_for
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
    errors = _refusals(ctx, request, offsets)
    allowed = {tp: value for tp, value in offsets.items() if tp not in errors}
    if allowed or not offsets:  # (an empty request still reaches the coordinator, as it always did here)
        errors.update(dict.fromkeys(allowed, _commit(state, ctx, request, allowed)))
    resp_cls = TxnOffsetCommitResponse
    topic_cls = resp_cls.TxnOffsetCommitResponseTopic
    part_cls = topic_cls.TxnOffsetCommitResponsePartition
    grouped: dict[str, list[Any]] = {}
    for topic_name, partition in offsets:
        grouped.setdefault(topic_name, []).append(
            part_cls(partition_index=partition, error_code=errors[(topic_name, partition)]))
    return resp_cls[version](throttle_time_ms=0,
                             topics=[topic_cls(name=t, partitions=ps) for t, ps in grouped.items()])


def coordinator_to_verify_with(state: ClusterState, ctx: RequestContext, request: Any) -> int | None:
    """The transaction coordinator this group coordinator asks before committing ``request``: under TV2
    (v5) it adds the group's offsets partition to the transaction first, when it is not in it yet. None
    when nothing is asked. The network side holds such a request while that coordinator does not answer
    (``server.py``)."""
    tid = request.transactional_id
    if not tid or ctx.api_version < 5 or state.transaction_version < 2:
        return None
    if not is_coordinator(state, ctx, GROUP_KEY, request.group_id):
        return None
    md = state.txn.metadata(tid)
    if md is not None and (OFFSETS_TOPIC, offsets_partition_for(request.group_id)) in md.partitions:
        return None
    return state.coordinator_for(1, tid)


def _refusals(ctx: RequestContext, request: Any,
              offsets: dict[tuple[str, int], Any]) -> dict[tuple[str, int], int]:
    """The partitions the principal may not commit, with their errors (every partition when the
    transactional id or the group is refused)."""
    if not ctx.allows(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return dict.fromkeys(offsets, ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.allows(Operation.READ, ResourceType.GROUP, request.group_id):
        return dict.fromkeys(offsets, ec.GROUP_AUTHORIZATION_FAILED)
    readable = {t: ctx.allows(Operation.READ, ResourceType.TOPIC, t) for t, _ in offsets}
    return {tp: ec.TOPIC_AUTHORIZATION_FAILED for tp in offsets if not readable[tp[0]]}


def _commit(state: ClusterState, ctx: RequestContext, request: Any,
            offsets: dict[tuple[str, int], tuple[int, int, str | None]]) -> int:
    """The coordinator's one error for ``offsets`` (staged until the transaction's marker on success)."""
    version = ctx.api_version
    if not is_coordinator(state, ctx, GROUP_KEY, request.group_id):
        return ec.NOT_COORDINATOR
    if not request.transactional_id:
        return ec.INVALID_REQUEST
    return state.txn.txn_offset_commit(
        request.transactional_id, request.group_id, request.producer_id, request.producer_epoch,
        request.generation_id if version >= 3 else -1, request.member_id if version >= 3 else "",
        request.group_instance_id if version >= 3 else None, offsets, version)


API = Api(28, "TxnOffsetCommit", 0, 5, handle, tv1_max_version=4)
