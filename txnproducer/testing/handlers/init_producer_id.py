"""InitProducerId (key 22): v0-5, v0-6 with two-phase commit enabled.

Behaviour:
- With a transactional id: NOT_COORDINATOR unless this broker coordinates it; otherwise
  ``TransactionCoordinator.init_producer_id_v6`` - a first call allocates a producer id at epoch 0,
  later calls bump the epoch (aborting an ongoing transaction first: CONCURRENT_TRANSACTIONS, retry),
  KIP-360 bumps with the current producer id/epoch, a new producer id when the epoch is exhausted. The
  transaction timeout must be in (0, transaction.max.timeout.ms] (INVALID_TRANSACTION_TIMEOUT).
- Without one (idempotent producer): a fresh producer id at epoch 0 every time.
The rules live in ``txn_coordinator.py``; this module checks placement and maps fields per version.

Authorization (KafkaApis.handleInitProducerIdRequest), before the coordinator is asked: with a transactional
id, Write on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one, IdempotentWrite on the cluster or Write
on some topic (KIP-679; CLUSTER_AUTHORIZATION_FAILED). The answer then carries producer id and epoch -1.

Version notes:
- v0-2: no producer id/epoch in the request (no KIP-360 bump).
- v0-3: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH (KIP-588, v4 introduced it).
- v6 (KIP-939): ``enable2_pc`` / ``keep_prepared_txn`` and the ongoing transaction's producer id/epoch in
  the answer. Advertised only with ``MockCluster(enable_2pc=True)``; a v6 request that asks for 2PC on a
  cluster without it gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as the recorded broker answers.

Simplifications: producer ids come from one counter starting at 1000 (no ProducerIdManager blocks); no
COORDINATOR_LOAD_IN_PROGRESS unless injected.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import InitProducerIdResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import TRANSACTION_KEY, ClusterState
from ..security.acl import Operation, ResourceType
from ..txn_metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from ._common import fenced_for_version, is_coordinator
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    tid = request.transactional_id
    ongoing_pid, ongoing_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    refused = _refusal(ctx, tid)
    if refused != ec.NONE:
        error, pid, epoch = refused, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    elif tid and not is_coordinator(state, ctx, TRANSACTION_KEY, tid):
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


def _refusal(ctx: RequestContext, tid: str | None) -> int:
    """The authorization error of an InitProducerId for ``tid`` (None: an idempotent producer), or NONE."""
    if tid is not None:
        allowed = ctx.allows(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid)
        return ec.NONE if allowed else ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if ctx.allows(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER) or ctx.allows_some(
            Operation.WRITE, ResourceType.TOPIC):
        return ec.NONE
    return ec.CLUSTER_AUTHORIZATION_FAILED


API = Api(22, "InitProducerId", 0, 5, handle, two_pc_max_version=6)
