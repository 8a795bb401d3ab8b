"""How a MockCluster's brokers accept connections: the security protocol of their one listener.

Why one object: the TLS material (``tls.py``) and the SASL settings (``sasl.py``) that ``MockCluster`` builds
from its options decide together which of Kafka's four security protocols the brokers speak - PLAINTEXT,
SSL, SASL_PLAINTEXT, SASL_SSL - and the server needs one thing to ask for each new connection:
:meth:`ListenerSecurity.wrap` (the socket it will use), then :meth:`ListenerSecurity.handshake` (the TLS
handshake if any, and the connection's :class:`ConnectionAuth`). Tests reach it as ``cluster.listener`` to
make TLS handshakes fail or lag (:meth:`ListenerSecurity.close_tls_handshakes`,
:meth:`ListenerSecurity.delay_tls_handshakes`) and to rotate the brokers' certificate
(``cluster.listener.tls``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import threading

from .connection_auth import ConnectionAuth
from .sasl import SaslSettings
from .tls import TlsMaterial, certificate_principal

__all__ = ["ListenerSecurity"]

# What Kafka 4.1.0's TLS listener writes to a client that does not speak TLS before it closes (a TLS 1.2
# record: fatal alert internal_error); OpenSSL writes nothing in that case, so the mock writes it itself.
_KAFKA_ALERT = bytes.fromhex("15030300020250")
_NOT_TLS = {"WRONG_VERSION_NUMBER", "UNKNOWN_PROTOCOL", "HTTP_REQUEST", "RECORD_LAYER_FAILURE",
            "PACKET_LENGTH_TOO_LONG"}


class ListenerSecurity:
    """TLS material and SASL settings of the brokers' listener (both optional: PLAINTEXT by default)."""

    def __init__(self, tls: TlsMaterial | None = None, sasl: SaslSettings | None = None,
                 failed_authentication_delay_ms: int = 100) -> None:
        if failed_authentication_delay_ms < 0:
            raise ValueError("failed_authentication_delay_ms must be >= 0")
        self.tls = tls
        self.sasl = sasl
        self._faults_lock = threading.Lock()
        self._handshake_faults: list[tuple[str, float]] = []  # ("close" | "delay", seconds), in order
        self._closing = threading.Event()
        #: TLS handshakes the faults below closed or delayed so far
        self.tls_faults_applied = 0
        #: Kafka's connection.failed.authentication.delay.ms: how long a failed SASL authentication's answer
        #: (and the close after it) is held back
        self.failed_authentication_delay_ms = failed_authentication_delay_ms

    @property
    def security_protocol(self) -> str:
        """What a client sets as ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
        if self.sasl is None:
            return "SSL" if self.tls is not None else "PLAINTEXT"
        return "SASL_SSL" if self.tls is not None else "SASL_PLAINTEXT"

    def wrap(self, sock: socket.socket) -> socket.socket:
        """The socket the connection will use: ``sock`` itself, or a TLS socket over it (no handshake yet)."""
        if self.tls is None:
            return sock
        return self.tls.server_context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)

    def handshake(self, sock: socket.socket, broker_id: int, connection_id: int) -> ConnectionAuth:
        """Run the TLS handshake (if ``sock`` is a TLS socket); the connection's authentication state.

        Raises ``ssl.SSLError`` / ``OSError`` when the handshake fails (the client trusts another CA, sends no
        certificate where one is required, speaks plaintext, ...); a client speaking plaintext first gets the
        TLS alert a Kafka broker sends it.
        """
        tls_principal = None
        if isinstance(sock, ssl.SSLSocket):
            self._apply_handshake_fault(sock)
            try:
                sock.do_handshake()
            except ssl.SSLError as exc:
                if exc.reason in _NOT_TLS:  # a client speaking plaintext: Kafka answers with an alert
                    with contextlib.suppress(OSError):
                        os.write(sock.fileno(), _KAFKA_ALERT)
                raise
            tls_principal = certificate_principal(sock)
        return ConnectionAuth(self.sasl, tls_principal, broker_id=broker_id, connection_id=connection_id)

    # -- faults (tests) ----------------------------------------------------------------------------

    def close_tls_handshakes(self, count: int = 1) -> None:
        """The next ``count`` connections are closed in the middle of the TLS handshake: the broker reads
        the client's first flight (its ClientHello) and closes without answering."""
        self._add_faults("close", 0.0, count)

    def delay_tls_handshakes(self, delay_ms: int, count: int = 1) -> None:
        """The next ``count`` connections' TLS handshakes start ``delay_ms`` late (a slow or loaded broker):
        the broker answers the ClientHello only then."""
        self._add_faults("delay", delay_ms / 1000, count)

    def _add_faults(self, kind: str, seconds: float, count: int) -> None:
        if self.tls is None:
            raise ValueError("TLS handshake faults need a TLS listener: MockCluster(tls=True)")
        with self._faults_lock:
            self._handshake_faults.extend([(kind, seconds)] * count)

    def _apply_handshake_fault(self, sock: ssl.SSLSocket) -> None:
        with self._faults_lock:
            if not self._handshake_faults:
                return
            kind, seconds = self._handshake_faults.pop(0)
            self.tls_faults_applied += 1
        if kind == "delay":
            self._closing.wait(seconds)
            return
        with contextlib.suppress(OSError):
            os.read(sock.fileno(), 65536)  # the ClientHello: the client now waits for our answer
        raise ConnectionAbortedError("closed in the middle of the TLS handshake (injected)")

    def close(self) -> None:
        """Remove the certificate files."""
        self._closing.set()
        if self.tls is not None:
            self.tls.close()
