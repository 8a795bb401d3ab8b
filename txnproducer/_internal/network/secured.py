"""kafka-python's connection manager, made to report TLS and SASL failures instead of hiding them.

Why a subclass: kafka-python 3.0.12 opens every TLS and SASL connection through
``KafkaConnectionManager``, and on the way loses what a user of a secured cluster most needs:

* a SASL failure's answer (wrong password, unknown user, expired token) that arrives together
  with the broker's close is thrown away with the socket - the connection only says "socket
  disconnected" (``KafkaTCPTransport._read_from_sock`` aborts before handing the bytes on). The
  transports here hand the bytes on first and report the end of stream on the next read;
* a failure inside the connection's initialisation (SASL, and the TLS 1.3 alert for a missing
  client certificate) counts as a successful connect: the reconnect backoff is reset and the
  client reconnects as fast as it polls (hundreds of connections per second). ``_connect`` keeps
  the backoff growing after such a failure;
* a TLS handshake to a peer that never answers waits forever (no deadline on the handshake loop);
  here it is bounded by the connection setup timeout;
* nobody hears of any of it: every new connection's outcome is reported to ``on_failure`` (on the
  network thread, as it happens), which :mod:`auth_failures` classifies.

Only the classes named by the upstream methods are replaced; the rest of kafka-python is used as
it is.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Callable
from typing import Any

import kafka.errors as kerrors
from kafka.net.inet import create_connection
from kafka.net.manager import KafkaConnectionManager
from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport

from .connection_errors import TlsAnswerToPlaintext, TlsHandshakeFailed, looks_like_tls

__all__ = ["EofLastSSLTransport", "EofLastTCPTransport", "SecuredConnectionManager", "TlsHandshakeFailed"]

FailureHook = Callable[[Any, Any, BaseException], None]  # (node id, broker metadata, error)


class _EofLast:
    """Deliver the bytes read before end of stream, then report it (on the next read)."""

    def _sock_recv(self) -> tuple[bytes, Any]:
        data, err = super()._sock_recv()  # type: ignore[misc]
        if data and isinstance(err, kerrors.KafkaConnectionError) and err.args == ("socket disconnected",):
            # the loop's next wait_read fires at once and recv() returns b'' again: then it aborts,
            # after the protocol saw the broker's last answer (e.g. SaslAuthenticate's error)
            return data, None
        return data, err


class EofLastTCPTransport(_EofLast, KafkaTCPTransport):  # type: ignore[misc]
    """Plain TCP transport that keeps a broker's last answer, and says when the listener speaks TLS
    (its first bytes are a TLS alert: kafka-python would read them as a 352 MB frame and wait)."""

    _answered = False

    def _sock_recv(self) -> tuple[bytes, Any]:
        data, err = super()._sock_recv()
        if data and not self._answered:
            self._answered = True
            if looks_like_tls(data):
                return b"", TlsAnswerToPlaintext(f"{self.host} answered a plaintext request with TLS")
        return data, err


class EofLastSSLTransport(_EofLast, KafkaSSLTransport):  # type: ignore[misc]
    """TLS transport that keeps a broker's last answer and bounds its handshake."""

    async def handshake_until(self, timeout_at: float | None) -> None:
        while True:
            try:
                self._sock.do_handshake()
                return
            except ssl.SSLWantReadError:
                await self._net.wait_read(self._sock, timeout_at)
            except ssl.SSLWantWriteError:
                await self._net.wait_write(self._sock, timeout_at)


class SecuredConnectionManager(KafkaConnectionManager):  # type: ignore[misc]
    """``KafkaConnectionManager`` with the repairs in the module docstring."""

    def __init__(self, net: Any, on_failure: FailureHook, on_connected: Callable[[Any], None],
                 **configs: Any) -> None:
        super().__init__(net, **configs)
        self._on_failure = on_failure
        self._on_connected = on_connected

    def get_connection(self, node_id: Any, **kwargs: Any) -> Any:
        known = self._conns.get(node_id)
        conn = super().get_connection(node_id, **kwargs)
        if conn is not known:  # a new connection: report how its setup ends
            broker = self.cluster.broker_metadata(node_id)
            conn.init_future.add_errback(lambda exc: self._on_failure(node_id, broker, exc))
            conn.init_future.add_callback(lambda _ok: self._on_connected(node_id))
        return conn

    async def _build_transport(self, node: Any, timeout_at: float | None = None) -> Any:
        sock = await create_connection(self._net, node.host, node.port, self.config["socket_options"],
                                       proxy_url=self.config["proxy_url"], timeout_at=timeout_at)
        transport: Any = None
        try:
            if self.ssl_enabled:
                ssl_configs = {k: v for k, v in self.config.items() if k.startswith("ssl_")}
                transport = EofLastSSLTransport(self._net, sock, host=node.host, **ssl_configs)
                await transport.handshake_until(timeout_at)
            else:
                transport = EofLastTCPTransport(self._net, sock, host=node.host)
                await transport.handshake()
        except kerrors.KafkaTimeoutError as exc:
            _close_quietly(transport._sock if transport is not None else sock)
            raise TlsHandshakeFailed(
                f"TLS handshake with {node.host}:{node.port} not finished within the connection setup "
                "timeout (socket_connection_setup_timeout_ms)") from exc
        except Exception as exc:
            _close_quietly(transport._sock if transport is not None else sock)
            raise TlsHandshakeFailed(f"Handshake failed: {exc}") from exc
        return transport

    async def _connect(self, node: Any, conn: Any, reset_backoff_on_connect: bool = True,
                       timeout_at: float | None = None) -> None:
        prior = self._backoff.get(node.node_id)
        await super()._connect(node, conn, reset_backoff_on_connect=reset_backoff_on_connect,
                               timeout_at=timeout_at)
        failed = conn.init_future.is_done and conn.init_future.failed()
        if failed and node.node_id not in self._backoff:
            # initialize() failed (SASL, a TLS alert after the handshake) and upstream reset the
            # backoff as if it had connected: restore the count and back off as after any failure
            if prior is not None:
                self._backoff[node.node_id] = prior
            self.update_backoff(node.node_id)


def _close_quietly(sock: Any) -> None:
    with contextlib.suppress(OSError):
        sock.close()
