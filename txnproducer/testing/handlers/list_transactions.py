"""ListTransactions (key 66): v0-2.

Behaviour: the transactional ids this broker coordinates (never Dead ones), filtered by producer ids and
by state names; unknown state names are returned in ``unknown_state_filters``.

Authorization (KafkaApis.handleListTransactionsRequest): only the transactional ids the principal may describe
are listed.

Version notes:
- v1+: ``duration_filter`` - only transactions that started more than that many ms ago (-1: no filter).
- v2+: ``transactional_id_pattern`` - a regular expression the whole id must match; one that does not
  compile is INVALID_REGULAR_EXPRESSION with nothing listed.

Simplifications: the pattern is a Python ``re`` expression, not a Java one (they agree on the common
syntax); the duration filter compares against the start time the coordinator keeps (-1 outside a
transaction, so idle ids pass any duration filter).
"""

from __future__ import annotations

import re
from typing import Any

from kafka.protocol.admin.transactions import ListTransactionsResponse

from txnproducer._internal.protocol import error_codes as ec

from ..cluster_state import TRANSACTION_KEY, ClusterState
from ..security.acl import Operation, ResourceType
from ..txn_metadata import TxnState
from ._common import is_coordinator
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
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
        if md is None or md.state == TxnState.DEAD or not is_coordinator(state, ctx, TRANSACTION_KEY, tid):
            continue
        if pids and md.producer_id not in pids:
            continue
        if state_names and md.state not in wanted:
            continue
        if duration >= 0 and now - md.start_time_ms <= duration:
            continue
        if pattern is not None and pattern.fullmatch(tid) is None:
            continue
        if not ctx.allows(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            continue
        listed.append(resp_cls.TransactionState(transactional_id=tid, producer_id=md.producer_id,
                                                transaction_state=md.state.value))
    return resp_cls[version](throttle_time_ms=0, error_code=ec.NONE, unknown_state_filters=unknown,
                             transaction_states=listed)


API = Api(66, "ListTransactions", 0, 2, handle)
