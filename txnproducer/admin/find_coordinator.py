"""FindCoordinator (key 10): v0-6 - which broker coordinates each transactional id (key type 1).

Why: DescribeTransactions and InitProducerId go to a transactional id's coordinator, the leader of its
``__transaction_state`` partition. v4+ asks for many ids at once (``coordinator_keys``); older brokers get
one request per id.

Errors, per id (the Java Admin's ``CoordinatorStrategy``): COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS and NOT_COORDINATOR are asked again after ``retry_backoff_ms`` until the
call's deadline (a new cluster creates its transaction log on first use);
TRANSACTIONAL_ID_AUTHORIZATION_FAILED is :class:`AdminAuthorizationError` - Kafka 4.1's
``handleFindCoordinatorRequest`` needs Describe on the transactional id.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, UnexpectedBrokerError

__all__ = ["find_transaction_coordinators"]

TRANSACTION_KEY_TYPE = 1
_RETRY = frozenset({ec.COORDINATOR_NOT_AVAILABLE, ec.COORDINATOR_LOAD_IN_PROGRESS, ec.NOT_COORDINATOR})


def _answers(response: Any, version: int, ids: Sequence[str]) -> list[tuple[str, int, int, str, int]]:
    """(id, error, node, host, port) per id, whatever the version's shape."""
    if version >= 4:
        return [
            (str(c.key), int(c.error_code), int(c.node_id), str(c.host), int(c.port))
            for c in response.coordinators
        ]
    return [(ids[0], int(response.error_code), int(response.node_id), str(response.host), int(response.port))]


def _request(pending: list[str], sent: dict[str, Any], version: int) -> Any:
    """The request for ``version`` (v4+: every pending id; before: the first); ``sent`` records what
    was asked."""
    asked = pending if version >= 4 else pending[:1]
    sent.update(version=version, asked=asked)
    if version >= 4:
        return FindCoordinatorRequest(version=version, key_type=TRANSACTION_KEY_TYPE, coordinator_keys=asked)
    return FindCoordinatorRequest(version=version, key=asked[0], key_type=TRANSACTION_KEY_TYPE)


def find_transaction_coordinators(
    conn: AdminConnection, transactional_ids: Sequence[str], deadline: Deadline
) -> dict[str, int]:
    """The coordinator's broker id of each transactional id."""
    found: dict[str, int] = {}
    pending = sorted(set(transactional_ids))
    last_error = ""
    while pending:
        sent: dict[str, Any] = {}
        what = f"finding the coordinator of {len(pending)} transactional id(s){last_error}"
        answer = conn.send_any(
            FindCoordinatorRequest, functools.partial(_request, list(pending), sent), deadline, what
        )
        version, asked = sent["version"], sent["asked"]
        retry = False
        for tid, code, coordinator, host, port in _answers(answer, version, asked):
            if code == ec.NONE:
                conn.know_broker(coordinator, host, port)
                found[tid] = coordinator
            elif code in _RETRY:
                retry, last_error = True, f" (last answer: {ec.error_name(code)})"
            elif code == ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                raise AdminAuthorizationError(
                    f"not authorized to find the coordinator of transactional id {tid!r}"
                    f" (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): grant Describe on TransactionalId {tid!r}",
                    error_code=code,
                    acl=f"Describe on TransactionalId {tid!r}",
                )
            else:
                raise UnexpectedBrokerError(
                    f"FindCoordinator for transactional id {tid!r} answered {ec.error_name(code)}",
                    error_code=code,
                )
        pending = [t for t in pending if t not in found]
        if retry and pending:
            conn.backoff(deadline, what)
    return found
