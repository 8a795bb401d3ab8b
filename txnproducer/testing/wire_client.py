"""A tiny blocking Kafka wire client for tests: one socket, explicit API versions, no client logic.

Tests of the MockCluster (and of the producer against it) often need to say exactly what goes on the
wire - "Produce v11 with this batch", "two requests pipelined on one connection" - which a real client
library hides. :class:`WireClient` encodes a kafka-python request object with a request header,
writes it, and decodes the answer with the matching response class; nothing else. Helpers build and
read magic-v2 record batches with kafka-python's record classes.

Every read has a timeout (``timeout`` seconds, default 5) so a test can never hang on a silent peer.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from txnproducer._internal.protocol.response_classes import response_class

__all__ = ["WireClient", "WireClosedError", "build_batch", "decode_batches"]


class WireClosedError(ConnectionError):
    """The peer closed the connection (or the read timed out) before a full response arrived."""


class WireClient:
    """One TCP connection to a broker; send requests with explicit versions, read decoded responses.

    >>> c = WireClient("127.0.0.1", port)
    >>> resp = c.send(MetadataRequest[12](topics=None, allow_auto_topic_creation=False))
    >>> cid = c.send_nowait(req_a); cid2 = c.send_nowait(req_b)   # pipelining
    >>> resp_a = c.receive(cid); resp_b = c.receive(cid2)

    ``send(request, version=v)`` overrides the request object's version. ``send_raw(bytes)`` writes
    arbitrary bytes (for malformed-input tests). Responses are returned in wire order; ``receive``
    checks the correlation id. ``ssl_context``: speak TLS (to a ``MockCluster(tls=True)``); the TLS
    handshake runs in the constructor, checking the certificate against ``server_hostname`` (default
    ``host``), so a handshake failure raises ``ssl.SSLError`` there.
    """

    def __init__(self, host: str, port: int, *, client_id: str = "wire-test", timeout: float = 5.0,
                 ssl_context: ssl.SSLContext | None = None, server_hostname: str | None = None) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl_context is not None:
            try:
                sock = ssl_context.wrap_socket(sock, server_hostname=server_hostname or host)
            except BaseException:
                sock.close()
                raise
        self._sock = sock
        self._pushback = b""  # a byte ``is_closed_by_peer`` read over TLS, where it cannot peek
        self._correlation_id = 0
        # correlation id -> response class (versioned) for requests awaiting an answer
        self._pending: dict[int, Any] = {}

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):  # closing an already broken socket
            self._sock.close()

    def send_nowait(self, request: Any, version: int | None = None) -> int:
        """Encode and write ``request``; return its correlation id (read the answer with ``receive``).

        A Produce request with ``acks=0`` expects no answer; it is not registered for ``receive``.
        """
        if version is not None:
            request.API_VERSION = version
        self._correlation_id += 1
        cid = self._correlation_id
        request.with_header(correlation_id=cid, client_id=self.client_id)
        data = request.encode(header=True, framed=True)
        self._sock.sendall(bytes(data))
        if request.expect_response():
            self._pending[cid] = response_class(request)
        return cid

    def send(self, request: Any, version: int | None = None) -> Any:
        """Send ``request`` and return its decoded response (``None`` for acks=0 Produce)."""
        cid = self.send_nowait(request, version)
        if cid not in self._pending:
            return None
        return self.receive(cid)

    def send_raw(self, data: bytes) -> None:
        """Write raw bytes (already framed or not - the caller decides)."""
        self._sock.sendall(data)

    def read_frame(self) -> bytes:
        """Read one size-prefixed frame's payload; raises WireClosedError on EOF or timeout."""
        size = struct.unpack(">i", self._read_exact(4))[0]
        return self._read_exact(size)

    def receive(self, correlation_id: int | None = None) -> Any:
        """Read the next response frame and decode it with the class of the request it answers."""
        payload = self.read_frame()
        cid = struct.unpack_from(">i", payload, 0)[0]
        if correlation_id is not None and cid != correlation_id:
            raise AssertionError(f"expected correlation id {correlation_id}, got {cid}")
        resp_cls = self._pending.pop(cid, None)
        if resp_cls is None:
            raise AssertionError(f"response for unknown correlation id {cid}")
        return resp_cls.decode(payload, header=True)

    def is_closed_by_peer(self, timeout: float | None = None) -> bool:
        """True if the peer closes the connection (EOF) within ``timeout``; False if data or silence."""
        self._sock.settimeout(self.timeout if timeout is None else timeout)
        try:
            if isinstance(self._sock, ssl.SSLSocket):  # no MSG_PEEK over TLS: keep the byte for the next read
                chunk = self._pushback or self._sock.recv(1)
                self._pushback = chunk
            else:
                chunk = self._sock.recv(1, socket.MSG_PEEK)
        except TimeoutError:
            return False
        except OSError:
            return True
        finally:
            self._sock.settimeout(self.timeout)
        return chunk == b""

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray(self._pushback[:n])
        self._pushback = self._pushback[n:]
        while len(buf) < n:
            try:
                chunk = self._sock.recv(n - len(buf))
            except TimeoutError as exc:
                raise WireClosedError(f"timed out after {self.timeout}s waiting for a response") from exc
            except OSError as exc:
                raise WireClosedError(str(exc)) from exc
            if not chunk:
                raise WireClosedError("connection closed by peer")
            buf += chunk
        return bytes(buf)


def build_batch(
    records: Iterable[tuple[bytes | None, bytes | None]],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    compression_type: int = 0,
    timestamp: int | None = None,
) -> bytes:
    """A magic-v2 record batch (bytes) holding ``records`` as (key, value) pairs."""
    builder = DefaultRecordBatchBuilder(
        2, compression_type, transactional, producer_id, producer_epoch, base_sequence, 2**31 - 1
    )
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp, key, value, [])
    return bytes(builder.build())


def decode_batches(data: bytes | None) -> list[DefaultRecordBatch]:
    """The record batches in a Fetch response's ``records`` (empty list for None/empty)."""
    if not data:
        return []
    out: list[DefaultRecordBatch] = []
    records = MemoryRecords(bytes(data))
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        out.append(batch)
    return out


def record_values(batches: Sequence[DefaultRecordBatch]) -> list[bytes | None]:
    """Values of the data (non-control) records in ``batches``, in order."""
    values: list[bytes | None] = []
    for batch in batches:
        if batch.is_control_batch:
            continue
        values.extend(record.value for record in batch)
    return values
