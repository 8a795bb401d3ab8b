"""How a MockCluster's brokers accept connections: the security protocol of their one listener.

Why one object: the options of ``MockCluster(tls=..., sasl_mechanisms=..., users=..., ...)`` decide together
which of Kafka's four security protocols the brokers speak - PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL -
and the server needs one thing to ask for each new connection: :meth:`ListenerSecurity.wrap` (the socket it
will use), then :meth:`ListenerSecurity.handshake` (the TLS handshake if any, and the connection's
:class:`ConnectionAuth`). Options that only make sense together are
checked here, once, with a message naming the option.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping, Sequence

from .connection_auth import ConnectionAuth
from .sasl import OAUTHBEARER, OAuthToken, SaslSettings
from .tls import DEFAULT_HOSTNAMES, TlsMaterial, certificate_principal

__all__ = ["ListenerSecurity"]


class ListenerSecurity:
    """TLS material and SASL settings of the brokers' listener (both optional: PLAINTEXT by default)."""

    def __init__(
        self,
        *,
        tls: bool = False,
        tls_client_auth: str = "none",
        tls_hostnames: Sequence[str] = DEFAULT_HOSTNAMES,
        sasl_mechanisms: Sequence[str] = (),
        users: Mapping[str, str] | None = None,
        oauth_tokens: Mapping[str, OAuthToken | str] | None = None,
        sasl_session_lifetime_ms: int = 0,
    ) -> None:
        if not tls and (tls_client_auth != "none" or tuple(tls_hostnames) != DEFAULT_HOSTNAMES):
            raise ValueError("tls_client_auth and tls_hostnames need tls=True")
        mechanisms = tuple(sasl_mechanisms)
        if not mechanisms and (users or oauth_tokens or sasl_session_lifetime_ms):
            raise ValueError("users, oauth_tokens and sasl_session_lifetime_ms need sasl_mechanisms")
        if oauth_tokens and OAUTHBEARER not in mechanisms:
            raise ValueError("oauth_tokens need 'OAUTHBEARER' in sasl_mechanisms")
        tokens = {t: OAuthToken(v) if isinstance(v, str) else v for t, v in (oauth_tokens or {}).items()}
        self.sasl = None
        if mechanisms:
            self.sasl = SaslSettings(mechanisms, users or {}, tokens, sasl_session_lifetime_ms)
        self.tls = TlsMaterial(tls_hostnames, tls_client_auth) if tls else None

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
