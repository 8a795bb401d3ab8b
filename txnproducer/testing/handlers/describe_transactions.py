"""DescribeTransactions (key 65): v0.

Behaviour, per transactional id: empty INVALID_REQUEST; not coordinated here NOT_COORDINATOR; never
initialised (or Dead) TRANSACTIONAL_ID_NOT_FOUND; otherwise the coordinator's view - state name (Empty,
Ongoing, PrepareCommit, ...), timeout, start time (-1 outside a transaction), producer id and epoch, and
the partitions of the ongoing transaction in the order they were added, the group's
``__consumer_offsets`` partition included, as the broker shows it.

Authorization (KafkaApis.handleDescribeTransactionsRequest): Describe on each transactional id, checked first
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED); a described transaction lists only the partitions of topics the
principal may describe.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin.transactions import DescribeTransactionsResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import TRANSACTION_KEY, ClusterState
from ..security.acl import Operation, ResourceType
from ..txn_metadata import TxnState
from ._common import is_coordinator
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    resp_cls = DescribeTransactionsResponse
    state_cls = resp_cls.TransactionState
    topic_cls = state_cls.TopicData
    out = []
    for tid in request.transactional_ids:
        entry: dict[str, Any] = {"error_code": ec.NONE, "transactional_id": tid, "transaction_state": "",
                                 "transaction_timeout_ms": 0, "transaction_start_time_ms": 0,
                                 "producer_id": 0, "producer_epoch": 0, "topics": []}
        md = state.txn.metadata(tid) if tid else None
        if not ctx.allows(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            entry["error_code"] = ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif not tid:
            entry["error_code"] = ec.INVALID_REQUEST
        elif not is_coordinator(state, ctx, TRANSACTION_KEY, tid):
            entry["error_code"] = ec.NOT_COORDINATOR
        elif md is None or md.state == TxnState.DEAD:
            entry["error_code"] = ec.TRANSACTIONAL_ID_NOT_FOUND
        else:
            entry.update(transaction_state=md.state.value, transaction_timeout_ms=md.timeout_ms,
                         transaction_start_time_ms=md.start_time_ms, producer_id=md.producer_id,
                         producer_epoch=md.producer_epoch,
                         topics=[topic_cls(topic=t, partitions=ps) for t, ps in md.topics_view()
                                 if ctx.allows(Operation.DESCRIBE, ResourceType.TOPIC, t)])
        out.append(state_cls(**entry))
    return resp_cls[ctx.api_version](throttle_time_ms=0, transaction_states=out)


API = Api(65, "DescribeTransactions", 0, 0, handle)
