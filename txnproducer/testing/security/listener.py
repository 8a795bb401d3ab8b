"""How a MockCluster's brokers accept connections: the security protocol of their one listener.

Why one object: the TLS material (``tls.py``) and the SASL settings (``sasl.py``) that ``MockCluster`` builds
from its options decide together which of Kafka's four security protocols the brokers speak - PLAINTEXT,
SSL, SASL_PLAINTEXT, SASL_SSL - and the server needs one thing to ask for each new connection:
:meth:`ListenerSecurity.wrap` (the socket it will use), then :meth:`ListenerSecurity.handshake` (the TLS
handshake if any, and the connection's :class:`ConnectionAuth`).
"""

from __future__ import annotations

import socket
import ssl

from .connection_auth import ConnectionAuth
from .sasl import SaslSettings
from .tls import TlsMaterial, certificate_principal

__all__ = ["ListenerSecurity"]


class ListenerSecurity:
    """TLS material and SASL settings of the brokers' listener (both optional: PLAINTEXT by default)."""

    def __init__(self, tls: TlsMaterial | None = None, sasl: SaslSettings | None = None,
                 failed_authentication_delay_ms: int = 100) -> None:
        if failed_authentication_delay_ms < 0:
            raise ValueError("failed_authentication_delay_ms must be >= 0")
        self.tls = tls
        self.sasl = sasl
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
        certificate where one is required, speaks plaintext, ...).
        """
        tls_principal = None
        if isinstance(sock, ssl.SSLSocket):
            sock.do_handshake()
            tls_principal = certificate_principal(sock)
        return ConnectionAuth(self.sasl, tls_principal, broker_id=broker_id, connection_id=connection_id)

    def close(self) -> None:
        """Remove the certificate files."""
        if self.tls is not None:
            self.tls.close()
