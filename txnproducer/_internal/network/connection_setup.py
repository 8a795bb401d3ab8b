"""How the Sender's own connection becomes ready: TCP connect, TLS handshake, ApiVersions, SASL, KIP-368.

Why apart from :mod:`.connection`: that module is the request pipeline on an open socket (write, read,
split answers into frames, timeouts, close); this one is the steps before the pipeline opens, and the
re-authentication that pauses it, each a state of the connection (``state``):

``connecting`` (a non-blocking connect to each resolved address in turn) -> ``tls`` (SSL, SASL_SSL:
:mod:`.tls_channel`) -> ``handshake`` (ApiVersions: what this broker speaks) -> ``authenticating``
(SASL_*: :mod:`.sasl_authenticator`) -> ``ready``; ``closed`` from any of them. The setup timeout
(``socket_connection_setup_timeout_ms``) bounds the connect and the TLS handshake, and with SASL the
whole way to ``ready``, as the Java client's channel is not ready before it authenticated; without SASL
ApiVersions is bounded by ``request_timeout_ms``, like any request.

A failure on the way says how, in the exceptions ``auth_failures.py`` reads: the TLS error chained in a
``TlsHandshakeFailed``, the SASL error, or ``ClosedBeforeReady`` for a broker that closed without a word.

:class:`ConnectionSetup` is the base of :class:`~.connection.DirectConnection`, which provides the pipeline
methods declared at its end (one object per connection, one state, split in two files by concern).
"""

from __future__ import annotations

import collections
import errno
import selectors
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import kafka.errors as kerrors

from .channel_security import ChannelSecurity
from .connection_errors import ClosedBeforeReady, NotReachable, TlsHandshakeFailed
from .future import Future
from .sasl_authenticator import SaslAuthenticator, reauthentication_time
from .tls_channel import TlsChannel

__all__ = ["AUTHENTICATING", "CLOSED", "CONNECTING", "DEFAULT_SOCKET_OPTIONS", "HANDSHAKE", "READY", "TLS",
           "ConnectionSetup"]

CONNECTING = "connecting"
TLS = "tls"  # connected; the TLS handshake runs
HANDSHAKE = "handshake"  # the ApiVersions answer is awaited
AUTHENTICATING = "authenticating"  # the SASL exchange runs
READY = "ready"
CLOSED = "closed"
_PHASES = {CONNECTING: "the TCP connect", TLS: "the TLS handshake", HANDSHAKE: "the ApiVersions exchange",
           AUTHENTICATING: "SASL authentication"}
_IN_PROGRESS = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, errno.EALREADY})
_API_VERSIONS_KEY = 18
_API_VERSIONS_FIRST = 3  # the first version with the broker's features (KIP-584)
_UNSUPPORTED_VERSION = 35
#: what every connection's socket is given (the Java client's TCP_NODELAY, and keep-alive probes so that a
#: peer that vanished without a FIN is found by the kernel even on a connection idle for hours)
DEFAULT_SOCKET_OPTIONS: tuple[tuple[int, int, int], ...] = (
    (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
    (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
)


class ConnectionSetup:
    """The states before ``ready`` and re-authentication; see the module docstring."""

    # set by DirectConnection.__init__
    node_id: Any
    host: str
    port: int
    state: str
    api_versions: dict[int, tuple[int, int]]
    connect_deadline: float
    reauth_at: float | None
    _setup_timeout_s: float
    _security: ChannelSecurity | None
    _tls: TlsChannel | None
    _sock: socket.socket | None
    _addresses: list[Any]
    _socket_options: tuple[tuple[int, int, int], ...]
    _api_versions_request: Callable[[int], Any] | None
    _api_versions_answer: Any
    _on_ready: Callable[[Any, Any], None] | None
    _reauthenticating: bool
    _open: bool
    _in_flight: collections.deque[Any]
    _log: Any

    # -- the pipeline's side (connection.py) ------------------------------------------------------

    def _send_internal(self, request: Any) -> Future:
        raise NotImplementedError

    def _release(self, now: float) -> None:
        raise NotImplementedError

    def _watch(self, events: int) -> None:
        raise NotImplementedError

    def _drop_socket(self) -> None:
        raise NotImplementedError

    def close(self, error: BaseException | None = None) -> None:
        raise NotImplementedError

    # -- errors -----------------------------------------------------------------------------------------

    def _sasl_bound(self) -> bool:
        """The setup timeout also bounds ApiVersions and the SASL exchange (SASL_*)."""
        return self._security is not None and self._security.sasl_mechanism is not None

    def _setup_timeout_error(self) -> BaseException:
        bound = f"socket_connection_setup_timeout_ms ({int(self._setup_timeout_s * 1000)} ms)"
        if self.state == TLS:
            return TlsHandshakeFailed(
                f"TLS handshake with {self.host}:{self.port} not finished within the connection setup "
                f"timeout ({bound})")
        error: BaseException
        if self.state == CONNECTING:
            error = kerrors.KafkaConnectionError(
                f"could not connect to broker {self.node_id} at {self.host}:{self.port} within {bound}")
        else:
            error = kerrors.KafkaConnectionError(
                f"{_PHASES[self.state]} with broker {self.node_id} at {self.host}:{self.port} not finished "
                f"within {bound}")
        return error

    def _closed_error(self) -> BaseException:
        if self.state == READY:
            error: BaseException = kerrors.KafkaConnectionError(
                f"broker {self.node_id} at {self.host}:{self.port} closed the connection")
            return error
        return ClosedBeforeReady(f"broker {self.node_id} at {self.host}:{self.port} closed the connection "
                                 f"during {_PHASES[self.state]}, before answering")

    def _io_error(self, what: str, exc: BaseException) -> BaseException:
        """A read or write failure, with the cause chained (``auth_failures.py`` reads a TLS alert there)."""
        error: BaseException
        if self.state == TLS:
            error = TlsHandshakeFailed(f"Handshake failed: {exc}")
        else:
            error = kerrors.KafkaConnectionError(
                f"could not {what} broker {self.node_id} at {self.host}:{self.port}: {exc}")
        error.__cause__ = exc
        return error

    # -- TCP, TLS, ApiVersions -------------------------------------------------------------------

    def _connect(self) -> None:
        try:
            infos = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM)
            self._addresses = [info for info in infos if info[0] in (socket.AF_INET, socket.AF_INET6)]
        except OSError as exc:
            self.close(NotReachable(
                f"could not resolve broker {self.node_id} at {self.host}:{self.port}: {exc}"))
            return
        self._try_next_address(None)

    def _try_next_address(self, last_error: str | None) -> None:
        """Connect to the next resolved address (``localhost`` may resolve to ::1 first while the
        broker listens on 127.0.0.1 only); close with the last error when none is left."""
        self._drop_socket()
        while self._addresses:
            family, socktype, proto, _name, address = self._addresses.pop(0)
            try:
                sock = socket.socket(family, socktype, proto)
            except OSError as exc:
                last_error = str(exc)
                continue
            sock.setblocking(False)
            try:
                for level, option, value in self._socket_options:
                    sock.setsockopt(level, option, value)
            except OSError as exc:
                sock.close()
                last_error = f"socket option refused: {exc}"
                continue
            self._sock = sock
            code = sock.connect_ex(address)
            if code == 0:
                self._connected()
                return
            if code in _IN_PROGRESS:
                self._watch(selectors.EVENT_WRITE)
                return
            last_error = errno.errorcode.get(code, str(code))
            self._drop_socket()
        self.close(NotReachable(
            f"could not connect to broker {self.node_id} at {self.host}:{self.port}: "
            f"{last_error or 'no usable address'}"))

    def _finish_connect(self) -> None:
        sock = self._sock
        assert sock is not None
        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self._try_next_address(errno.errorcode.get(code, str(code)))
            return
        self._connected()

    def _connected(self) -> None:
        context = self._security.ssl_context if self._security is not None else None
        if context is None:
            self._start_session()
            return
        self.state = TLS
        try:
            self._tls = TlsChannel(context, self.host)
        except (ssl.SSLError, ValueError) as exc:
            error = TlsHandshakeFailed(f"Handshake failed: {exc}")
            error.__cause__ = exc
            self.close(error)
            return
        self._tls_handshake(False)

    def _tls_handshake(self, readable: bool) -> None:
        tls = self._tls
        sock = self._sock
        assert tls is not None and sock is not None
        try:
            done = tls.handshake(sock, readable)
        except OSError as exc:  # ssl.SSLError (certificate, alert, EOF) is an OSError
            self.close(self._io_error("handshake with", exc))
            return
        if not done:
            self._watch(selectors.EVENT_READ | (selectors.EVENT_WRITE if tls.has_output else 0))
            return
        self._log.debug("txn.tls_established", node=self.node_id, host=self.host, port=self.port,
                        tls_version=tls.version)
        self._start_session()

    def _start_session(self) -> None:
        if self._api_versions_request is None:
            self._ready(None)
            return
        # ApiVersions first, ahead of anything queued: its answer says what this broker speaks
        self.state = HANDSHAKE
        self._send_api_versions(_API_VERSIONS_FIRST)

    def _send_api_versions(self, version: int) -> None:
        assert self._api_versions_request is not None
        future = self._send_internal(self._api_versions_request(version))
        future.add_callback(self._on_api_versions)

    def _on_api_versions(self, response: Any) -> None:
        if response.error_code == _UNSUPPORTED_VERSION:
            # an older broker: ask again with the version its answer names (or v0)
            supported = [k.max_version for k in response.api_keys or () if k.api_key == _API_VERSIONS_KEY]
            self._send_api_versions(min(supported[0], _API_VERSIONS_FIRST - 1) if supported else 0)
            return
        if response.error_code != 0:
            self.close(kerrors.KafkaConnectionError(
                f"broker {self.node_id} answered ApiVersions with error code {response.error_code}"))
            return
        self.api_versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        if self._security is not None and self._security.sasl_mechanism is not None:
            self._api_versions_answer = response
            self.state = AUTHENTICATING
            self._authenticator().start(self.api_versions)
            return
        self._ready(response)

    # -- SASL (sasl_authenticator.py) -----------------------------------------------------------

    def _authenticator(self) -> SaslAuthenticator:
        security = self._security
        assert security is not None and security.sasl_mechanism is not None
        assert security.new_sasl_client is not None
        return SaslAuthenticator(security.sasl_mechanism, security.new_sasl_client, host=self.host,
                                 send=self._send_internal, done=self._authenticated,
                                 fail=self._authentication_failed)

    def _authenticated(self, session_lifetime_ms: int, sent_at: float) -> None:
        if self.state == CLOSED:
            return
        self.reauth_at = reauthentication_time(sent_at, session_lifetime_ms)
        if not self._reauthenticating:
            self._ready(self._api_versions_answer)
            return
        self._reauthenticating = False
        self._log.debug("txn.sasl_reauthenticated", node=self.node_id,
                        session_lifetime_ms=session_lifetime_ms)
        self._release(time.monotonic())

    def _authentication_failed(self, error: BaseException) -> None:
        self.close(error)

    def _reauthenticate(self) -> None:
        """KIP-368: authenticate again on this connection; requests sent meanwhile are held."""
        self.reauth_at = None
        self._reauthenticating = True
        self._open = False
        self._log.debug("txn.sasl_reauthenticating", node=self.node_id, in_flight=len(self._in_flight))
        self._authenticator().start(self.api_versions)

    def _ready(self, api_versions: Any) -> None:
        self.state = READY
        self._log.debug("txn.connection_ready", node=self.node_id, host=self.host, port=self.port)
        self._api_versions_answer = None
        if self._on_ready is not None and api_versions is not None:
            self._on_ready(self, api_versions)
        if self.state == READY:
            self._release(time.monotonic())

