"""InitProducerId (key 22): v0-6 - fence a transactional id, which makes its coordinator abort its open
transaction (the Java Admin's ``fenceProducers``).

Why this is how a *live* transaction is aborted from outside: the coordinator is the one that knows all
of a transaction's partitions and writes the ABORT markers to every one of them. A new InitProducerId for
the id bumps its epoch - the producer holding it is fenced (its next request fails with
PRODUCER_FENCED / INVALID_PRODUCER_EPOCH) - and first aborts the ongoing transaction: the coordinator
answers CONCURRENT_TRANSACTIONS while its markers are written, and the request is sent again until it
succeeds. A transaction being committed (PrepareCommit) is completed as a commit, not aborted.

The request carries producer id/epoch -1 (no KIP-360 bump: fencing is meant) and the id's own transaction
timeout (what DescribeTransactions reported), so the id's settings stay as its producer left them.

Errors: CONCURRENT_TRANSACTIONS and COORDINATOR_LOAD_IN_PROGRESS are asked again after
``retry_backoff_ms``; NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE look the coordinator up again, and so
does a coordinator that stopped answering once the cluster names another (``network/grey_failures.py``:
the request it holds, if it ever handles it, fails there - it no longer leads the transaction log).
Authorization (Kafka 4.1's ``handleInitProducerIdRequest``): Write on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED, an :class:`AdminAuthorizationError`).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import InitProducerIdRequest

from txnproducer._internal.network.connection_errors import CoordinatorMoved
from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, UnexpectedBrokerError
from .find_coordinator import TRANSACTION_KEY_TYPE, find_transaction_coordinators

__all__ = ["fence_transactional_id"]

_RETRY = frozenset({ec.CONCURRENT_TRANSACTIONS, ec.COORDINATOR_LOAD_IN_PROGRESS})
_REFIND = frozenset({ec.NOT_COORDINATOR, ec.COORDINATOR_NOT_AVAILABLE})


def fence_transactional_id(
    conn: AdminConnection, transactional_id: str, timeout_ms: int, deadline: Deadline
) -> tuple[int, int]:
    """Fence ``transactional_id`` (module docstring); returns the producer id and epoch it now has."""

    def build(version: int) -> Any:
        values: dict[str, Any] = {"transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms}
        if version >= 3:
            values.update(producer_id=-1, producer_epoch=-1)
        return InitProducerIdRequest(version=version, **values)

    last = ""
    while True:
        node = find_transaction_coordinators(conn, [transactional_id], deadline)[transactional_id]
        what = f"fencing transactional id {transactional_id!r} on broker {node}{last}"
        try:
            answer = conn.send(node, InitProducerIdRequest, build, deadline, what,
                               coordinator_of=(TRANSACTION_KEY_TYPE, transactional_id))
        except CoordinatorMoved as exc:  # it stopped answering, and the cluster moved on: find again
            last = f" (broker {node} stopped answering; broker {exc.node_id} coordinates now)"
            continue
        code = int(answer.error_code)
        if code == ec.NONE:
            return int(answer.producer_id), int(answer.producer_epoch)
        if code == ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            raise AdminAuthorizationError(
                f"not authorized to fence transactional id {transactional_id!r}"
                " (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): grant Write on"
                f" TransactionalId {transactional_id!r}",
                error_code=code,
                acl=f"Write on TransactionalId {transactional_id!r}",
            )
        if code not in _RETRY and code not in _REFIND:
            raise UnexpectedBrokerError(
                f"InitProducerId for {transactional_id!r} answered {ec.error_name(code)}", error_code=code
            )
        last = f" (last answer: {ec.error_name(code)})"
        conn.backoff(deadline, f"fencing transactional id {transactional_id!r}{last}")
