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

Three cases, all decided by asking brokers that answer (never one with an unanswered request,
ours or the watch's own):

- a Produce is unanswered and the partition's leader moved: leave the old leader;
- a coordinator request is unanswered and FindCoordinator names another coordinator: leave the old
  one;
- a Produce is unanswered by a leader that has not moved (or a TxnOffsetCommit by a group
  coordinator that has not), and FindCoordinator names another coordinator for our transactional
  id: the leader is waiting on its own request to the frozen coordinator (the KIP-890 check of a
  partition new to the transaction, which Kafka's leader keeps waiting on after the coordinator
  moved; under TV2 the group coordinator adds the offsets partition the same way). The watch
  adopts the new coordinator - so that EndTxn goes there and never to the frozen broker, whose
  stale state answers PRODUCER_FENCED when it wakes up - and leaves the waiting broker's
  connection: the request goes again, and that broker asks the new coordinator. A stuck Produce,
  if the leader ever completes it, is a duplicate of the resent batch (same sequence) or fails
  its check; a stuck TxnOffsetCommit stages the same offsets again; nothing is written twice.

A request any broker can answer (FindCoordinator) that is unanswered for a second is sent to
another broker instead, and the silent one is avoided for such requests for a few seconds: a
frozen broker still accepts connections (the kernel does), so without this a lookup could go to
it, and wait ``request_timeout_ms``, again and again.

Why a separate watch rather than a shorter ``request_timeout_ms``: a slow but healthy broker
(a long GC, a large fsync) must keep its requests; only the cluster saying that someone else
now leads the partition, or coordinates the transaction, is reason to leave it.

May import: network, batching, protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
# How long a broker that left a request any broker could answer unanswered is not asked such
# requests: long enough for the cluster to fence a frozen broker (9 s by default) a few times over
# the lookups it takes, short enough that a broker that was only slow is back in use soon.
_SHUN_S = 5.0


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
        self._probes: dict[Any, float] = {}  # node -> when the watch's own question to it was sent
        self._shunned: dict[Any, float] = {}  # node -> until when requests for any broker avoid it
        self._checked = 0.0
        self._refreshed = 0.0
        self._poll: float | None = None

    def coordinator_request_sent(self, handler: Any, node: int, now: float) -> None:
        self._txn_sent = (handler, node, now)

    def avoid(self, now: float) -> set[Any]:
        """Brokers a request any broker can answer should not go to now: one shunned after leaving
        such a request unanswered, or one our own questions wait on."""
        shunned = {node for node, until in self._shunned.items() if until > now}
        return shunned | {node for node, at in self._probes.items() if now - at > _OVERDUE_S}

    def check(self, now: float) -> float | None:
        """Leave every overdue request's broker the cluster no longer routes it to; ask others
        who leads or coordinates now. Returns how soon to look again (None: nothing is overdue)."""
        if now - self._checked < _CHECK_S:
            return self._poll
        self._checked = now
        net = self._net
        overdue = self._acc.in_flight_since(now - _OVERDUE_S)
        sent = self._txn_sent
        unanswered = sent is not None and self._tm.has_in_flight_request() and now - sent[2] > _OVERDUE_S
        txn_overdue = unanswered and sent is not None and sent[0].coordinator_type is not None
        if unanswered and sent is not None and sent[0].coordinator_type is None:
            self._ask_elsewhere(sent, now)
        if not overdue and not txn_overdue:
            self._poll = None if not unanswered else _CHECK_S
            return self._poll
        suspects = {b.sent_to for b in overdue} | self.avoid(now)
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
                self._refresh_metadata(suspects, now)
            if sent is not None and txn_overdue:
                self._ask_who_coordinates(sent[0], sent[1], suspects, now)
            waiting = {b.sent_to for b in overdue} - moved
            # a TxnOffsetCommit waits on the transaction coordinator as a Produce does (TV2: its group
            # coordinator adds the offsets partition to the transaction first)
            group_request = txn_overdue and sent is not None and sent[0].coordinator_type == "group"
            offsets = sent if group_request else None
            if waiting or offsets is not None:
                self._ask_whether_the_transaction_moved(waiting, offsets, suspects, now)
        self._poll = _CHECK_S
        return self._poll

    def _ask_elsewhere(self, sent: tuple[Any, int, float], now: float) -> None:
        """A request any broker can answer is unanswered: shun its broker and leave it (the request
        fails and goes again, to another broker), unless no other broker is known."""
        _, node, _ = sent
        if self._shunned.get(node, 0.0) > now:
            return  # left already; the request was sent there again before anything else was known
        if not any(b.node_id != node for b in self._net.cluster.brokers()):
            return
        self._shunned[node] = now + _SHUN_S
        self._log.warning("sender.broker_left", node=node, reason="unanswered lookup; asking another broker")
        self._net.abandon(node, f"broker {node} did not answer a coordinator lookup within"
                                f" {_OVERDUE_S:g} s; asking another broker")

    # -- questions to brokers that answer ---------------------------------------------------------

    def _refresh_metadata(self, suspects: set[Any], now: float) -> None:
        asked = self._net.refresh_metadata_avoiding(suspects)
        if asked is not None:
            self._track(asked[0], asked[1], now)

    def _track(self, node: Any, future: Any, now: float) -> None:
        """Remember a question to ``node`` until it is answered (or fails): while it is unanswered
        for longer than _OVERDUE_S, ``node`` is asked nothing more."""
        self._probes.setdefault(node, now)

        def done(_: Any) -> None:
            self._probes.pop(node, None)

        future.add_both(done)

    def _find_coordinator(self, key_type: int, key: str, avoid: Iterable[Any], now: float,
                          on_found: Callable[[Any], None]) -> None:
        """FindCoordinator(``key``) to a broker not in ``avoid``; ``on_found(coordinator)`` with the
        answer's entry when it names one."""
        net = self._net
        avoided = set(avoid)
        others = [b.node_id for b in net.cluster.brokers() if b.node_id not in avoided]
        if not others:
            return
        ready = [n for n in others if net.is_ready(n)]
        node = (ready or others)[0]
        speaks = net.max_version(node, _FIND_COORDINATOR_KEY)
        if speaks is not None and speaks < _FIND_COORDINATOR_BATCHED:
            return
        request = FindCoordinatorRequest(version=_FIND_COORDINATOR_BATCHED, key_type=key_type,
                                         coordinator_keys=[key])
        future = net.send(node, request)
        self._track(node, future, now)

        def answered(response: Any) -> None:
            found = response.coordinators[0] if response.coordinators else None
            if found is not None and found.error_code == NONE:
                on_found(found)

        future.add_callback(answered)

    def _ask_who_coordinates(self, handler: Any, node: int, suspects: set[Any], now: float) -> None:
        """Out of band (the transaction manager has one request in flight: the unanswered one),
        ask another broker who coordinates ``handler``'s transaction or group now; if it names
        another broker, leave ``node``."""
        net = self._net

        def found(coordinator: Any) -> None:
            if coordinator.node_id == node:
                return
            still_waiting = self._txn_sent is not None and self._txn_sent[0] is handler
            if not still_waiting or not self._tm.has_in_flight_request():
                return  # answered meanwhile
            self._log.warning("sender.broker_left", node=node, coordinator=coordinator.node_id,
                              reason="unanswered; no longer the coordinator")
            net.ensure_broker(coordinator.node_id, coordinator.host, coordinator.port)
            net.abandon(node, f"broker {node} did not answer and no longer coordinates"
                              f" {handler.coordinator_key!r} (broker {coordinator.node_id} does)")

        key_type = 1 if handler.coordinator_type == "transaction" else 0
        self._find_coordinator(key_type, handler.coordinator_key, suspects, now, found)

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

        def found(coordinator: Any) -> None:
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

        self._find_coordinator(1, key, suspects | {known}, now, found)
