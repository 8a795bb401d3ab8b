"""EndTxn (key 26): v0-5 (v0-4 while transaction.version < 2).

Behaviour:
- NOT_COORDINATOR when this broker does not coordinate the transactional id (an empty id goes on to the
  coordinator, which answers INVALID_REQUEST).
- ``TransactionCoordinator.end_txn`` decides: commit or abort of the ongoing transaction, retries of a
  lost answer, INVALID_TXN_STATE for an end that does not match the state, CONCURRENT_TRANSACTIONS while
  the markers are in flight. The markers (and the staged offsets of TxnOffsetCommit) are written
  synchronously inside this request unless a test holds them (``MockCluster.hold_markers``).
The rules live in ``txn_coordinator.py``; this module checks placement and maps fields per version.

Authorization (KafkaApis.handleEndTxnRequest): Write on the transactional id, before anything else;
otherwise TRANSACTIONAL_ID_AUTHORIZATION_FAILED with producer id and epoch -1.

Version notes:
- v0-1: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH (KIP-588).
- v5 with TV2 finalized (KIP-890): the coordinator bumps the epoch at every transaction end and the
  answer carries the producer id and epoch to continue with (a new producer id when the epoch runs out);
  v5 on a TV1 cluster keeps TV1 semantics. Before v5 the answer has no producer id/epoch.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import EndTxnResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import TRANSACTION_KEY, ClusterState
from ..security.acl import Operation, ResourceType
from ..txn_metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from ._common import fenced_for_version, is_coordinator
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    tid = request.transactional_id
    if not ctx.allows(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        error, pid, epoch = ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    elif tid and not is_coordinator(state, ctx, TRANSACTION_KEY, tid):
        error, pid, epoch = ec.NOT_COORDINATOR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    else:
        tv2 = version >= 5 and state.transaction_version >= 2
        error, pid, epoch = state.txn.end_txn(tid, request.producer_id, request.producer_epoch,
                                              bool(request.committed), tv2)
    return EndTxnResponse[version](throttle_time_ms=0, error_code=fenced_for_version(version, 2, error),
                                   producer_id=pid, producer_epoch=epoch)


API = Api(26, "EndTxn", 0, 5, handle, tv1_max_version=4)
