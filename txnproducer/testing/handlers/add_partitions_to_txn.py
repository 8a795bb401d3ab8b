"""AddPartitionsToTxn (key 24): v0-5 (v0-4 while transaction.version < 2).

Behaviour, per partition (one error for all partitions of a transaction unless noted):
- empty transactional id: INVALID_REQUEST; this broker not its coordinator: NOT_COORDINATOR;
- any unknown partition: UNKNOWN_TOPIC_OR_PARTITION for it and OPERATION_NOT_ATTEMPTED for the others
  (``__consumer_offsets`` partitions need no log);
- otherwise ``TransactionCoordinator.add_partitions``: wrong producer id INVALID_PRODUCER_ID_MAPPING,
  wrong epoch PRODUCER_FENCED, markers in flight CONCURRENT_TRANSACTIONS; an add to an idle id starts
  the transaction.
The rules live in ``txn_coordinator.py``; this module checks placement and maps fields per version.

Authorization (KafkaApis.handleAddPartitionsToTxnRequest), before anything else:
- v0-3 (sent by producers): Write on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for
  every partition; then Write on each topic (``__consumer_offsets`` exempt): a refused topic's partitions
  TOPIC_AUTHORIZATION_FAILED, unknown ones UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED,
  and nothing is added.
- v4+ (sent by partition leaders): ClusterAction on the cluster, else the whole request is answered with the
  top-level CLUSTER_AUTHORIZATION_FAILED.

Version notes:
- v0-3: one transaction per request, sent by the producer (the ``v3_and_below_*`` fields).
- v0-1: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH (KIP-588).
- v4+ (KIP-890): a batch of transactions, as partition leaders send them; ``verify_only`` checks instead
  of adding (TV1 verification: TRANSACTION_ABORTABLE for a partition not in the transaction) and gives
  per-partition errors. The top-level error is always NONE.
- v5: a TV2 client; a transaction it starts is remembered as TV2 (decides how a timeout abort bumps the
  epoch).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import AddPartitionsToTxnResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import TRANSACTION_KEY, ClusterState
from ..security.acl import Operation, ResourceType
from ..txn_metadata import OFFSETS_TOPIC
from ._common import fenced_for_version, is_coordinator
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    resp_cls = AddPartitionsToTxnResponse
    topic_cls = resp_cls.AddPartitionsToTxnTopicResult
    part_cls = topic_cls.AddPartitionsToTxnPartitionResult

    def results(errors: dict[tuple[str, int], int]) -> list[Any]:
        grouped: dict[str, list[Any]] = {}
        for (topic, partition), code in errors.items():
            entry = part_cls(partition_index=partition, partition_error_code=code)
            grouped.setdefault(topic, []).append(entry)
        return [topic_cls(name=t, results_by_partition=ps) for t, ps in grouped.items()]

    def parts_of(topics: list[Any]) -> list[tuple[str, int]]:
        return [(t.name, int(p)) for t in topics for p in t.partitions]

    if version <= 3:
        tid = request.v3_and_below_transactional_id
        parts = parts_of(request.v3_and_below_topics)
        errors = _refusals(ctx, state, tid, parts) or _add_partitions_errors(
            state, ctx, tid, request.v3_and_below_producer_id, request.v3_and_below_producer_epoch, parts,
            verify_only=False, client_tv=1)
        errors = {tp: fenced_for_version(version, 2, code) for tp, code in errors.items()}
        return resp_cls[version](throttle_time_ms=0, results_by_topic_v3_and_below=results(errors))
    if not ctx.allows(Operation.CLUSTER_ACTION, ResourceType.CLUSTER):
        return resp_cls[version](throttle_time_ms=0, error_code=ec.CLUSTER_AUTHORIZATION_FAILED,
                                 results_by_transaction=[])
    out = []
    for txn in request.transactions:
        parts = parts_of(txn.topics)
        errors = _add_partitions_errors(state, ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                        parts, verify_only=bool(txn.verify_only),
                                        client_tv=2 if version >= 5 else 1)
        out.append(resp_cls.AddPartitionsToTxnResult(transactional_id=txn.transactional_id,
                                                      topic_results=results(errors)))
    return resp_cls[version](throttle_time_ms=0, error_code=ec.NONE, results_by_transaction=out)


def _refusals(ctx: RequestContext, state: ClusterState, tid: str,
              parts: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """A producer's request (v0-3) that its principal may not make: the error of each partition; else {}."""
    if not ctx.allows(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        return dict.fromkeys(parts, ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    refused = {t for t, _ in parts
               if t != OFFSETS_TOPIC and not ctx.allows(Operation.WRITE, ResourceType.TOPIC, t)}
    if not refused:
        return {}
    return {
        (t, p): ec.TOPIC_AUTHORIZATION_FAILED if t in refused
        else ec.UNKNOWN_TOPIC_OR_PARTITION if t != OFFSETS_TOPIC and state.partition_log(t, p) is None
        else ec.OPERATION_NOT_ATTEMPTED
        for t, p in parts
    }


def _add_partitions_errors(state: ClusterState, ctx: RequestContext, tid: str, pid: int, epoch: int,
                           parts: list[tuple[str, int]], verify_only: bool,
                           client_tv: int) -> dict[tuple[str, int], int]:
    if not tid:
        return dict.fromkeys(parts, ec.INVALID_REQUEST)
    if not is_coordinator(state, ctx, TRANSACTION_KEY, tid):
        return dict.fromkeys(parts, ec.NOT_COORDINATOR)
    unknown = [tp for tp in parts if tp[0] != OFFSETS_TOPIC and state.partition_log(*tp) is None]
    if unknown:
        return {
            tp: ec.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ec.OPERATION_NOT_ATTEMPTED for tp in parts
        }
    if verify_only:
        return state.txn.verify_partitions(tid, pid, epoch, parts)
    return dict.fromkeys(parts, state.txn.add_partitions(tid, pid, epoch, parts, client_tv=client_tv))


API = Api(24, "AddPartitionsToTxn", 0, 5, handle, tv1_max_version=4)
