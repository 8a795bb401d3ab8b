"""Request handlers of the MockCluster's transaction coordinator (API keys 22, 24, 25, 26, 28, 65, 66).

Each handler checks coordinator placement (NOT_COORDINATOR when this broker does not own the
transactional id - or, for TxnOffsetCommit, the group), maps the request fields onto
:class:`~txnproducer.testing.txn_coordinator.TransactionCoordinator` (``state.txn``) and builds the
response for the request's version, including the version-dependent error codes (KIP-588: older
versions get INVALID_PRODUCER_EPOCH instead of PRODUCER_FENCED). The coordinator's rules are in
``txn_coordinator.py``; nothing here decides a transition.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kafka.protocol.admin.transactions import (
    DescribeTransactionsResponse,
    ListTransactionsResponse,
)
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)

from txnproducer._internal.protocol import error_codes as ec

from ._dispatch import RequestContext, handles
from .txn_coordinator import GROUP_KEY, TXN_KEY, fenced_for_version
from .txn_metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, OFFSETS_TOPIC, TxnState

if TYPE_CHECKING:  # pragma: no cover
    from .cluster_state import ClusterState

def _coordinator_ok(state: ClusterState, ctx: RequestContext, key_type: int, key: str) -> bool:
    return int(state.coordinator_for(key_type, key)) == ctx.broker_id


@handles(22)
def handle_init_producer_id(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    tid = request.transactional_id
    ongoing_pid, ongoing_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    if tid and not _coordinator_ok(state, ctx, TXN_KEY, tid):
        error, pid, epoch = ec.NOT_COORDINATOR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    else:
        error, pid, epoch, ongoing_pid, ongoing_epoch = state.txn.init_producer_id_v6(
            tid, request.transaction_timeout_ms,
            request.producer_id if version >= 3 else NO_PRODUCER_ID,
            request.producer_epoch if version >= 3 else NO_PRODUCER_EPOCH,
            enable_2pc=bool(getattr(request, "enable2_pc", False)) if version >= 6 else False,
            keep_prepared_txn=bool(getattr(request, "keep_prepared_txn", False)) if version >= 6 else False,
        )
    error = fenced_for_version(version, 4, error)
    if version >= 6:
        return InitProducerIdResponse[version](throttle_time_ms=0, error_code=error, producer_id=pid,
                                               producer_epoch=epoch, ongoing_txn_producer_id=ongoing_pid,
                                               ongoing_txn_producer_epoch=ongoing_epoch)
    return InitProducerIdResponse[version](throttle_time_ms=0, error_code=error, producer_id=pid,
                                           producer_epoch=epoch)


@handles(24)
def handle_add_partitions_to_txn(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
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
        errors = _add_partitions_errors(state, ctx, tid, request.v3_and_below_producer_id,
                                        request.v3_and_below_producer_epoch, parts, verify_only=False,
                                        client_tv=1)
        errors = {tp: fenced_for_version(version, 2, code) for tp, code in errors.items()}
        return resp_cls[version](throttle_time_ms=0, results_by_topic_v3_and_below=results(errors))
    out = []
    for txn in request.transactions:
        parts = parts_of(txn.topics)
        errors = _add_partitions_errors(state, ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                        parts, verify_only=bool(txn.verify_only),
                                        client_tv=2 if version >= 5 else 1)
        out.append(resp_cls.AddPartitionsToTxnResult(transactional_id=txn.transactional_id,
                                                      topic_results=results(errors)))
    return resp_cls[version](throttle_time_ms=0, error_code=ec.NONE, results_by_transaction=out)


def _add_partitions_errors(state: ClusterState, ctx: RequestContext, tid: str, pid: int, epoch: int,
                           parts: list[tuple[str, int]], verify_only: bool,
                           client_tv: int) -> dict[tuple[str, int], int]:
    if not tid:
        return dict.fromkeys(parts, ec.INVALID_REQUEST)
    if not _coordinator_ok(state, ctx, TXN_KEY, tid):
        return dict.fromkeys(parts, ec.NOT_COORDINATOR)
    unknown = [tp for tp in parts if tp[0] != OFFSETS_TOPIC and state.partition_log(*tp) is None]
    if unknown:
        return {
            tp: ec.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ec.OPERATION_NOT_ATTEMPTED for tp in parts
        }
    if verify_only:
        return state.txn.verify_partitions(tid, pid, epoch, parts)
    return dict.fromkeys(parts, state.txn.add_partitions(tid, pid, epoch, parts, client_tv=client_tv))


@handles(25)
def handle_add_offsets_to_txn(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    tid = request.transactional_id
    if not tid:
        error = ec.INVALID_REQUEST
    elif not _coordinator_ok(state, ctx, TXN_KEY, tid):
        error = ec.NOT_COORDINATOR
    else:
        error = state.txn.add_offsets(tid, request.producer_id, request.producer_epoch, request.group_id)
    error = fenced_for_version(version, 2, error)
    return AddOffsetsToTxnResponse[version](throttle_time_ms=0, error_code=error)


@handles(26)
def handle_end_txn(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    tid = request.transactional_id
    if tid and not _coordinator_ok(state, ctx, TXN_KEY, tid):
        error, pid, epoch = ec.NOT_COORDINATOR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    else:
        tv2 = version >= 5 and state.transaction_version >= 2
        error, pid, epoch = state.txn.end_txn(tid, request.producer_id, request.producer_epoch,
                                              bool(request.committed), tv2)
    return EndTxnResponse[version](throttle_time_ms=0, error_code=fenced_for_version(version, 2, error),
                                   producer_id=pid, producer_epoch=epoch)


@handles(28)
def handle_txn_offset_commit(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    offsets: dict[tuple[str, int], tuple[int, int, str | None]] = {}
    for topic in request.topics:
        for p in topic.partitions:
            leader_epoch = p.committed_leader_epoch if version >= 2 else -1
            offsets[(topic.name, int(p.partition_index))] = (int(p.committed_offset), int(leader_epoch),
                                                             p.committed_metadata)
    if not _coordinator_ok(state, ctx, GROUP_KEY, request.group_id):
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


@handles(65)
def handle_describe_transactions(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    resp_cls = DescribeTransactionsResponse
    state_cls = resp_cls.TransactionState
    topic_cls = state_cls.TopicData
    out = []
    for tid in request.transactional_ids:
        entry: dict[str, Any] = {"error_code": ec.NONE, "transactional_id": tid, "transaction_state": "",
                                 "transaction_timeout_ms": 0, "transaction_start_time_ms": 0,
                                 "producer_id": 0, "producer_epoch": 0, "topics": []}
        md = state.txn.metadata(tid) if tid else None
        if not tid:
            entry["error_code"] = ec.INVALID_REQUEST
        elif not _coordinator_ok(state, ctx, TXN_KEY, tid):
            entry["error_code"] = ec.NOT_COORDINATOR
        elif md is None or md.state == TxnState.DEAD:
            entry["error_code"] = ec.TRANSACTIONAL_ID_NOT_FOUND
        else:
            entry.update(transaction_state=md.state.value, transaction_timeout_ms=md.timeout_ms,
                         transaction_start_time_ms=md.start_time_ms, producer_id=md.producer_id,
                         producer_epoch=md.producer_epoch,
                         topics=[topic_cls(topic=t, partitions=ps) for t, ps in md.topics_view()])
        out.append(state_cls(**entry))
    return resp_cls[ctx.api_version](throttle_time_ms=0, transaction_states=out)


@handles(66)
def handle_list_transactions(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    resp_cls = ListTransactionsResponse
    state_names = list(request.state_filters or [])
    unknown = [n for n in state_names if TxnState.by_name(n) is None]
    wanted = {TxnState.by_name(n) for n in state_names} - {None}
    pids = set(request.producer_id_filters or [])
    duration = int(request.duration_filter) if version >= 1 else -1
    pattern_text = request.transactional_id_pattern if version >= 2 else None
    pattern = None
    if pattern_text:
        try:
            pattern = re.compile(pattern_text)
        except re.error:
            return resp_cls[version](throttle_time_ms=0, error_code=ec.INVALID_REGULAR_EXPRESSION,
                                     unknown_state_filters=[], transaction_states=[])
    now = int(state.now_ms())
    listed = []
    for tid in state.txn.transactional_ids():
        md = state.txn.metadata(tid)
        if md is None or md.state == TxnState.DEAD or not _coordinator_ok(state, ctx, TXN_KEY, tid):
            continue
        if pids and md.producer_id not in pids:
            continue
        if state_names and md.state not in wanted:
            continue
        if duration >= 0 and now - md.start_time_ms <= duration:
            continue
        if pattern is not None and pattern.fullmatch(tid) is None:
            continue
        listed.append(resp_cls.TransactionState(transactional_id=tid, producer_id=md.producer_id,
                                                transaction_state=md.state.value))
    return resp_cls[version](throttle_time_ms=0, error_code=ec.NONE, unknown_state_filters=unknown,
                             transaction_states=listed)

