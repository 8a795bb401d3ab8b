"""TCP side of a mock broker: a listener thread, one thread per connection, framing, decode, dispatch.

Requests on one connection are handled strictly in order (a client may pipeline; Kafka answers in
order too). Handlers run under ``state.lock``. Nothing a client sends can kill a broker thread:
an undecodable request, or an API key/version this broker does not speak, closes that connection
(as Kafka does); an ApiVersions request with a too-new version gets the v0 answer
UNSUPPORTED_VERSION with the API list, as Kafka does, so the client can downgrade.

Dispatch goes through the handler list (``handlers.lookup``), the one place that says which APIs a
broker answers. Fault rules (``faults.py``) are applied here, around the handler: an injected error is
answered by ``error_responses.py`` without running the handler. A Produce whose leader must first ask the
transaction's coordinator (the KIP-890 check, ``handlers.produce.coordinator_to_verify_with``), or a
TxnOffsetCommit v5 whose group coordinator must (``handlers.txn_offset_commit``), while that coordinator is
black-holed is held, as Kafka's leader waits on its request to a frozen coordinator even
after the coordinator moved; when the black hole is lifted it is answered CONCURRENT_TRANSACTIONS, unhandled
(what Kafka 4.1.0 answered when the frozen broker woke up).

Security (``security/``): each accepted socket goes through the listener (``ListenerSecurity``): with TLS
the connection thread runs the TLS handshake first (a failed handshake closes the connection and is logged
as ``mock.tls_handshake_failed``); every request is first admitted by the connection's ``ConnectionAuth``
(on a SASL listener: nothing but ApiVersions and SaslHandshake before authentication - anything else closes
the connection unanswered, or is answered ILLEGAL_SASL_STATE and closed in the middle of an exchange), and
a SASL answer that ends the connection (a failed authentication) is written before the connection closes,
both held back by ``failed_authentication_delay_ms`` as Kafka holds them back.
Handlers see the connection's principal and the cluster's authorizer in their ``RequestContext``. Without
TLS and SASL the socket, the framing and every answer are the plaintext ones, unchanged.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from typing import TYPE_CHECKING, Any, Protocol

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.primitives import read_uvarint

from . import api_messages
from .error_responses import error_response
from .faults import DELAY, DROP_AFTER, DROP_BEFORE, ERROR, FaultPlan
from .handlers import RequestContext, lookup, produce, txn_offset_commit
from .request_log import RequestLog, extract_fields, response_error_codes
from .security.connection_auth import ConnectionAuth, Verdict
from .security.listener import ListenerSecurity

if TYPE_CHECKING:  # pragma: no cover
    from .cluster_state import ClusterState
    from .security.acl import Authorizer

_log = get_logger("txnproducer.testing.server")

MAX_FRAME = 100 * 1024 * 1024
API_VERSIONS = 18
# Requests the receiving broker checks with the transaction coordinator first (KIP-890): api key -> the
# broker it asks, or None (those handlers' ``coordinator_to_verify_with``).
_VERIFIED_WITH_THE_COORDINATOR = {
    0: produce.coordinator_to_verify_with,  # Produce, at the partition leader
    28: txn_offset_commit.coordinator_to_verify_with,  # TxnOffsetCommit v5, at the group coordinator
}


# What a broker answers to a request it read before the controller fenced it (frozen meanwhile): the
# requests that need a leadership it lost - a coordinator's or a partition's
_FENCED_ANSWERS = {
    **dict.fromkeys((8, 9, 11, 12, 13, 14, 22, 24, 25, 26, 28, 65, 68), ec.NOT_COORDINATOR),
    **dict.fromkeys((0, 1), ec.NOT_LEADER_OR_FOLLOWER),
}


class ServerHost(Protocol):
    """What a broker server needs from its cluster."""

    state: ClusterState
    faults: FaultPlan
    requests: RequestLog
    listener: ListenerSecurity
    authorizer: Authorizer | None

    def next_connection_id(self) -> int: ...

    def api_versions(self) -> list[tuple[int, int, int]]: ...


class _Drop(Exception):
    """Close this connection now (fault injection or protocol violation)."""


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def parse_request_header(frame: memoryview, flexible: bool) -> tuple[int, int, int, str | None, int]:
    """(api_key, api_version, correlation_id, client_id, body offset) of a request frame."""
    api_key, api_version, correlation_id, client_len = struct.unpack_from(">hhih", frame, 0)
    pos = 10
    client_id: str | None = None
    if client_len >= 0:
        client_id = bytes(frame[pos : pos + client_len]).decode("utf-8")
        if len(client_id.encode("utf-8")) != client_len:
            raise ValueError("truncated client id")
        pos += client_len
    if flexible:
        count, pos = read_uvarint(frame, pos)
        for _ in range(count):
            _, pos = read_uvarint(frame, pos)
            size, pos = read_uvarint(frame, pos)
            pos += size
        if pos > len(frame):
            raise ValueError("truncated tagged fields")
    return api_key, api_version, correlation_id, client_id, pos


class _Connection:
    """One accepted connection. Only the thread serving it closes its descriptor (:meth:`release`);
    :meth:`close`, called from any thread, marks it closed and shuts the socket down, which wakes that
    thread. Why not close it there: the serving thread moves the descriptor into a TLS socket object
    (``wrap_socket`` reads ``fileno()``, then detaches the plain socket), and a close landing in between
    freed the number while the TLS socket still held it; closed again through that object, it could by
    then be any new socket of the process - in a parallel test suite, another test's listener."""

    def __init__(self, sock: socket.socket, connection_id: int) -> None:
        self.sock = sock
        self.id = connection_id
        self.closed = False
        self.auth = ConnectionAuth(None)  # replaced by the listener's once the connection is accepted
        # the request being handled was read before the broker was fenced (while it was frozen)
        self.stale = False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True  # before reading sock: the serving thread sets sock, then reads closed
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def release(self) -> None:
        """The serving thread, at its end: close the descriptor."""
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()


class BrokerServer:
    """One broker's listener and its connections."""

    def __init__(self, host: ServerHost, broker_id: int, bind_host: str, port: int) -> None:
        self.host = host
        self.broker_id = broker_id
        self.bind_host = bind_host
        self.port = port
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[_Connection] = set()
        self._conn_lock = threading.Lock()
        self._stopping = threading.Event()

    @property
    def running(self) -> bool:
        return self._listener is not None

    def start(self) -> None:
        """Bind (the same port again after a stop) and start accepting."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.bind_host, self.port))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        sock.settimeout(0.5)  # so the accept loop notices stop() even if close does not wake accept
        self._stopping = threading.Event()
        self._listener = sock
        self._thread = threading.Thread(
            target=self._accept_loop,
            args=(sock, self._stopping),
            name=f"mock-broker-{self.broker_id}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and close every connection; returns once the listener thread has exited."""
        self._stopping.set()
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        self.drop_connections()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None

    def drop_connections(self) -> None:
        with self._conn_lock:
            conns = list(self._connections)
        for conn in conns:
            conn.close()

    def connection_count(self) -> int:
        with self._conn_lock:
            return len(self._connections)

    def _accept_loop(self, listener: socket.socket, stopping: threading.Event) -> None:
        while not stopping.is_set():
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            if stopping.is_set():
                sock.close()
                break
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(sock, self.host.next_connection_id())
            with self._conn_lock:
                self._connections.add(conn)
            threading.Thread(
                target=self._serve,
                args=(conn, stopping),
                name=f"mock-broker-{self.broker_id}-conn-{conn.id}",
                daemon=True,
            ).start()

    def _accept(self, conn: _Connection, stopping: threading.Event) -> bool:
        """The listener's part: TLS handshake and the connection's authentication state; False: close.
        A frozen broker's kernel takes the connection, but nothing more happens until it is thawed."""
        if not self._wait_while_frozen(stopping):
            return False
        listener = self.host.listener
        conn.sock = listener.wrap(conn.sock)
        if conn.closed:  # dropped while being wrapped (its shutdown may have missed the new socket)
            return False
        try:
            conn.auth = listener.handshake(conn.sock, self.broker_id, conn.id)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            _log.info("mock.tls_handshake_failed", broker_id=self.broker_id, connection_id=conn.id,
                      reason=str(exc))
            return False
        return True

    def _serve(self, conn: _Connection, stopping: threading.Event) -> None:
        try:
            if not self._accept(conn, stopping):
                return
            while not stopping.is_set():
                head = _read_exact(conn.sock, 4)
                if head is None:
                    break
                size = struct.unpack(">i", head)[0]
                if size < 0 or size > MAX_FRAME:
                    break
                frame = _read_exact(conn.sock, size)
                if frame is None:
                    break
                fences = self.host.faults.fence_count(self.broker_id)
                if not self._wait_while_frozen(stopping):
                    break
                if self.host.faults.is_black_hole(self.broker_id):
                    continue
                conn.stale = fences != self.host.faults.fence_count(self.broker_id)
                if conn.auth.unframed:  # after SaslHandshake v0: a bare SASL token
                    if not self._unframed_token(conn, frame):
                        break
                    continue
                if not self._handle_frame(conn, memoryview(frame), stopping):
                    break
        except OSError:
            pass
        except Exception:  # pragma: no cover - last line of defence: never kill the broker
            _log.exception("mock.connection_failed", broker_id=self.broker_id, connection_id=conn.id)
        finally:
            conn.release()
            with self._conn_lock:
                self._connections.discard(conn)

    # ------------------------------------------------------------------ frames
    def _handle_frame(self, conn: _Connection, frame: memoryview, stopping: threading.Event) -> bool:
        """Handle one request; False means close the connection."""
        if len(frame) < 10:
            return False
        api_key, api_version = struct.unpack_from(">hh", frame, 0)
        verdict = conn.auth.admit(api_key, self.host.state.now_ms())
        if verdict is Verdict.CLOSE:  # Kafka closes the connection without an answer
            self._delay_if_failed(conn)
            self.host.requests.append(
                api=api_messages.api_name(api_key), api_key=api_key, version=api_version,
                broker_id=self.broker_id, connection_id=conn.id, fields={}, dropped=True,
                principal=conn.auth.principal)
            return False
        req_cls = api_messages.request_class(api_key)
        if api_key == API_VERSIONS and req_cls is not None and api_version > req_cls.max_version:
            return self._unsupported_api_versions(conn, frame)
        if req_cls is None or lookup(api_key, self.host.listener.sasl is not None) is None:
            return False
        lo, hi = req_cls.valid_versions
        if not lo <= api_version <= hi:
            return False
        if api_key != API_VERSIONS and not self.host.state.speaks(self.broker_id, api_key, api_version):
            # an older broker (MockCluster.set_broker_api_versions) cannot parse the request and
            # closes the connection, as Kafka does; the log shows what it refused
            self.host.requests.append(api=api_messages.api_name(api_key), api_key=api_key,
                                      version=api_version, broker_id=self.broker_id,
                                      connection_id=conn.id, fields={}, dropped=True)
            return False
        try:
            _, _, correlation_id, client_id, pos = parse_request_header(
                frame, req_cls.flexible_version_q(api_version)
            )
            request = req_cls.decode(frame[pos:], version=api_version)
        except Exception:
            _log.info(
                "mock.undecodable_request", broker_id=self.broker_id, api_key=api_key, api_version=api_version
            )
            return False
        ctx = RequestContext(self.broker_id, api_key, api_version, correlation_id, client_id, conn.id,
                             principal=conn.auth.principal, authorizer=self.host.authorizer, auth=conn.auth)
        return self._process(conn, ctx, request, stopping, refused=verdict is Verdict.REFUSE)

    def _process(
        self, conn: _Connection, ctx: RequestContext, request: Any, stopping: threading.Event,
        refused: bool = False,
    ) -> bool:
        faults = self.host.faults
        state = self.host.state
        fields = extract_fields(ctx.api_key, request)
        name = api_messages.api_name(ctx.api_key)
        log_args = {
            "api": name,
            "api_key": ctx.api_key,
            "version": ctx.api_version,
            "broker_id": self.broker_id,
            "connection_id": conn.id,
            "fields": fields,
            "principal": ctx.principal,
        }
        if refused:  # a request in the middle of a SASL exchange: ILLEGAL_SASL_STATE, then close (as Kafka)
            conn.auth.close_after_response = True
            return self._send(conn, ctx, error_response(
                ctx.api_key, ctx.api_version, request, ec.ILLEGAL_SASL_STATE, state), False, log_args)
        injected, code = faults.take(ERROR, ctx.api_key, self.broker_id)
        if not injected and conn.stale and ctx.api_key in _FENCED_ANSWERS:
            # read before the controller fenced this (frozen) broker: Kafka's append of it fails, the
            # broker no longer leads what the request needs
            stale = error_response(ctx.api_key, ctx.api_version, request, _FENCED_ANSWERS[ctx.api_key], state)
            return self._send(conn, ctx, stale, False, log_args)
        if not injected and faults.take(DROP_BEFORE, ctx.api_key, self.broker_id)[0]:
            self.host.requests.append(dropped=True, **log_args)
            return False
        verifies = _VERIFIED_WITH_THE_COORDINATOR.get(ctx.api_key)
        if not injected and verifies is not None:
            with state.lock:
                asks = verifies(state, ctx, request)
            if asks is not None and faults.is_silent(asks):
                if not self._wait_for_answer_from(asks, stopping):
                    return False
                injected, code = True, ec.CONCURRENT_TRANSACTIONS
        if injected:
            code, log_start_offset = code if isinstance(code, tuple) else (code, None)
            response = error_response(ctx.api_key, ctx.api_version, request, code, state, log_start_offset)
        else:
            try:
                handler = lookup(ctx.api_key, self.host.listener.sasl is not None)
                assert handler is not None
                with state.lock:
                    response = handler(state, ctx, request)
            except Exception:
                _log.exception("mock.handler_failed", broker_id=self.broker_id, api=name)
                try:
                    response = error_response(
                        ctx.api_key, ctx.api_version, request, ec.UNKNOWN_SERVER_ERROR, state
                    )
                except Exception:
                    self.host.requests.append(dropped=True, **log_args)
                    return False
            if faults.take(DROP_AFTER, ctx.api_key, self.broker_id)[0]:
                self.host.requests.append(dropped=True, **log_args)
                return False
        delayed, delay_ms = faults.take(DELAY, ctx.api_key, self.broker_id)
        if delayed and stopping.wait(delay_ms / 1000.0):
            self.host.requests.append(dropped=True, **log_args)
            return False
        if response is None:  # Produce with acks=0: no answer
            self.host.requests.append(injected=injected, **log_args)
            return True
        return self._send(conn, ctx, response, injected, log_args)

    def _wait_for_answer_from(self, broker_id: int, stopping: threading.Event) -> bool:
        """Hold a request until the black-holed or frozen ``broker_id`` answers again - even after the
        coordinator moved elsewhere: Kafka's leader keeps waiting on the request it sent to the silent
        broker; False when this broker stops meanwhile."""
        while not self.host.faults.wait_while_black_hole(broker_id, 0.2):
            if stopping.is_set():
                return False
        return True

    def _wait_while_frozen(self, stopping: threading.Event) -> bool:
        """A frozen broker (SIGSTOP) handles nothing: what it read waits here, in order, until it is
        thawed; False when this broker stops meanwhile."""
        faults = self.host.faults
        while not faults.wait_while_frozen(self.broker_id, 0.2):
            if stopping.is_set():
                return False
        return True

    def _send(self, conn: _Connection, ctx: RequestContext, response: Any, injected: bool,
              log_args: dict[str, Any]) -> bool:
        """Write ``response``; False when the connection must close (the write failed, or the answer was
        its last)."""
        try:
            response.with_header(correlation_id=ctx.correlation_id)
            data = response.encode(header=True, framed=True)
        except Exception:
            _log.exception("mock.encode_failed", broker_id=self.broker_id, api=log_args["api"])
            self.host.requests.append(dropped=True, **log_args)
            return False
        self._delay_if_failed(conn)
        # logged before the write: a client holding a response always finds its entry in the log
        self.host.requests.append(error_codes=response_error_codes(response), injected=injected, **log_args)
        try:
            conn.sock.sendall(data)
        except OSError:
            return False
        return not conn.auth.close_after_response

    def _unframed_token(self, conn: _Connection, token: bytes) -> bool:
        """A bare SASL token after SaslHandshake v0: answer the bare challenge; False (close) on failure."""
        challenge = conn.auth.authenticate_unframed(token, self.host.state.now_ms())
        self._delay_if_failed(conn)
        self.host.requests.append(api="SaslBytes", api_key=-1, version=0, broker_id=self.broker_id,
                                  connection_id=conn.id, fields={}, dropped=challenge is None,
                                  principal=conn.auth.principal)
        if challenge is None:  # v0 has no error answer: Kafka closes the connection
            return False
        try:
            conn.sock.sendall(struct.pack(">i", len(challenge)) + challenge)
        except OSError:
            return False
        return True

    def _delay_if_failed(self, conn: _Connection) -> None:
        """Kafka holds a failed authentication's answer and close back (KIP-306); a stop ends the wait."""
        if conn.auth.failed:
            self._stopping.wait(self.host.listener.failed_authentication_delay_ms / 1000.0)

    def _unsupported_api_versions(self, conn: _Connection, frame: memoryview) -> bool:
        """Kafka's answer to an unknown ApiVersions version: v0, UNSUPPORTED_VERSION, the API list."""
        from kafka.protocol.metadata import ApiVersionsResponse

        correlation_id = struct.unpack_from(">i", frame, 4)[0]
        api_keys = [
            {"api_key": k, "min_version": lo, "max_version": hi}
            for k, lo, hi in self.host.state.capped_versions(self.broker_id, self.host.api_versions())
        ]
        response = api_messages.build(
            ApiVersionsResponse, 0, {"error_code": ec.UNSUPPORTED_VERSION, "api_keys": api_keys}
        )
        response.with_header(correlation_id=correlation_id)
        data = response.encode(header=True, framed=True)
        self.host.requests.append(
            api="ApiVersions",
            api_key=API_VERSIONS,
            version=struct.unpack_from(">h", frame, 2)[0],
            broker_id=self.broker_id,
            connection_id=conn.id,
            fields={},
            error_codes=(ec.UNSUPPORTED_VERSION,),
            principal=conn.auth.principal,
        )
        try:
            conn.sock.sendall(data)
        except OSError:
            return False
        return True
