"""Grey failures on the produce path: leave a broker once the cluster has moved on from it.

A SIGSTOPped or hung broker keeps its connections open. The controller fences it after
``broker.session.timeout.ms`` and moves its partitions and coordinators to other brokers, but a
request already sent to it would wait ``request_timeout_ms`` (30 s) for an answer, and the Java client
waits just as long. Requests to coordinators and lookups are watched by the network layer
(``network/grey_failures.py``: a coordinator request is abandoned once another broker is named its
coordinator, and sent there); this watch adds what only the Sender knows - which Produce requests are
overdue, and why. It changes only *when* an unanswered request is given up, never what is sent, so the
idempotence guarantees stay those of an ordinary retry:

- batches go again with their producer id, epoch and sequence numbers, so a batch the frozen
  broker did append is answered as a duplicate by the new leader (it was replicated before the
  broker froze, or it was never acknowledged to the in-sync replicas and is truncated when the
  broker rejoins) and one it did not append is written once.

Three cases, all decided by asking brokers that answer (never one with an unanswered request):

- a Produce is unanswered and the partition's leader moved: leave the old leader;
- a Produce is unanswered by a leader that has not moved (or a TxnOffsetCommit by a group
  coordinator that has not), and FindCoordinator names another coordinator for our transactional
  id: the leader is waiting on its own request to the frozen coordinator (the KIP-890 check of a
  partition new to the transaction, which Kafka's leader keeps waiting on after the coordinator
  moved; under TV2 the group coordinator adds the offsets partition the same way). The watch
  adopts the new coordinator - so that EndTxn goes there and never to the frozen broker, whose
  stale state answers PRODUCER_FENCED when it wakes up - and closes the waiting broker's
  connection: the request goes again, and that broker asks the new coordinator. A stuck Produce,
  if the leader ever completes it, is a duplicate of the resent batch (same sequence) or fails
  its check; a stuck TxnOffsetCommit stages the same offsets again; nothing is written twice;
- a coordinator request cannot be sent because its broker's connection is not ready (a new
  connection to a frozen broker: its kernel takes it, its ApiVersions is never answered, and only
  ``socket_connection_setup_timeout_ms``, 10 s, ends it): once another broker is named the
  coordinator, the transaction manager adopts it and the request goes there.

Why the waiting broker's connection is closed rather than the one request abandoned: that broker is
alive and Kafka handles one request at a time per connection, so a request sent again on the same
connection would queue behind the one it holds. A frozen leader's connection is closed for the same
reason the Java client closes a connection after a request timeout: nothing behind the unanswered
request would be answered either.

Why a separate watch rather than a shorter ``request_timeout_ms``: a slow but healthy broker
(a long GC, a large fsync) must keep its requests; only the cluster saying that someone else
now leads the partition, or coordinates the transaction, is reason to leave it.

May import: network, batching, protocol.
"""

from __future__ import annotations

from typing import Any

from txnproducer._internal.batching.accumulator import RecordAccumulator
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.network.grey_failures import OVERDUE_S, PROBE_S, Coordinator

__all__ = ["OverdueWatch"]

# How often the Sender looks at overdue requests.
_CHECK_S = 0.1
_TRANSACTION_KEY = 1
_KEY_TYPES = {"group": 0, "transaction": _TRANSACTION_KEY}


class OverdueWatch:
    """Looked at by the Sender on every loop; owns no thread and no connection of its own."""

    def __init__(self, network: NetworkClient, accumulator: RecordAccumulator,
                 transaction_manager: Any, log: Any) -> None:
        self._net = network
        self._acc = accumulator
        self._tm = transaction_manager
        self._log = log  # the Sender's, bound to the transactional id
        # the coordinator request in flight: (handler, node, sent at)
        self._txn_sent: tuple[Any, int, float] | None = None
        # a coordinator request waiting for its broker's connection: (type, key, node, since), and when
        # other brokers were last asked about it
        self._unready: tuple[str, str, int, float] | None = None
        self._unready_asked = 0.0
        self._checked = 0.0
        self._refreshed = 0.0
        self._poll: float | None = None

    def coordinator_request_sent(self, handler: Any, node: int, now: float) -> None:
        self._txn_sent = (handler, node, now)
        self._unready = None

    def coordinator_not_ready(self, ctype: str, key: str, node: int, now: float) -> None:
        """A request for ``key``'s coordinator ``node`` waits for its connection (the third case of the
        module docstring): after OVERDUE_S, every PROBE_S, ask other brokers whether another one
        coordinates ``key`` now."""
        unready = self._unready
        if unready is None or unready[:3] != (ctype, key, node):
            self._unready = (ctype, key, node, now)
            return
        if now - unready[3] < OVERDUE_S or now - self._unready_asked < PROBE_S:
            return
        self._unready_asked = now
        tm = self._tm

        def found(coordinator: Coordinator) -> None:
            if coordinator.node_id == node or tm.coordinator(ctype, key) != node:
                return  # not moved, or the transaction manager learned it meanwhile
            self._log.warning("sender.broker_left", node=node, coordinator=coordinator.node_id,
                              reason="no connection; no longer the coordinator")
            tm.coordinator_found(ctype, key, coordinator.node_id, coordinator.host, coordinator.port)
            self._net.ensure_broker(coordinator.node_id, coordinator.host, coordinator.port)

        self._net.ask_who_coordinates(_KEY_TYPES[ctype], key, {node}, found)

    def check(self, now: float) -> float | None:
        """Leave every overdue Produce's broker the cluster no longer routes it to; ask others who
        leads or coordinates now. Returns how soon to look again (None: nothing is overdue)."""
        if now - self._checked < _CHECK_S:
            return self._poll
        self._checked = now
        net = self._net
        overdue = self._acc.in_flight_since(now - OVERDUE_S)
        sent = self._txn_sent
        # a TxnOffsetCommit waits on the transaction coordinator as a Produce does (TV2: its group
        # coordinator adds the offsets partition to the transaction first)
        offsets = sent if (sent is not None and sent[0].coordinator_type == "group"
                           and self._tm.has_in_flight_request() and now - sent[2] > OVERDUE_S) else None
        if not overdue and offsets is None:
            self._poll = None
            return None
        suspects = {b.sent_to for b in overdue}
        if offsets is not None:
            suspects.add(offsets[1])
        moved = {b.sent_to for b in overdue if net.leader_for(b.tp) not in (None, b.sent_to)}
        for node in moved:
            self._log.warning("sender.broker_left", node=node, reason="unanswered; no longer the leader")
            net.abandon(node, f"broker {node} did not answer and no longer leads the partitions it was"
                              " sent; sending again to their new leaders")
        if now - self._refreshed >= PROBE_S:
            self._refreshed = now
            if overdue:
                net.refresh_metadata_avoiding(suspects)
            waiting = {b.sent_to for b in overdue} - moved
            if waiting or offsets is not None:
                self._ask_whether_the_transaction_moved(waiting, offsets, suspects, now)
        self._poll = _CHECK_S
        return self._poll

    def _ask_whether_the_transaction_moved(self, waiting: set[Any], offsets: tuple[Any, int, float] | None,
                                           suspects: set[Any], now: float) -> None:
        """Produce requests are unanswered by leaders that still lead (``waiting``), or a TxnOffsetCommit
        by a group coordinator that still coordinates (``offsets``: the request in flight): ask (not the
        coordinator we know, which may be what they wait on) who coordinates our transactional id now;
        if another broker does, adopt it and send those requests again (see the module docstring)."""
        tm = self._tm
        known = tm.coordinator("transaction")
        if known is None:
            return  # a lookup is under way
        net = self._net
        key = tm.transactional_id

        def found(coordinator: Coordinator) -> None:
            if coordinator.node_id == known or tm.coordinator("transaction") != known:
                return  # not moved, or the transaction manager learned it meanwhile
            tm.coordinator_found("transaction", key, coordinator.node_id, coordinator.host, coordinator.port)
            net.ensure_broker(coordinator.node_id, coordinator.host, coordinator.port)
            still = {b.sent_to for b in self._acc.in_flight_since(now)} & waiting
            if offsets is not None and self._txn_sent is offsets and tm.has_in_flight_request():
                still.add(offsets[1])
            for node in still:
                self._log.warning("sender.broker_left", node=node, coordinator=coordinator.node_id,
                                  reason="unanswered; waits on the old transaction coordinator")
                net.abandon(node, f"broker {node} did not answer: it waits on broker {known}, which no"
                                  f" longer coordinates {key!r} (broker {coordinator.node_id} does);"
                                  " sending again")

        net.ask_who_coordinates(_TRANSACTION_KEY, key, suspects | {known}, found)
