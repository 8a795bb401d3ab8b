"""DescribeTransactions (key 65): v0 - a transactional id as its coordinator sees it.

Sent to each id's coordinator (FindCoordinator first), many ids per request. The answer: state, producer
id and epoch, timeout, the current transaction's start time (-1 outside one), and its partitions - or,
while it is being ended, the partitions whose markers are not yet written.

Errors, per id (the Java Admin's ``DescribeTransactionsHandler``): TRANSACTIONAL_ID_NOT_FOUND is
:class:`TransactionalIdNotFoundError` (or None with ``missing_ok``, as ``find-hanging`` needs it);
COORDINATOR_LOAD_IN_PROGRESS is asked again, NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE look the
coordinator up again, until the deadline; so does a coordinator that stopped answering once the cluster
names another (``network/grey_failures.py``), without waiting out ``request_timeout_ms``. Authorization
(Kafka 4.1's ``handleDescribeTransactionsRequest``): Describe on each id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED, an :class:`AdminAuthorizationError`); partitions of topics the
principal may not Describe are left out of the answer silently.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from kafka.protocol.admin.transactions import DescribeTransactionsRequest

from txnproducer._internal.network.connection_errors import CoordinatorMoved
from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, TransactionalIdNotFoundError, UnexpectedBrokerError
from .find_coordinator import TRANSACTION_KEY_TYPE, find_transaction_coordinators
from .results import TopicPartition, TransactionDescription

__all__ = ["describe_transactions"]

_REFIND = frozenset({ec.NOT_COORDINATOR, ec.COORDINATOR_NOT_AVAILABLE})


def _description(entry: Any, coordinator: int) -> TransactionDescription:
    start = int(entry.transaction_start_time_ms)
    parts = tuple(sorted(TopicPartition(str(t.topic), int(p)) for t in entry.topics for p in t.partitions))
    return TransactionDescription(
        str(entry.transactional_id),
        coordinator,
        str(entry.transaction_state),
        int(entry.producer_id),
        int(entry.producer_epoch),
        int(entry.transaction_timeout_ms),
        start if start >= 0 else None,
        parts,
    )


def _request(transactional_ids: list[str], version: int) -> Any:
    return DescribeTransactionsRequest(version=version, transactional_ids=transactional_ids)


def describe_transactions(
    conn: AdminConnection, transactional_ids: Sequence[str], deadline: Deadline, *, missing_ok: bool = False
) -> dict[str, TransactionDescription | None]:
    """Each id's description; None for an id the coordinator does not know when ``missing_ok``."""
    out: dict[str, TransactionDescription | None] = {}
    pending = sorted(set(transactional_ids))
    last = ""
    while pending:
        by_coordinator: dict[int, list[str]] = defaultdict(list)
        for tid, node in find_transaction_coordinators(conn, pending, deadline).items():
            by_coordinator[node].append(tid)
        retry = moved = False
        for node, ids in sorted(by_coordinator.items()):
            what = f"describing {len(ids)} transactional id(s) on broker {node}{last}"
            try:
                answer = conn.send(
                    node,
                    DescribeTransactionsRequest,
                    functools.partial(_request, ids),
                    deadline,
                    what,
                    coordinator_of=(TRANSACTION_KEY_TYPE, ids[0]),
                )
            except CoordinatorMoved as exc:  # it stopped answering, and the cluster moved on: find again
                moved = True
                last = f" (broker {node} stopped answering; broker {exc.node_id} coordinates now)"
                continue
            for entry in answer.transaction_states:
                tid, code = str(entry.transactional_id), int(entry.error_code)
                if code == ec.NONE:
                    out[tid] = _description(entry, node)
                elif code == ec.TRANSACTIONAL_ID_NOT_FOUND and missing_ok:
                    out[tid] = None
                elif code == ec.TRANSACTIONAL_ID_NOT_FOUND:
                    raise TransactionalIdNotFoundError(
                        f"transactional id {tid!r} is unknown to its coordinator (broker {node}): never used,"
                        " or expired after transactional.id.expiration.ms; check the spelling"
                    )
                elif code == ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                    raise AdminAuthorizationError(
                        f"not authorized to describe transactional id {tid!r}"
                        " (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): grant Describe on"
                        f" TransactionalId {tid!r}",
                        error_code=code,
                        acl=f"Describe on TransactionalId {tid!r}",
                    )
                elif code in _REFIND or code == ec.COORDINATOR_LOAD_IN_PROGRESS:
                    retry, last = True, f" (last answer: {ec.error_name(code)})"
                else:
                    raise UnexpectedBrokerError(
                        f"DescribeTransactions for {tid!r} answered {ec.error_name(code)}", error_code=code
                    )
        pending = [t for t in pending if t not in out]
        if retry and not moved and pending:
            conn.backoff(deadline, f"describing {len(pending)} transactional id(s){last}")
    return out
