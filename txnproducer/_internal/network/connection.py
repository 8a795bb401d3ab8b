"""The Sender's own plaintext connection to a broker, driven by events from the shared selector.

Why: every request the Sender sends through kafka-python's connection goes through its
coroutine event loop: a task to write, a task per read that registers and unregisters the
socket in the selector, futures and timers for the timeout, all in Python - about twice the CPU
of a plain non-blocking socket per round trip (measurements in ``benchmarks/README.md``). A
one-record transaction makes two round trips (Produce, EndTxn) on the Sender thread, and under
the GIL the Sender's CPU is the producer's throughput.

What stays kafka-python's: the request and response classes and their codec (each request frames
itself with its header), bootstrap, metadata, and every connection that needs TLS, SASL or a proxy
(the caller uses this class only for ``PLAINTEXT``). The split of received bytes into frames is
ours (see :meth:`DirectConnection._deliver`).

What this class adds, with the Java client's ``NetworkClient`` semantics:

- a non-blocking connect bounded by ``socket_connection_setup_timeout_ms``, then an ApiVersions
  exchange before the connection counts as ready, so that every request sent on it is built for
  the versions this broker speaks (brokers of two versions during a rolling upgrade);
- requests queued while connecting, written in order, at most what the socket takes;
- every in-flight request's future failed when the connection drops, and the connection closed
  when a request outlives ``request_timeout_ms`` (KafkaConnectionError / RequestTimedOutError,
  which callers treat as retriable) - or its own timeout, for a request the broker holds on
  purpose (a consumer group's JoinGroup waits up to its rebalance timeout, as the Java client's
  ``joinGroupTimeoutMs``);
- broker throttling (KIP-219): after an answer with ``throttle_time_ms`` nothing more is written
  until that time has passed.

Thread rule: only the Sender thread (the one that polls the selector) calls into it.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import selectors
import socket
import struct
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import kafka.errors as kerrors
from kafka.future import Future
from kafka.protocol.frame import KafkaBytes

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol.framing import RequestFramer, read_response_header

__all__ = ["DirectConnection"]

_CONNECTING = "connecting"
_HANDSHAKE = "handshake"  # connected; the ApiVersions answer is awaited
_READY = "ready"
_CLOSED = "closed"
_RECV_SIZE = 65536
_LARGE_FRAME = 2 * _RECV_SIZE  # a frame at least this large is received straight into its own buffer
_SIZE = struct.Struct(">i")
_MAX_FRAME = 100_000_000  # kafka-python's receive_message_max_bytes default
_IN_PROGRESS = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, errno.EALREADY})
_API_VERSIONS_KEY = 18
_API_VERSIONS_FIRST = 3  # the first version with the broker's features (KIP-584)
_UNSUPPORTED_VERSION = 35


class _Expected(NamedTuple):
    response_class: Any
    correlation_id: int
    flexible: bool | None  # response header with tagged fields; None: the class reads it
    timeout_s: float | None = None  # the request's own timeout; None: request_timeout_ms


class DirectConnection:
    """One plaintext connection to one broker; see the module docstring."""

    def __init__(self, node_id: Any, host: str, port: int, *, selector: selectors.BaseSelector,
                 client_id: str, request_timeout_s: float, setup_timeout_s: float,
                 on_close: Callable[[DirectConnection, bool], None] | None = None,
                 api_versions_request: Callable[[int], Any] | None = None,
                 on_ready: Callable[[DirectConnection, Any], None] | None = None) -> None:
        """``api_versions_request(version)`` builds the ApiVersions request sent first on the
        connection (None: the connection is ready as soon as it is connected); ``on_ready`` is
        told the answer."""
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
        self._rbuf = bytearray()  # the start of a frame not yet complete
        # a large frame being received straight into its own buffer (see _read), and how much of it came
        self._frame: KafkaBytes | None = None
        self._frame_view: memoryview | None = None
        self._filled = 0
        self._out: collections.deque[memoryview] = collections.deque()  # bytes not yet written
        # requests sent before the connection is ready: written once ApiVersions was answered
        self._queued: collections.deque[memoryview] = collections.deque()
        self._events = 0  # what the selector watches for us
        self.throttled_until = 0.0
        self.state = _CONNECTING
        self.connect_deadline = time.monotonic() + setup_timeout_s
        self.error: BaseException | None = None
        self._log = get_logger("txnproducer.network")
        self._sock: socket.socket | None = None
        self._addresses: list[Any] = []
        self._connect()

    # -- state ----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.state == _READY

    @property
    def closed(self) -> bool:
        return self.state == _CLOSED

    @property
    def in_flight_count(self) -> int:
        return len(self._in_flight)

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do (a timeout or the end of a throttle)."""
        if self.state == _CONNECTING:
            return self.connect_deadline
        if self.state == _CLOSED:
            return None
        deadline = self._first_deadline()
        if self.throttled_until:
            deadline = self.throttled_until if deadline is None else min(deadline, self.throttled_until)
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
        if self.state == _CLOSED:
            return future.failure(self.error or kerrors.KafkaConnectionError(
                f"connection to broker {self.node_id} is closed"))
        correlation_id = self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        # raises before anything is queued when the request cannot be encoded
        data, response_class, flexible = self._framer.frame(request, correlation_id)
        if request.expect_response():
            timeout = self._request_timeout_s if timeout_s is None else timeout_s
            if timeout_s is not None:
                self._own_timeouts += 1
            self._in_flight.append((future, time.monotonic() + timeout,
                                    _Expected(response_class, correlation_id, flexible, timeout_s)))
        else:
            future.success(None)
        if self.state == _READY:
            self._out.append(memoryview(data))
            self._flush(time.monotonic())
        else:
            self._queued.append(memoryview(data))
        return future

    def _flush(self, now: float) -> None:
        """Write what the socket takes (during the ApiVersions exchange: only that request)."""
        if self.throttled_until:
            if now < self.throttled_until:
                self._watch(selectors.EVENT_READ)  # wait for tick() at the throttle's end
                return
            self.throttled_until = 0.0
        sock = self._sock
        out = self._out
        assert sock is not None
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

    # -- events from the selector (Sender thread, inside the network poll) ----------------------

    def on_events(self, events: int) -> None:
        if self.state == _CLOSED:
            return
        if self.state == _CONNECTING:
            if events & (selectors.EVENT_WRITE | selectors.EVENT_READ):
                self._finish_connect()
            return
        if events & selectors.EVENT_READ:
            self._read()
        if events & selectors.EVENT_WRITE and self.state in (_READY, _HANDSHAKE):
            self._flush(time.monotonic())

    def tick(self, now: float) -> None:
        """Enforce the connect and request timeouts; write what a finished throttle held back."""
        if self.state == _CONNECTING:
            if now >= self.connect_deadline:
                self.close(kerrors.KafkaConnectionError(
                    f"could not connect to broker {self.node_id} at {self.host}:{self.port} within "
                    "socket_connection_setup_timeout_ms"))
            return
        if self.state not in (_READY, _HANDSHAKE):
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
        if self.throttled_until and now >= self.throttled_until:
            self.throttled_until = 0.0
            if self._out:
                self._flush(now)

    def _read(self) -> None:
        """Read what the socket has. Small answers arrive in 64 KiB reads that are split into frames
        (:meth:`_deliver`); once the size of a frame larger than two reads is known, the rest of it is
        received straight into a buffer of its size (``recv_into``): one copy of a multi-MB Fetch
        answer instead of four (the reads, their join, the partial frame kept between reads, the
        frame's buffer) - about 0.25 us of CPU per 100-byte record read (``benchmarks/README.md``)."""
        sock = self._sock
        assert sock is not None
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
                if self.state != _CLOSED:
                    self.close(kerrors.KafkaConnectionError(
                        f"broker {self.node_id} at {self.host}:{self.port} closed the connection"))
                return
            chunks.append(data)
            received += len(data)
            if len(data) < _RECV_SIZE:
                break
            if received >= _LARGE_FRAME:
                self._deliver(chunks)  # may start a large frame: the rest of it is read into it
                chunks, received = [], 0
                if self.state == _CLOSED:
                    return
        self._deliver(chunks)

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
                self.close(kerrors.KafkaConnectionError(f"could not read from broker {self.node_id}: {exc}"))
                return False
            if n == 0:
                self.close(kerrors.KafkaConnectionError(
                    f"broker {self.node_id} at {self.host}:{self.port} closed the connection"))
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
        ``KafkaBytes`` buffers and decodes the size prefix with its generic codec; with the header
        check it cost about 40 us per answer against 20 us for the decode itself (an EndTxn v5
        answer, ``timeit``, 2026-11-22). The header is read by
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
                self.close(kerrors.KafkaConnectionError(
                    f"broker {self.node_id} sent a frame of {size} bytes; the stream is lost"))
                return
            end = pos + 4 + size
            if end > end_of_data:
                if size >= _LARGE_FRAME:  # the rest goes straight into the frame's own buffer
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
        return self.state != _CLOSED

    # -- connection lifecycle -------------------------------------------------------------------

    def _connect(self) -> None:
        try:
            infos = socket.getaddrinfo(self.host, self.port, 0, socket.SOCK_STREAM)
            self._addresses = [info for info in infos if info[0] in (socket.AF_INET, socket.AF_INET6)]
        except OSError as exc:
            self.close(kerrors.KafkaConnectionError(
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
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
        self.close(kerrors.KafkaConnectionError(
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
        if self._api_versions_request is None:
            self._ready(None)
            return
        # ApiVersions first, ahead of anything queued: its answer says what this broker speaks
        self.state = _HANDSHAKE
        self._send_api_versions(_API_VERSIONS_FIRST)

    def _send_api_versions(self, version: int) -> None:
        assert self._api_versions_request is not None
        request = self._api_versions_request(version)
        correlation_id = self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        data, response_class, flexible = self._framer.frame(request, correlation_id)
        future = Future()
        future.add_callback(self._on_api_versions)
        future.add_errback(lambda exc: self.close(exc if isinstance(exc, Exception) else None))
        self._in_flight.appendleft((future, time.monotonic() + self._request_timeout_s,
                                    _Expected(response_class, correlation_id, flexible)))
        self._out.append(memoryview(data))
        self._flush(time.monotonic())

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
        self._ready(response)

    def _ready(self, api_versions: Any) -> None:
        self.state = _READY
        self._log.debug("txn.connection_ready", node=self.node_id, host=self.host, port=self.port)
        now = time.monotonic()
        # requests queued while connecting: their timeout starts now, as the Java client's does
        self._in_flight = collections.deque(
            (f, now + (self._request_timeout_s if h.timeout_s is None else h.timeout_s), h)
            for f, _, h in self._in_flight)
        self._out.extend(self._queued)
        self._queued.clear()
        if self._on_ready is not None and api_versions is not None:
            self._on_ready(self, api_versions)
        self._flush(now)

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
        if self.state == _CLOSED:
            return
        was_ready = self.state == _READY
        self.state = _CLOSED
        self.error = error or kerrors.KafkaConnectionError(f"connection to broker {self.node_id} closed")
        self._drop_socket()
        self._out.clear()
        self._queued.clear()
        self._rbuf = bytearray()
        self._frame = self._frame_view = None  # a large answer under way is dropped with its request
        pending, self._in_flight = self._in_flight, collections.deque()
        self._own_timeouts = 0
        if error is not None:
            self._log.info("txn.connection_lost", node=self.node_id, error=str(error),
                           in_flight=len(pending))
        if self._on_close is not None:
            self._on_close(self, was_ready)
        for future, _deadline, _header in pending:
            future.failure(self.error)
