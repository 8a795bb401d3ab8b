"""A connection to one broker: the one way every request of the library reaches the cluster.

Why our own: kafka-python's connection runs every request through its coroutine event loop - a task to
write, a task per read that registers and unregisters the socket in the selector, futures and timers for
the timeout, all in Python - about twice the CPU of a plain non-blocking socket per round trip
(measurements in ``benchmarks/README.md``), and it is a private package whose internals change between
releases. Here each request is framed (:mod:`txnproducer._internal.protocol.framing`: kafka-python's
message classes encode the bodies, or our own codecs on the hot path), written on a non-blocking socket
and its answer decoded with the response class of the version sent. Every API rides on it: Produce and
Fetch, bootstrap and Metadata, the coordinators' requests, the group member's and the admin tools'.
The split of received bytes into frames is ours (see :meth:`DirectConnection._deliver`); so are TLS
(:mod:`.tls_channel`) and SASL (:mod:`.sasl_authenticator`) when the security protocol asks for them
(``security``).

What this class adds, with the Java client's ``NetworkClient`` semantics:

- a non-blocking connect, then (SSL, SASL_SSL) the TLS handshake, both bounded by
  ``socket_connection_setup_timeout_ms``; then an ApiVersions exchange before the connection counts
  as ready, so that every request sent on it is built for the versions this broker speaks (brokers
  of two versions during a rolling upgrade); then (SASL_*) SaslHandshake and SaslAuthenticate, also
  within the setup timeout (as the Java client's channel is not ready before it authenticated);
- KIP-368: re-authentication before the broker's session ends, without dropping what is in flight
  (:mod:`.sasl_authenticator` says how);
- requests sent while connecting or re-authenticating held and written in order once the
  connection is open, at most what the socket takes;
- every in-flight request's future failed when the connection drops, and the connection closed
  when a request outlives ``request_timeout_ms`` (KafkaConnectionError / RequestTimedOutError,
  which callers treat as retriable) - or its own timeout, for a request the broker holds on
  purpose (a consumer group's JoinGroup waits up to its rebalance timeout, as the Java client's
  ``joinGroupTimeoutMs``);
- broker throttling (KIP-219): after an answer with ``throttle_time_ms`` nothing more is written
  until that time has passed;
- a request can be abandoned (:meth:`DirectConnection.abandon`): its caller stops waiting and may send
  it elsewhere, while its answer, if it comes, is read and dropped.

A connection that fails before it is ready says how (``setup_failed``, ``error``): the TLS error
(chained in a ``TlsHandshakeFailed``), the SASL error, or ``ClosedBeforeReady``; ``auth_failures.py``
reads them.

Thread rule: only the network thread (the one that polls the selector: the Sender, a group member's IO
thread, an admin call's thread) calls into it.
"""

from __future__ import annotations

import collections
import contextlib
import selectors
import socket
import struct
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import kafka.errors as kerrors
from kafka.protocol.frame import KafkaBytes

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol.framing import RequestFramer, read_response_header

from .channel_security import ChannelSecurity
from .connection_errors import TlsAnswerToPlaintext, looks_like_tls
from .connection_setup import CLOSED, CONNECTING, DEFAULT_SOCKET_OPTIONS, READY, TLS, ConnectionSetup
from .future import Future
from .poller import Registry
from .tls_channel import TlsChannel

__all__ = ["DirectConnection"]

_RECV_SIZE = 65536
_LARGE_FRAME = 2 * _RECV_SIZE  # a frame at least this large is received straight into its own buffer
_SIZE = struct.Struct(">i")
_MAX_FRAME = 100_000_000  # kafka-python's receive_message_max_bytes default


class _Expected(NamedTuple):
    response_class: Any
    correlation_id: int
    flexible: bool | None  # response header with tagged fields; None: the class reads it
    timeout_s: float | None = None  # the request's own timeout; None: request_timeout_ms



class _Abandoned(Future):
    __slots__ = ()  # what an abandoned request waits with: nobody listens to it (see abandon())


class DirectConnection(ConnectionSetup):
    """One connection to one broker; see the module docstring."""

    def __init__(self, node_id: Any, host: str, port: int, *, selector: Registry,
                 client_id: str, request_timeout_s: float, setup_timeout_s: float,
                 on_close: Callable[[DirectConnection, bool], None] | None = None,
                 api_versions_request: Callable[[int], Any] | None = None,
                 on_ready: Callable[[DirectConnection, Any], None] | None = None,
                 security: ChannelSecurity | None = None,
                 socket_options: tuple[tuple[int, int, int], ...] = DEFAULT_SOCKET_OPTIONS) -> None:
        """``api_versions_request(version)`` builds the ApiVersions request sent first on the
        connection (None: the connection is ready as soon as it is connected, and TLS'd if
        ``security`` says so; SASL needs the exchange); ``on_ready`` is told the answer;
        ``security`` is the TLS context and SASL mechanism (None: plaintext); ``socket_options``
        are set on the socket before it connects."""
        if security is not None and security.sasl_mechanism is not None and api_versions_request is None:
            raise ValueError("SASL needs the ApiVersions exchange (api_versions_request)")
        self.node_id = node_id
        self._on_close = on_close  # (connection, was_ready): told before the futures fail
        self._api_versions_request = api_versions_request
        self._on_ready = on_ready
        #: api key -> (min, max) of this broker, from its ApiVersions answer (empty until then)
        self.api_versions: dict[int, tuple[int, int]] = {}
        self.host = host
        self.port = port
        self._selector = selector
        self._request_timeout_s = request_timeout_s
        self._framer = RequestFramer(client_id)
        self._correlation_id = 0
        # (future, deadline, what the answer must be) per request expecting one, in wire order
        self._in_flight: collections.deque[tuple[Future, float, _Expected]] = collections.deque()
        self._own_timeouts = 0  # requests in flight with a timeout of their own (rare)
        self.abandoned = 0  # abandoned requests not answered yet: while any, the broker is silent
        self.heard_again_at = 0.0  # when the last of them was answered (monotonic)
        self._rbuf = bytearray()  # the start of a frame not yet complete
        # a large frame being received straight into its own buffer (see _read), and how much of it came
        self._frame: KafkaBytes | None = None
        self._frame_view: memoryview | None = None
        self._filled = 0
        self._out: collections.deque[memoryview] = collections.deque()  # bytes not yet written
        # requests sent while the connection is not open (connecting, re-authenticating): each frame
        # with what its answer must be (None: no answer expected), written once it is open
        self._queued: collections.deque[tuple[memoryview, tuple[Future, _Expected] | None]] = \
            collections.deque()
        self._open = False  # requests are written as they are sent (ready, not re-authenticating)
        self._events = 0  # what the selector watches for us
        self.throttled_until = 0.0
        self.state = CONNECTING
        #: when the connection attempt began (monotonic): the reconnect backoff counts from it
        self.started_at = time.monotonic()
        self.connect_deadline = self.started_at + setup_timeout_s
        self._setup_timeout_s = setup_timeout_s
        self.error: BaseException | None = None
        #: True when the connection closed before it was ready or while re-authenticating: ``error``
        #: says how its setup or authentication failed
        self.setup_failed = False
        self._security = security
        self._tls: TlsChannel | None = None
        self._api_versions_answer: Any = None
        #: when to re-authenticate (monotonic; KIP-368), None when the session does not expire
        self.reauth_at: float | None = None
        self._reauthenticating = False
        self._log = get_logger("txnproducer.network")
        self._sock: socket.socket | None = None
        self._addresses: list[Any] = []
        self._socket_options = socket_options
        #: when a request was last sent or answered (monotonic): ``connections_max_idle_ms`` counts from it;
        #: ``last_read``: when the broker last sent anything
        self.last_activity = self.last_read = time.monotonic()
        self._connect()

    # -- state ----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.state == READY

    @property
    def closed(self) -> bool:
        return self.state == CLOSED

    @property
    def in_flight_count(self) -> int:
        """Requests sent and not answered yet, those held while the connection is not open included."""
        return len(self._in_flight) + len(self._queued)

    @property
    def peer_certificate(self) -> bytes | None:
        """The broker's TLS certificate (DER) on this connection; None without TLS or before the handshake."""
        return self._tls.peer_certificate() if self._tls is not None and self.state != TLS else None

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do (a timeout, the end of a throttle, the time to
        re-authenticate)."""
        state = self.state
        if state in (CONNECTING, TLS):
            return self.connect_deadline
        if state == CLOSED:
            return None
        deadline = self._first_deadline()
        if state != READY:
            if self._sasl_bound():
                deadline = self.connect_deadline if deadline is None else min(deadline, self.connect_deadline)
            return deadline
        if self.throttled_until:
            deadline = self.throttled_until if deadline is None else min(deadline, self.throttled_until)
        if self.reauth_at is not None:
            deadline = self.reauth_at if deadline is None else min(deadline, self.reauth_at)
        return deadline

    def _first_deadline(self) -> float | None:
        """The earliest deadline of a request in flight: the oldest one's, unless some request
        has a timeout of its own."""
        if not self._in_flight:
            return None
        if not self._own_timeouts:
            return self._in_flight[0][1]
        return min(deadline for _future, deadline, _expected in self._in_flight)

    # -- sending --------------------------------------------------------------------------------

    def send(self, request: Any, timeout_s: float | None = None) -> Future:
        """Frame ``request`` and write what the socket takes now; the rest when it is writable.

        ``timeout_s``: how long this request may wait for its answer, when not
        ``request_timeout_ms`` (a request the broker holds on purpose)."""
        future = Future()
        if self.state == CLOSED:
            return future.failure(self.error or kerrors.KafkaConnectionError(
                f"connection to broker {self.node_id} is closed"))
        correlation_id = self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        # raises before anything is queued when the request cannot be encoded
        data, response_class, flexible = self._framer.frame(request, correlation_id)
        expects = request.expect_response()
        if not expects:
            future.success(None)
        expected = _Expected(response_class, correlation_id, flexible, timeout_s)
        if self._open:
            now = self.last_activity = time.monotonic()
            if expects:
                self._track(future, now, expected)
            self._out.append(memoryview(data))
            self._flush(now)
        else:
            self._queued.append((memoryview(data), (future, expected) if expects else None))
        return future

    def abandon(self, future: Future, error: BaseException) -> bool:
        """Stop waiting here for ``future``'s answer: it fails now with ``error`` (its sender may send the
        request again, to another broker); an answer that still comes is read and dropped, so the stream
        stays in step, and the request's deadline still closes a connection that never answers. A request
        held while the connection is not open is not written at all. False: not waiting here.

        Why: a broker that stops answering without closing its connections (a long pause, a frozen
        process) keeps the request's caller waiting ``request_timeout_ms``; once the cluster has moved on
        (a new coordinator), the caller should not wait for it."""
        for index, (waiting, deadline, expected) in enumerate(self._in_flight):
            if waiting is future:
                self._in_flight[index] = (_Abandoned(), deadline, expected)
                self.abandoned += 1
                future.failure(error)
                return True
        for index, (_data, held) in enumerate(self._queued):
            if held is not None and held[0] is future:
                del self._queued[index]
                future.failure(error)
                return True
        return False

    def _track(self, future: Future, now: float, expected: _Expected) -> None:
        """Wait for ``expected``'s answer from ``now``, within its own timeout or request_timeout_ms."""
        if expected.timeout_s is None:
            deadline = now + self._request_timeout_s
        else:
            deadline = now + expected.timeout_s
            self._own_timeouts += 1
        self._in_flight.append((future, deadline, expected))

    def _send_internal(self, request: Any) -> Future:
        """Write a request of the connection's own (ApiVersions, SASL) ahead of any held request."""
        future = Future()
        if self.state == CLOSED:
            return future.failure(self.error or kerrors.KafkaConnectionError("connection closed"))
        correlation_id = self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        data, response_class, flexible = self._framer.frame(request, correlation_id)
        now = time.monotonic()
        self._in_flight.append((future, now + self._request_timeout_s,
                                _Expected(response_class, correlation_id, flexible)))
        self._out.append(memoryview(data))
        self._flush(now)
        return future

    def _release(self, now: float) -> None:
        """Open the connection: write the held requests, in order; their timeouts start now (as the
        Java client's start when a request is sent)."""
        self._open = True
        queued, self._queued = self._queued, collections.deque()
        for data, expected in queued:
            if expected is not None:
                self._track(expected[0], now, expected[1])
            self._out.append(data)
        self._flush(now)

    def _flush(self, now: float) -> None:
        """Write what the socket takes (before the connection is open: only its own requests)."""
        if self.throttled_until:
            if now < self.throttled_until:
                self._watch(selectors.EVENT_READ)  # wait for tick() at the throttle's end
                return
            self.throttled_until = 0.0
        sock = self._sock
        out = self._out
        assert sock is not None
        if self._tls is not None:
            self._flush_tls(sock, out)
            return
        while out:
            chunk = out[0]
            try:
                sent = sock.send(chunk)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self.close(kerrors.KafkaConnectionError(
                    f"could not write to broker {self.node_id} at {self.host}:{self.port}: {exc}"))
                return
            if sent == len(chunk):
                out.popleft()
            else:
                out[0] = chunk[sent:]
                break
        self._watch(selectors.EVENT_READ | selectors.EVENT_WRITE if out else selectors.EVENT_READ)

    def _flush_tls(self, sock: socket.socket, out: collections.deque[memoryview]) -> None:
        tls = self._tls
        assert tls is not None
        try:
            if out:
                tls.encrypt(out)
                out.clear()
            done = tls.send(sock)
        except OSError as exc:  # ssl.SSLError is an OSError
            self.close(self._io_error("write to", exc))
            return
        self._watch(selectors.EVENT_READ if done else selectors.EVENT_READ | selectors.EVENT_WRITE)

    # -- events from the selector (Sender thread, inside the network poll) ----------------------

    def on_events(self, events: int) -> None:
        state = self.state
        if state == CLOSED:
            return
        if state == CONNECTING:
            if events & (selectors.EVENT_WRITE | selectors.EVENT_READ):
                self._finish_connect()
            return
        if state == TLS:
            self._tls_handshake(bool(events & selectors.EVENT_READ))
            return
        if events & selectors.EVENT_READ:
            self._read()
        if events & selectors.EVENT_WRITE and self.state != CLOSED:
            self._flush(time.monotonic())

    def tick(self, now: float) -> None:
        """Enforce the setup and request timeouts; write what a finished throttle held back; begin
        re-authentication when it is due."""
        state = self.state
        if state in (CONNECTING, TLS):
            if now >= self.connect_deadline:
                self.close(self._setup_timeout_error())
            return
        if state == CLOSED:
            return
        first = self._first_deadline()
        if first is not None and first <= now:
            late = next(e for _f, d, e in self._in_flight if d <= now)
            api = str(getattr(late.response_class, "name", "request")).removesuffix("Response")
            bound = "request_timeout_ms" if late.timeout_s is None else f"its own {api} timeout"
            timeout_ms = int((self._request_timeout_s if late.timeout_s is None else late.timeout_s) * 1000)
            self.close(kerrors.RequestTimedOutError(
                f"no answer from broker {self.node_id} within {bound} ({timeout_ms} ms); "
                "connection closed"))
            return
        if state != READY:
            if self._sasl_bound() and now >= self.connect_deadline:
                self.close(self._setup_timeout_error())
            return
        if self.throttled_until and now >= self.throttled_until:
            self.throttled_until = 0.0
            if self._out:
                self._flush(now)
        if self.reauth_at is not None and now >= self.reauth_at:
            self._reauthenticate()

    def _read(self) -> None:
        """Read what the socket has. Small answers arrive in 64 KiB reads that are split into frames
        (:meth:`_deliver`); once the size of a frame larger than two reads is known, the rest of it is
        received straight into a buffer of its size (``recv_into``): one copy of a multi-MB Fetch
        answer instead of four (the reads, their join, the partial frame kept between reads, the
        frame's buffer) - about 0.25 us of CPU per 100-byte record read (``benchmarks/README.md``)."""
        sock = self._sock
        assert sock is not None
        self.last_activity = self.last_read = time.monotonic()
        if self._tls is not None:
            self._read_tls(sock, self._tls)
            return
        chunks: list[bytes] = []
        received = 0
        while True:
            if self._frame is not None:
                if not self._receive_frame(sock):
                    return
                if self._frame is not None:
                    return  # the socket is drained; the frame is not complete yet
                continue
            try:
                data = sock.recv(_RECV_SIZE)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self.close(kerrors.KafkaConnectionError(
                    f"could not read from broker {self.node_id}: {exc}"))
                return
            if not data:
                self._deliver(chunks)
                if self.state != CLOSED:
                    self.close(self._closed_error())
                return
            chunks.append(data)
            received += len(data)
            if len(data) < _RECV_SIZE:
                break
            if received >= _LARGE_FRAME:
                self._deliver(chunks)  # may start a large frame: the rest of it is read into it
                chunks, received = [], 0
                if self.state == CLOSED:
                    return
        self._deliver(chunks)

    def _read_tls(self, sock: socket.socket, tls: TlsChannel) -> None:
        try:
            chunks, eof = tls.receive(sock)
            if tls.has_output and not tls.send(sock):  # a TLS 1.3 KeyUpdate's answer
                self._watch(selectors.EVENT_READ | selectors.EVENT_WRITE)
        except OSError as exc:  # ssl.SSLError is an OSError
            self.close(self._io_error("read from", exc))
            return
        self._deliver(chunks)  # the answers before an end of stream first (a SASL failure's)
        if eof and self.state != CLOSED:
            self.close(self._closed_error())

    def _receive_frame(self, sock: socket.socket) -> bool:
        """Receive into the large frame under way and complete it once full. False: the connection
        closed (a read error, the broker closed it, or a callback of the answer closed it)."""
        frame, view = self._frame, self._frame_view
        assert frame is not None and view is not None
        while self._filled < len(frame):
            try:
                n = sock.recv_into(view[self._filled:])
            except (BlockingIOError, InterruptedError):
                return True
            except OSError as exc:
                self.close(self._io_error("read from", exc))
                return False
            if n == 0:
                self.close(self._closed_error())
                return False
            self._filled += n
        self._frame = self._frame_view = None
        self._filled = 0
        view.release()
        return self._complete(frame)

    def _deliver(self, chunks: list[bytes]) -> None:
        """Split the received bytes into response frames and complete their requests in order; a
        frame too large to wait for in reads of 64 KiB gets its own buffer, filled by :meth:`_read`.

        Why not kafka-python's ``KafkaProtocol.receive_bytes``: it copies every frame through two
        ``KafkaBytes`` buffers and decodes the size prefix with its generic codec; with the header check it
        cost ~40 us per answer against 20 us for the decode itself (EndTxn v5, 2026-11-22). Read by
        :mod:`txnproducer._internal.protocol.framing`; the body decode stays kafka-python's (or
        our Produce codec's), on a ``KafkaBytes`` as its parser does.
        """
        if not chunks:
            return
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        buf: bytes | bytearray
        if self._rbuf:
            self._rbuf += data
            buf = self._rbuf
        else:
            buf = data
        pos = 0
        end_of_data = len(buf)
        while end_of_data - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > _MAX_FRAME:
                if self.state != READY and pos == 0 and self._tls is None and looks_like_tls(buf):
                    self.close(TlsAnswerToPlaintext(
                        f"broker {self.node_id} at {self.host}:{self.port} answered with TLS"))
                    return
                self.close(kerrors.KafkaConnectionError(
                    f"broker {self.node_id} sent a frame of {size} bytes; the stream is lost"))
                return
            end = pos + 4 + size
            if end > end_of_data:
                # the rest goes straight into the frame's own buffer; over TLS every byte comes
                # decrypted through the channel instead, and the buffer of what came so far grows
                if size >= _LARGE_FRAME and self._tls is None:
                    frame = KafkaBytes(size)
                    got = end_of_data - pos - 4
                    frame[:got] = memoryview(buf)[pos + 4:end_of_data]
                    self._frame, self._frame_view, self._filled = frame, memoryview(frame), got
                    pos = end_of_data
                break
            frame = KafkaBytes(size)
            frame[:] = memoryview(buf)[pos + 4:end]  # one copy (a slice of buf would be a second)
            pos = end
            if not self._complete(frame):
                return
        if pos == 0 and buf is self._rbuf:
            return  # no frame completed: keep the buffer as it is, not a copy of it
        self._rbuf = bytearray(memoryview(buf)[pos:]) if pos < end_of_data else bytearray()

    def _complete(self, frame: KafkaBytes) -> bool:
        """Decode one answer and complete its request (in wire order); False when the connection is
        closed now (the answer was unreadable, or a callback closed it: the rest failed with it)."""
        if not self._in_flight:
            self.close(kerrors.KafkaConnectionError(
                f"broker {self.node_id} answered a request that was not sent"))
            return False
        future, _deadline, expected = self._in_flight.popleft()
        if expected.timeout_s is not None:
            self._own_timeouts -= 1
        if self.abandoned and type(future) is _Abandoned:
            self.abandoned -= 1  # a late answer: read (the stream stays in step) and dropped
            self.heard_again_at = time.monotonic()
        response_class = expected.response_class
        try:
            if expected.flexible is None:
                correlation_id = response_class.parse_header(frame).correlation_id
            else:
                correlation_id = read_response_header(frame, expected.flexible)
            if correlation_id != expected.correlation_id:
                raise kerrors.CorrelationIdError(
                    f"sent correlation id {expected.correlation_id}, got {correlation_id}")
            response = response_class.decode(frame)
        except Exception as exc:  # any decode failure: the stream is lost
            # kafka-python's decoders raise ValueError, struct.error and KafkaError, but a
            # garbled body can also surface as IndexError and the like; whatever it is, the
            # request must fail now and the connection close, or the request would wait forever
            error = kerrors.KafkaConnectionError(
                f"unreadable answer from broker {self.node_id} ({type(exc).__name__}: {exc})")
            self.close(error)
            future.failure(error)
            return False
        throttle_ms = getattr(response, "throttle_time_ms", 0)
        if throttle_ms:
            until = time.monotonic() + throttle_ms / 1000
            if until > self.throttled_until:
                self.throttled_until = until
                self._log.info("txn.broker_throttled", node=self.node_id, throttle_time_ms=throttle_ms)
        future.success(response)
        return self.state != CLOSED

    def _watch(self, events: int) -> None:
        if events == self._events or self._sock is None:
            return
        if self._events:
            self._selector.modify(self._sock, events, self)
        else:
            self._selector.register(self._sock, events, self)
        self._events = events

    def _drop_socket(self) -> None:
        sock, self._sock = self._sock, None
        if sock is None:
            return
        if self._events:
            with contextlib.suppress(KeyError, ValueError, RuntimeError):  # selector closed
                self._selector.unregister(sock)
            self._events = 0
        sock.close()

    def close(self, error: BaseException | None = None) -> None:
        """Close the socket and fail every request still waiting for an answer (idempotent)."""
        if self.state == CLOSED:
            return
        was_ready = self.state == READY
        self.setup_failed = not was_ready or self._reauthenticating
        self.state = CLOSED
        self._open = False
        self.error = error or kerrors.KafkaConnectionError(f"connection to broker {self.node_id} closed")
        self._drop_socket()
        self._tls = None
        self._out.clear()
        self._rbuf = bytearray()
        self._frame = self._frame_view = None  # a large answer under way is dropped with its request
        pending, self._in_flight = self._in_flight, collections.deque()
        self._own_timeouts = 0
        self.abandoned = 0
        held, self._queued = self._queued, collections.deque()
        if error is not None:
            self._log.info("txn.connection_lost", node=self.node_id, error=str(error),
                           in_flight=len(pending))
        if self._on_close is not None:
            self._on_close(self, was_ready)
        for future, _deadline, _header in pending:
            future.failure(self.error)
        for _data, expected in held:
            if expected is not None:
                expected[0].failure(self.error)
