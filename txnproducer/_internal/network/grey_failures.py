"""Grey failures: requests to a broker that stopped answering, given up once the cluster has moved on.

A broker that stops answering without closing its connections (SIGSTOP, a long GC pause, a hung disk,
a VM migration) keeps every request sent to it waiting ``request_timeout_ms`` (30 s by default; the Java
client waits as long, then closes the connection), and when it wakes up it answers from what it knew
before it froze. The cluster does not wait: the controller fences the broker after
``broker.session.timeout.ms`` (9 s by default) and elects other leaders for its partitions - among them
the partitions of ``__transaction_state`` and ``__consumer_offsets`` it led - so that FindCoordinator,
answered by any other broker, names the new coordinator of a transactional id or a group.

This watch, run from the network poll of whoever drives the network (the Sender, a group member's IO
thread, an admin call's thread), acts on two kinds of request, each sent through its own call of
:class:`~.client.NetworkClient`:

- a request to a coordinator (``send_to_coordinator``), unanswered for ``OVERDUE_S``: the watch asks
  another broker, then again every ``PROBE_S``, who coordinates the request's key now. Once one names
  another broker, the request is abandoned (:meth:`.connection.DirectConnection.abandon`): it fails at
  once with :class:`~.connection_errors.CoordinatorMoved`, which names the new coordinator, and its
  caller sends it there. What is sent again as it was and what is asked anew is the caller's rule (the
  transaction manager's handlers follow the Java client's: an EndTxn goes again with the epoch it was
  built with, and the new coordinator decides its outcome). The old broker's answer, if it ever comes,
  is read and dropped.
- a request any broker can answer (``send_anywhere``: FindCoordinator, Metadata), unanswered for
  ``OVERDUE_S`` while another broker is known that is not silent: it is abandoned with
  :class:`~.connection_errors.BrokerSilent`, and its caller asks elsewhere.

Why not a shorter request timeout: a slow but healthy coordinator (a long fsync, a transaction log being
loaded) must keep its requests; only the cluster naming another coordinator is reason to leave it, and
then leaving loses nothing: the new coordinator answers from the replicated log. A lookup, which any
broker answers, is not worth waiting for.

A broker with an abandoned request not answered yet is *silent* (``DirectConnections.silent``), and stays
so for ``SILENT_AFTER_S`` after it answered them: ``least_loaded_node`` and the probes pass it over while
another broker is available. Why the grace: a broker that wakes up from a freeze handles what waited in
its socket before it has caught up with the controller's records - a FindCoordinator answered then names
the leaderships it had (itself), and its stale transaction state answers PRODUCER_FENCED to an EndTxn
that a lookup sent there. Its connection stays open: its late answers are read (the stream stays in
step), and after the grace it is used again.

Timings: overdue 1 s after the request was sent (well above a healthy broker's milliseconds, well below
the 9 s a fence takes); a probe then, and every 0.25 s after; the request is abandoned as soon as a
probe's answer names another broker - at most about 0.25 s and a round trip after the controller's
decision reaches the other brokers. ``benchmarks/README.md`` has what that makes on a real cluster.

Thread rule: the network thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

import attrs
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from txnproducer._internal.protocol.error_codes import NONE

from .connection_errors import BrokerSilent, CoordinatorMoved
from .future import Future

__all__ = ["OVERDUE_S", "PROBE_S", "SILENT_AFTER_S", "Coordinator", "GreyFailureWatch"]

#: seconds a watched request may wait for its answer before the watch starts asking about its broker
OVERDUE_S = 1.0
#: seconds between two questions about one coordinator key while its request is unanswered
PROBE_S = 0.25
#: seconds a silent broker is still passed over after it answered again (see the module docstring)
SILENT_AFTER_S = 5.0
_FIND_COORDINATOR_KEY = 10
_BATCHED = 4  # FindCoordinator v4+ (KIP-699) asks with a list of keys
_GROUP = 0
_NOTHING_TO_DO_S = 3600.0


@attrs.frozen
class Coordinator:
    """A coordinator as FindCoordinator named it."""

    node_id: int
    host: str
    port: int


class _Watched(NamedTuple):
    """A watched request (a tuple: one is made per coordinator request, EndTxn's on every transaction)."""

    node: Any
    future: Future
    sent_at: float
    key: tuple[int, str] | None  # (key type, key) of a coordinator request; None: any broker answers it


class _Network(Protocol):
    """What the watch needs of the :class:`~.client.NetworkClient` it works for."""

    def candidates(self) -> list[Any]: ...
    def silent(self, node: Any) -> bool: ...
    def is_ready(self, node: Any) -> bool: ...
    def heard_from(self, node: Any, within_s: float) -> bool: ...
    def has_connection(self, node: Any) -> bool: ...
    def connection_delay(self, node: Any) -> float: ...
    def ensure_connecting(self, node: Any) -> None: ...
    def in_flight_count(self, node: Any = None) -> int: ...
    def max_version(self, node: Any, api_key: int) -> int | None: ...
    def send_anywhere(self, node: Any, request: Any) -> Future: ...
    def abandon_request(self, node: Any, future: Future, error: BaseException) -> bool: ...
    def ensure_broker(self, node: int, host: str, port: int) -> None: ...


class GreyFailureWatch:
    """The watched requests of one network and the questions asked about them (module docstring)."""

    def __init__(self, net: _Network, log: Any) -> None:
        self._net = net
        self._log = log
        self._watched: list[_Watched] = []
        self._asked: dict[tuple[int, str], float] = {}  # key -> when it was last asked about
        self._asking: set[tuple[int, str]] = set()  # keys whose question is unanswered
        self._next_check = 0.0

    # -- what the network client registers ----------------------------------------------------------

    def coordinator_request(self, node: Any, future: Future, key_type: int, key: str, now: float) -> None:
        if not self._watched:
            self._next_check = now + OVERDUE_S
        self._watched.append(_Watched(node, future, now, (key_type, key)))

    def lookup(self, node: Any, future: Future, now: float) -> None:
        if not self._watched:
            self._next_check = now + OVERDUE_S
        self._watched.append(_Watched(node, future, now, None))

    # -- the network poll ---------------------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """Whether any request is watched (the poll skips :meth:`run` otherwise)."""
        return bool(self._watched)

    def run(self, now: float) -> float:
        """Act on the overdue requests; seconds until something may be due (the poll's bound)."""
        if not self._watched:
            return _NOTHING_TO_DO_S
        if now < self._next_check:
            return self._next_check - now
        keep: list[_Watched] = []
        due = now + _NOTHING_TO_DO_S
        current, self._watched = self._watched, []  # the questions asked below are watched too
        for watched in current:
            if watched.future.is_done:
                continue
            overdue_at = watched.sent_at + OVERDUE_S
            if now < overdue_at:
                keep.append(watched)
                due = min(due, overdue_at)
            elif watched.key is None:
                if not self._leave_lookup(watched):
                    keep.append(watched)
                    due = min(due, now + PROBE_S)
            else:
                keep.append(watched)
                due = min(due, self._ask_about(watched, now))
        for asked in self._watched:
            due = min(due, asked.sent_at + OVERDUE_S)
        self._watched = keep + self._watched
        self._next_check = due
        return max(0.0, due - now)

    def _leave_lookup(self, watched: _Watched) -> bool:
        """Abandon a lookup its broker left unanswered when another broker may answer it."""
        net = self._net
        node = watched.node
        if not any(n != node and not net.silent(n) for n in net.candidates()):
            return False  # nobody else to ask: wait for it (request_timeout_ms still bounds it)
        if net.abandon_request(node, watched.future, BrokerSilent(
                f"broker {node} did not answer within {OVERDUE_S:g} s; asking another broker")):
            self._log.warning("txn.broker_silent", node=node,
                              reason="a lookup unanswered; asking another broker")
        return True

    def _ask_about(self, watched: _Watched, now: float) -> float:
        """Ask who coordinates ``watched``'s key now, at most every PROBE_S; when the time to ask
        again is."""
        assert watched.key is not None
        key = watched.key
        asked = self._asked.get(key, float("-inf"))
        if key in self._asking or now - asked < PROBE_S:
            return max(asked + PROBE_S, now + 0.01)
        self._asked[key] = now
        self.ask_who_coordinates(key[0], key[1], avoid=(watched.node,),
                                 on_found=lambda found: self._coordinator_named(key, found))
        return now + PROBE_S

    def _coordinator_named(self, key: tuple[int, str], found: Coordinator) -> None:
        """A broker named ``found`` as ``key``'s coordinator: abandon what waits on another one."""
        moved = [w for w in self._watched
                 if w.key == key and not w.future.is_done and w.node != found.node_id]
        if not moved:
            return
        net = self._net
        net.ensure_broker(found.node_id, found.host, found.port)
        kind = "group" if key[0] == _GROUP else "transactional id"
        for watched in moved:
            error = CoordinatorMoved(
                f"broker {watched.node} did not answer and no longer coordinates {kind} {key[1]!r}"
                f" (broker {found.node_id} does); sending again there",
                key_type=key[0], key=key[1], node_id=found.node_id, host=found.host, port=found.port)
            if net.abandon_request(watched.node, watched.future, error):
                self._log.warning("txn.coordinator_moved", node=watched.node, coordinator=found.node_id,
                                  key_type=kind, key=key[1],
                                  reason="unanswered; another broker coordinates the key now")

    # -- the question ---------------------------------------------------------------------------------

    def ask_who_coordinates(self, key_type: int, key: str, avoid: Iterable[Any],
                            on_found: Callable[[Coordinator], None]) -> bool:
        """FindCoordinator(``key``) to a broker that answers, not in ``avoid``; ``on_found`` with the
        coordinator it names. False when no such broker is ready to be asked now (one is connected to)."""
        net = self._net
        node = self._whom_to_ask(set(avoid))
        if node is None:
            return False
        request = _find_coordinator(key_type, key, net.max_version(node, _FIND_COORDINATOR_KEY))
        if request is None:
            return False
        asking = (key_type, key)
        self._asking.add(asking)
        future = net.send_anywhere(node, request)

        def answered(response: Any) -> None:
            self._asking.discard(asking)
            found = _named(response)
            if found is not None:
                on_found(found)

        future.add_callback(answered)
        future.add_errback(lambda _exc: self._asking.discard(asking))
        return True


    def _whom_to_ask(self, avoided: set[Any]) -> Any:
        """The broker to ask: one with nothing in flight, else one that answered within OVERDUE_S -
        never one whose connection waits on a request the broker holds (a healthy leader holding a
        Produce for its KIP-890 check answers nothing else on that connection: Kafka handles one
        request at a time per connection). A broker not connected to yet is connected to meanwhile;
        None: nobody to ask now."""
        net = self._net
        others = [n for n in net.candidates() if n not in avoided and not net.silent(n)]
        ready = [n for n in others if net.is_ready(n)]
        idle = [n for n in ready if net.in_flight_count(n) == 0]
        if idle:
            return idle[0]
        for node in others:
            if not net.has_connection(node) and net.connection_delay(node) <= 0:
                net.ensure_connecting(node)  # asked once it is ready
                break
        heard = [n for n in ready if net.heard_from(n, OVERDUE_S)]
        return min(heard, key=net.in_flight_count) if heard else None


def _find_coordinator(key_type: int, key: str, max_version: int | None) -> Any:
    """FindCoordinator for one key, in the highest version the broker speaks (None: it cannot ask
    for this key type: v0 knows groups only)."""
    version = 6 if max_version is None else min(max_version, 6)
    if version >= _BATCHED:
        return FindCoordinatorRequest(version=version, key_type=key_type, coordinator_keys=[key])
    if version >= 1:
        return FindCoordinatorRequest(version=version, key=key, key_type=key_type)
    return FindCoordinatorRequest(version=0, key=key) if key_type == _GROUP else None


def _named(response: Any) -> Coordinator | None:
    """The coordinator a FindCoordinator answer names, or None (an error)."""
    entries = getattr(response, "coordinators", None)
    entry = entries[0] if entries else response
    if int(entry.error_code) != NONE or int(entry.node_id) < 0:
        return None
    return Coordinator(int(entry.node_id), str(entry.host), int(entry.port))
