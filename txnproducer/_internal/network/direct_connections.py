"""The client's connections, one per broker, and the network poll that serves them.

Why apart from :mod:`.client`: these are the mechanics under it - which connection a node has, when a node
may be tried again, the one ``epoll`` all sockets share, the wake-up other threads use - with the Java
client's rules (``NetworkClient`` + ``Selector`` + ``ClusterConnectionStates``):

- reconnect backoff: ``reconnect_backoff_ms`` after a connection that worked or a first failed attempt,
  doubling with each further failed attempt in a row up to ``reconnect_backoff_max_ms``, with 20 % jitter
  so that many clients do not reconnect in step, counted from the start of the attempt;
- ``max_in_flight_requests_per_connection`` decides when a node is ready for another request;
- ``connections_max_idle_ms`` (Java's default, 9 minutes, unless the settings say otherwise): a
  connection with nothing in flight and no traffic for that long is closed (the broker would close it at
  its own ``connections.max.idle.ms``, and a request written at that moment would be lost with it);
- ``socket_options`` (TCP_NODELAY and SO_KEEPALIVE unless the settings say otherwise) on every socket.

A connection whose setup fails (TLS, SASL, closed before it was ready) is reported to ``on_setup_failed``,
so that an authentication failure ends every wait at once (:mod:`.auth_failures`).

The poll (:meth:`DirectConnections.poll`) waits on the selector, bounded by the connections' next timeout,
throttle end or re-authentication, and hands each socket's events to its connection. Other threads end a
wait with :meth:`DirectConnections.wakeup` (a byte on a socket pair the selector watches).

Thread rule: the network thread only, except :meth:`wakeup` (any thread).
"""

from __future__ import annotations

import contextlib
import random
import selectors
import socket
import time
from collections.abc import Callable
from typing import Any

import kafka.errors as kerrors

from txnproducer._internal.network.settings import ConnectionSettings

from .channel_security import ChannelSecurity
from .connection import DirectConnection
from .connection_setup import DEFAULT_SOCKET_OPTIONS
from .future import Future
from .poller import Poller

__all__ = ["DEFAULT_CONNECTIONS_MAX_IDLE_MS", "DirectConnections"]

DEFAULT_CONNECTIONS_MAX_IDLE_MS = 540_000  # the Java client's connections.max.idle.ms
_IDLE_CHECK_S = 1.0


class _Wakeup:
    """The selector's key data for the wake-up socket (anything else registered is a connection)."""


class DirectConnections:
    """The open connections by node id, the reconnect backoff of each node, and the poll."""

    def __init__(self, config: ConnectionSettings, *, broker_address: Callable[[Any], Any],
                 api_versions_request: Callable[[int], Any],
                 on_ready: Callable[[DirectConnection, Any], None],
                 on_close: Callable[[DirectConnection], None], security: ChannelSecurity | None = None,
                 on_setup_failed: Callable[[Any, Any, BaseException], None] | None = None) -> None:
        """``broker_address(node)`` is the broker's address (``host``, ``port``) or None;
        ``on_ready(conn, api_versions_answer)`` is told each connection's ApiVersions answer (once it
        authenticated) and ``on_close(conn)`` each closed connection (the broker may have moved: refresh
        metadata); ``security`` is how connections secure themselves (None: plaintext);
        ``on_setup_failed(node, broker, error)`` is told how a connection's setup or (re-)authentication
        failed."""
        self._config = config
        self._security = security
        self._on_setup_failed = on_setup_failed
        self._broker_address = broker_address
        self._api_versions_request = api_versions_request
        self._on_ready = on_ready
        self._on_close = on_close
        self._conns: dict[Any, DirectConnection] = {}
        self._reconnect: dict[Any, tuple[int, float]] = {}  # node -> (failures in a row, not before)
        self._max_in_flight = config.max_in_flight_requests_per_connection
        self._socket_options = tuple(getattr(config, "socket_options", None) or DEFAULT_SOCKET_OPTIONS)
        max_idle_ms = getattr(config, "connections_max_idle_ms", None)
        self._max_idle_s = (DEFAULT_CONNECTIONS_MAX_IDLE_MS if max_idle_ms is None else max_idle_ms) / 1000
        self._next_idle_check = time.monotonic() + min(self._max_idle_s, _IDLE_CHECK_S)
        self.selector = Poller()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, _Wakeup)
        self.closed = False

    def __contains__(self, node: Any) -> bool:
        return node in self._conns

    def get(self, node: Any) -> DirectConnection | None:
        """The open connection to ``node``, if any (none is started)."""
        return self._conns.get(node)

    def nodes(self) -> list[Any]:
        return list(self._conns)

    def connection(self, node: Any) -> DirectConnection | None:
        """The open connection to ``node``, starting one unless in reconnect backoff."""
        conn = self._conns.get(node)
        if conn is not None:
            return conn
        if self.closed:
            return None
        _failures, not_before = self._reconnect.get(node, (0, 0.0))
        if not_before > time.monotonic():
            return None
        broker = self._broker_address(node)
        if broker is None:
            return None
        config = self._config
        conn = DirectConnection(
            node, broker.host, broker.port, selector=self.selector,
            client_id=config.effective_client_id,
            request_timeout_s=config.request_timeout_ms / 1000,
            setup_timeout_s=config.socket_connection_setup_timeout_ms / 1000,
            on_close=self._closed, api_versions_request=self._api_versions_request,
            on_ready=self._on_ready, security=self._security, socket_options=self._socket_options)
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

    def abandon(self, node: Any, future: Future, error: BaseException) -> bool:
        """Stop waiting for ``future``'s answer from ``node`` (:meth:`DirectConnection.abandon`)."""
        conn = self._conns.get(node)
        return conn is not None and conn.abandon(future, error)

    def silent(self, node: Any, grace_s: float = 0.0) -> bool:
        """True while ``node`` has not answered a request the client abandoned there
        (:meth:`DirectConnection.abandon`) - a broker that stopped answering - and for ``grace_s``
        after it answered them."""
        conn = self._conns.get(node)
        return conn is not None and (conn.abandoned > 0 or (
            conn.heard_again_at > 0 and time.monotonic() - conn.heard_again_at < grace_s))

    def heard_from(self, node: Any, within_s: float) -> bool:
        """True when ``node``'s connection has nothing in flight, or read an answer in the last
        ``within_s`` seconds: a request sent there now is not queued behind one the broker holds
        (Kafka handles one request at a time per connection)."""
        conn = self._conns.get(node)
        return conn is not None and (conn.in_flight_count == 0
                                     or time.monotonic() - conn.last_read < within_s)

    def in_flight_count(self, node: Any = None) -> int:
        if node is None:
            return sum(conn.in_flight_count for conn in self._conns.values())
        conn = self._conns.get(node)
        return conn.in_flight_count if conn is not None else 0

    def api_versions(self, node: Any) -> dict[int, tuple[int, int]] | None:
        conn = self._conns.get(node)
        return conn.api_versions if conn is not None else None

    def close(self, node: Any, error: BaseException | None = None) -> None:
        conn = self._conns.get(node)
        if conn is not None:
            conn.close(error)

    def close_all(self, error: BaseException) -> None:
        """Close every connection (failing what waits on them) and the selector: the end of the client."""
        self.closed = True
        for conn in list(self._conns.values()):
            conn.close(error)
        with contextlib.suppress(OSError):
            self.selector.close()
        for sock in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                sock.close()

    def _closed(self, conn: DirectConnection, was_ready: bool) -> None:
        """Forget a closed connection and set when its node may be tried again (the module docstring)."""
        node = conn.node_id
        if self._conns.get(node) is conn:
            del self._conns[node]
        if self.closed:  # closed by us (the client's end): nothing failed, nothing to retry
            return
        if conn.setup_failed and conn.error is not None and self._on_setup_failed is not None:
            self._on_setup_failed(node, self._broker_address(node), conn.error)
        failures = 0 if was_ready else self._reconnect.get(node, (0, 0.0))[0] + 1
        config = self._config
        backoff_ms = min(config.reconnect_backoff_max_ms,
                         config.reconnect_backoff_ms * (2 ** min(max(failures - 1, 0), 30)))
        backoff_ms *= random.uniform(0.8, 1.2)
        # from the attempt's start, as the Java client's ClusterConnectionStates: a connection that
        # worked for minutes and closed (idle, a timeout) may be made again at once
        self._reconnect[node] = (failures, conn.started_at + backoff_ms / 1000)
        self._on_close(conn)

    # -- the poll --------------------------------------------------------------------------------

    def wakeup(self) -> None:
        """End the network thread's current (or next) wait at once (any thread)."""
        try:  # not contextlib.suppress: a wake-up per transaction, three Python calls less each
            self._wake_w.send(b"\x00")
        except OSError:  # full (a wake-up is pending anyway) or closed
            return

    def poll(self, timeout_s: float) -> None:
        """Wait at most ``timeout_s`` for network events (less until one of the connections' timeouts,
        throttles or re-authentications is due) and handle them."""
        now = time.monotonic()
        earliest = self._next_idle_check
        for conn in self._conns.values():
            deadline = conn.next_deadline()
            if deadline is not None and deadline < earliest:
                earliest = deadline
        timeout_s = max(0.0, min(timeout_s, earliest - now))
        try:
            ready = self.selector.poll(timeout_s)
        except (OSError, ValueError):  # closed under us (close_all from the end of the loop)
            return
        for data, events in ready:
            if data is _Wakeup:
                self._drain_wakeup()
            else:
                data.on_events(events)
        now = time.monotonic()
        if now >= earliest:
            for conn in list(self._conns.values()):
                conn.tick(now)
            if now >= self._next_idle_check:
                self._close_idle(now)

    def _drain_wakeup(self) -> None:
        # One read: NetworkClient.wakeup writes at most one byte between two polls, so 4 KiB is
        # everything there is (more would only make the next poll return at once and read again)
        # - not a second read that ends in BlockingIOError on every wake-up.
        with contextlib.suppress(OSError):  # BlockingIOError: drained already
            self._wake_r.recv(4096)

    def _close_idle(self, now: float) -> None:
        """Close connections idle for ``connections_max_idle_ms`` (nothing in flight, no traffic)."""
        self._next_idle_check = now + min(self._max_idle_s, _IDLE_CHECK_S)
        for conn in list(self._conns.values()):
            if conn.ready and not conn.in_flight_count and now - conn.last_activity >= self._max_idle_s:
                conn.close()
