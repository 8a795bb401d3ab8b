"""Grey failures: leave a broker that stops answering once the cluster has moved on from it.

A SIGSTOPped or hung broker keeps its connections open. The controller fences it after
``broker.session.timeout.ms`` and moves its partitions and coordinators to other brokers, but a
request already sent to it would wait ``request_timeout_ms`` (30 s by default) for an answer, and
the Java client waits just as long. This watch makes the Sender move on within about a second of
the cluster's decision instead; it changes only *when* an unanswered request is given up, never
what is sent, so the idempotence guarantees stay those of an ordinary retry:

- batches go again with their producer id, epoch and sequence numbers, so a batch the frozen
  broker did append is answered as a duplicate by the new leader (it was replicated before the
  broker froze, or it was never acknowledged to the in-sync replicas and is truncated when the
  broker rejoins) and one it did not append is written once;
- a coordinator request goes again to the new coordinator, which answers from the replicated
  transaction log exactly as it would after a request timeout.

Why a separate watch rather than a shorter ``request_timeout_ms``: a slow but healthy broker
(a long GC, a large fsync) must keep its requests; only the cluster saying that someone else
now leads the partition, or coordinates the transaction, is reason to leave it.

May import: network, batching, protocol.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from txnproducer._internal.batching.accumulator import RecordAccumulator
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.protocol.error_codes import NONE

__all__ = ["OverdueWatch"]

# A request unanswered this long is overdue: the watch starts asking whether the cluster has moved
# on from its broker. Well above a healthy broker's answer time (milliseconds), well below the
# broker's own session timeout (broker.session.timeout.ms, 9 s), so the check costs nothing in the
# common case and has an answer ready as soon as the controller decides.
_OVERDUE_S = 1.0
# How often the Sender looks at overdue requests, and how often it asks other brokers meanwhile.
_CHECK_S = 0.1
_REFRESH_S = 0.5
# FindCoordinator v4 (KIP-699) is the first with a list of keys; older brokers are left to the
# request timeout.
_FIND_COORDINATOR_KEY = 10
_FIND_COORDINATOR_BATCHED = 4


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
        self._checked = 0.0
        self._refreshed = 0.0
        self._poll: float | None = None

    def coordinator_request_sent(self, handler: Any, node: int, now: float) -> None:
        self._txn_sent = (handler, node, now)

    def check(self, now: float) -> float | None:
        """Leave every overdue request's broker the cluster no longer routes it to; ask others
        who leads or coordinates now. Returns how soon to look again (None: nothing is overdue)."""
        if now - self._checked < _CHECK_S:
            return self._poll
        self._checked = now
        net = self._net
        overdue = self._acc.in_flight_since(now - _OVERDUE_S)
        sent = self._txn_sent
        txn_overdue = (sent is not None and self._tm.has_in_flight_request() and now - sent[2] > _OVERDUE_S
                       and sent[0].coordinator_type is not None)
        if not overdue and not txn_overdue:
            self._poll = None
            return None
        suspects = {b.sent_to for b in overdue}
        if sent is not None and txn_overdue:
            suspects.add(sent[1])
        moved = {b.sent_to for b in overdue if net.leader_for(b.tp) not in (None, b.sent_to)}
        for node in moved:
            self._log.warning("sender.broker_left", node=node, reason="unanswered; no longer the leader")
            net.abandon(node, f"broker {node} did not answer and no longer leads the partitions it was"
                              " sent; sending again to their new leaders")
        if now - self._refreshed >= _REFRESH_S:
            self._refreshed = now
            if overdue:
                net.refresh_metadata_avoiding(suspects)
            if sent is not None and txn_overdue:
                self._ask_who_coordinates(sent[0], sent[1], suspects)
        self._poll = _CHECK_S
        return self._poll

    def _ask_who_coordinates(self, handler: Any, node: int, suspects: set[Any]) -> None:
        """Out of band (the transaction manager has one request in flight: the unanswered one),
        ask another broker who coordinates ``handler``'s transaction or group now; if it names
        another broker, leave ``node``."""
        net = self._net
        others = [b.node_id for b in net.cluster.brokers() if b.node_id not in suspects]
        if not others:
            return
        speaks = net.max_version(others[0], _FIND_COORDINATOR_KEY)
        if speaks is not None and speaks < _FIND_COORDINATOR_BATCHED:
            return
        key_type = 1 if handler.coordinator_type == "transaction" else 0
        request = FindCoordinatorRequest(version=_FIND_COORDINATOR_BATCHED, key_type=key_type,
                                         coordinator_keys=[handler.coordinator_key])
        future = net.send(others[0], request, direct=False)

        def answered(response: Any) -> None:
            found = response.coordinators[0] if response.coordinators else None
            if found is None or found.error_code != NONE or found.node_id == node:
                return
            still_waiting = self._txn_sent is not None and self._txn_sent[0] is handler
            if not still_waiting or not self._tm.has_in_flight_request():
                return  # answered meanwhile
            self._log.warning("sender.broker_left", node=node, coordinator=found.node_id,
                              reason="unanswered; no longer the coordinator")
            net.ensure_broker(found.node_id, found.host, found.port)
            net.abandon(node, f"broker {node} did not answer and no longer coordinates"
                              f" {handler.coordinator_key!r} (broker {found.node_id} does)")

        future.add_callback(answered)
