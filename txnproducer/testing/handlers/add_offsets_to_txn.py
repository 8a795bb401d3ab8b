"""AddOffsetsToTxn (key 25): v0-4.

Behaviour: empty transactional id INVALID_REQUEST; this broker not its coordinator NOT_COORDINATOR;
otherwise ``TransactionCoordinator.add_offsets`` adds the group's ``__consumer_offsets`` partition
(``abs(hashCode) % 50``, as the broker picks it) to the transaction, with the errors of
AddPartitionsToTxn. TV1 clients send it before TxnOffsetCommit; TV2 clients skip it (TxnOffsetCommit v5
adds the partition implicitly).

Authorization (KafkaApis.handleAddOffsetsToTxnRequest), before anything else: Write on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then Read on the group (GROUP_AUTHORIZATION_FAILED).

Version notes:
- v0-1: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH (KIP-588).
- Kafka advertises at most v4 whatever the transaction version (the TV1 cap is the same v4).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import AddOffsetsToTxnResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import TRANSACTION_KEY, ClusterState
from ..security.acl import Operation, ResourceType
from ._common import fenced_for_version, is_coordinator
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    tid = request.transactional_id
    if not ctx.allows(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        error = ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.allows(Operation.READ, ResourceType.GROUP, request.group_id):
        error = ec.GROUP_AUTHORIZATION_FAILED
    elif not tid:
        error = ec.INVALID_REQUEST
    elif not is_coordinator(state, ctx, TRANSACTION_KEY, tid):
        error = ec.NOT_COORDINATOR
    else:
        error = state.txn.add_offsets(tid, request.producer_id, request.producer_epoch, request.group_id)
    error = fenced_for_version(version, 2, error)
    return AddOffsetsToTxnResponse[version](throttle_time_ms=0, error_code=error)


API = Api(25, "AddOffsetsToTxn", 0, 4, handle, tv1_max_version=4)
