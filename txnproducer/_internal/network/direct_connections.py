"""The Sender's own connections, one per broker, and the network poll that serves them.

Why apart from :mod:`.client`: these connections (:mod:`.connection`) are the Sender's path to the
brokers - in plaintext, TLS and SASL alike (``security``) - with their own rules: the Java client's
exponential reconnect backoff, a request timeout per connection, and their own poll. kafka-python
keeps the rest (bootstrap, metadata), and its sockets share one selector with ours. A connection
whose setup fails (TLS, SASL, closed before it was ready) is reported to ``on_setup_failed``, as
kafka-python's are (``secured.py``), so that an authentication failure ends every wait at once.

The poll (:meth:`DirectConnections.poll`) is bounded by our connections' next timeout or throttle
end; their sockets share kafka-python's selector, which hands them their events (:mod:`.selector`),
and kafka-python's event loop runs only when it has work (:mod:`.lean_poll`).

Thread rule: the Sender thread only (the one that polls).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import kafka.errors as kerrors
from kafka.future import Future

from txnproducer._internal.network.failure_log import ConnectionFailureLog
from txnproducer._internal.network.settings import ConnectionSettings

from .channel_security import ChannelSecurity
from .connection import DirectConnection

__all__ = ["DirectConnections"]


class DirectConnections:
    """The open connections by node id, the reconnect backoff of each node, and the poll."""

    def __init__(self, config: ConnectionSettings, selector: Any, *, broker_address: Callable[[Any], Any],
                 api_versions_request: Callable[[int], Any],
                 on_ready: Callable[[DirectConnection, Any], None],
                 on_close: Callable[[], None], security: ChannelSecurity | None = None,
                 on_setup_failed: Callable[[Any, Any, BaseException], None] | None = None,
                 failures: ConnectionFailureLog | None = None) -> None:
        """``selector`` is kafka-python's (our sockets share it: :mod:`.selector`);
        ``broker_address(node)`` the broker's metadata (``host``, ``port``) or None;
        ``on_ready(conn, api_versions_answer)`` is told each connection's ApiVersions answer (once it
        authenticated) and ``on_close()`` each closed connection (the broker may have moved: refresh
        metadata); ``security`` is how connections secure themselves (None: plaintext);
        ``on_setup_failed(node, broker, error)`` is told how a connection's setup or
        (re-)authentication failed; ``failures`` each failed connection attempt (a WARNING, rate-limited)."""
        self._config = config
        self._security = security
        self._on_setup_failed = on_setup_failed
        self._selector = selector
        self._broker_address = broker_address
        self._api_versions_request = api_versions_request
        self._on_ready = on_ready
        self._on_close = on_close
        self._failures = failures
        self._conns: dict[Any, DirectConnection] = {}
        self._reconnect: dict[Any, tuple[int, float]] = {}  # node -> (failures in a row, not before)
        self._max_in_flight = config.max_in_flight_requests_per_connection

    def __contains__(self, node: Any) -> bool:
        return node in self._conns

    def get(self, node: Any) -> DirectConnection | None:
        """The open connection to ``node``, if any (none is started)."""
        return self._conns.get(node)

    def connection(self, node: Any) -> DirectConnection | None:
        """The open connection to ``node``, starting one unless in reconnect backoff."""
        conn = self._conns.get(node)
        if conn is not None:
            return conn
        _failures, not_before = self._reconnect.get(node, (0, 0.0))
        if not_before > time.monotonic():
            return None
        broker = self._broker_address(node)
        if broker is None:
            self._on_close()  # not in the metadata (yet): ask again
            return None
        config = self._config
        conn = DirectConnection(
            node, broker.host, broker.port, selector=self._selector,
            client_id=config.effective_client_id,
            request_timeout_s=config.request_timeout_ms / 1000,
            setup_timeout_s=config.socket_connection_setup_timeout_ms / 1000,
            on_close=self._closed, api_versions_request=self._api_versions_request,
            on_ready=self._on_ready, security=self._security)
        if conn.closed:  # failed at once (name resolution, refused): backoff already set
            return None
        self._conns[node] = conn
        return conn

    def is_ready(self, node: Any) -> bool:
        """True when a request to ``node`` would go out now (connected, under the in-flight limit,
        not throttled)."""
        conn = self._conns.get(node)
        return (conn is not None and conn.ready and conn.in_flight_count < self._max_in_flight
                and (not conn.throttled_until or conn.throttled_until <= time.monotonic()))

    def connection_delay(self, node: Any) -> float:
        """Seconds until a reconnect to ``node`` may be attempted (0 while connected)."""
        if node in self._conns:
            return 0.0
        _failures, not_before = self._reconnect.get(node, (0, 0.0))
        return max(0.0, not_before - time.monotonic())

    def send(self, node: Any, request: Any, timeout_s: float | None = None) -> Future:
        """Send ``request`` to ``node`` over our connection (started if need be); a failed future
        when the node cannot be reached now or the request cannot be encoded. ``timeout_s``: the
        request's own timeout (None: ``request_timeout_ms``)."""
        conn = self.connection(node)
        if conn is None:
            return Future().failure(kerrors.KafkaConnectionError(
                f"broker {node} cannot be reached now (unknown to the metadata, or waiting "
                f"{int(self.connection_delay(node) * 1000)} ms before reconnecting)"))
        try:
            return conn.send(request, timeout_s)
        except Exception as exc:  # the request could not be encoded: nothing was queued
            return Future().failure(exc)

    def in_flight_count(self, node: Any = None) -> int:
        if node is None:
            return sum(conn.in_flight_count for conn in self._conns.values())
        conn = self._conns.get(node)
        return conn.in_flight_count if conn is not None else 0

    def api_versions(self, node: Any) -> dict[int, tuple[int, int]] | None:
        conn = self._conns.get(node)
        return conn.api_versions if conn is not None else None

    def close(self, node: Any, error: BaseException) -> None:
        conn = self._conns.get(node)
        if conn is not None:
            conn.close(error)

    def close_all(self, error: BaseException) -> None:
        for conn in list(self._conns.values()):
            conn.close(error)

    def _closed(self, conn: DirectConnection, was_ready: bool) -> None:
        """Forget a closed connection and set when ``node`` may be tried again: the Java client's
        exponential reconnect backoff with 20 % jitter, ``reconnect_backoff_ms`` after a
        connection that worked or a first failed attempt, doubling with each further failed
        attempt in a row up to ``reconnect_backoff_max_ms``."""
        node = conn.node_id
        if self._conns.get(node) is conn:
            del self._conns[node]
        if conn.setup_failed and conn.error is not None and self._on_setup_failed is not None:
            self._on_setup_failed(node, self._broker_address(node), conn.error)
        failures = 0 if was_ready else self._reconnect.get(node, (0, 0.0))[0] + 1
        if not was_ready and self._failures is not None:
            self._failures.failed(node, f"{conn.host}:{conn.port}", str(conn.error))
        config = self._config
        backoff_ms = min(config.reconnect_backoff_max_ms,
                         config.reconnect_backoff_ms * (2 ** min(max(failures - 1, 0), 30)))
        backoff_ms *= random.uniform(0.8, 1.2)
        self._reconnect[node] = (failures, time.monotonic() + backoff_ms / 1000)
        self._on_close()

    # -- the poll --------------------------------------------------------------------------------

    def poll(self, timeout_s: float, kafka_poll: Callable[[float], None]) -> None:
        """Wait at most ``timeout_s`` for network events (less until one of our connections'
        timeouts or throttles ends) and handle them; ``kafka_poll(timeout_ms)`` runs kafka-python's
        loop, whose selector hands our sockets their events."""
        now = time.monotonic()
        earliest = None
        for conn in self._conns.values():
            deadline = conn.next_deadline()
            if deadline is not None and (earliest is None or deadline < earliest):
                earliest = deadline
        if earliest is not None and earliest - now < timeout_s:
            timeout_s = earliest - now
        kafka_poll(max(0.0, timeout_s) * 1000)
        self._tick(earliest)

    def _tick(self, earliest: float | None) -> None:
        """Enforce connect/request timeouts and end throttles that are due. Nothing is due before
        ``earliest`` (what the poll was bounded by); anything started during the poll has a
        deadline in the future."""
        if earliest is None:
            return
        now = time.monotonic()
        if now < earliest:
            return
        for conn in list(self._conns.values()):
            conn.tick(now)
