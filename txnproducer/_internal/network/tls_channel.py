"""TLS for the Sender's own connections: Python's ``ssl`` in non-blocking mode, over memory BIOs.

Why an ``SSLObject`` with two ``MemoryBIO`` objects rather than an ``SSLSocket``: measured with
``benchmarks/tls_io.py`` (numbers in ``benchmarks/README.md``), the client's CPU was equal for small
round trips and 10-25 % lower for a 256 KiB Produce request or a 1 MiB Fetch answer - an ``SSLSocket``
makes two ``recv`` system calls per TLS record read (header, then body) and one ``send`` per record
written, where the socket here is read into a preallocated buffer and written in one call per flush.
And nothing is ever buffered where the selector cannot see it: an ``SSLSocket`` can hold decrypted bytes
(``pending()``) with no readable event on its descriptor, so a level-triggered poll would sleep on an
answer already received. Here every read event decrypts every complete record received
(:meth:`TlsChannel.receive` drains the ``SSLObject``), so what is left is at most part of a record, whose
rest the socket will signal.

What the connection does with it (:mod:`.connection`): after the TCP connect, :meth:`TlsChannel.handshake`
on each event until done (bounded by ``socket_connection_setup_timeout_ms``); then requests are encrypted
by :meth:`TlsChannel.encrypt` - several small frames joined into one TLS record, since each record costs
an encryption and a header - and written by :meth:`TlsChannel.send`; answers come from
:meth:`TlsChannel.receive`.

The context is the producer's (``tls_context.py``: CA, client certificate, ``ssl_check_hostname``,
ciphers, TLS 1.2+); the host dialled is the server name (SNI, and the name checked against the
certificate). Renegotiation is not supported (neither does Kafka's Java client); a TLS 1.3 KeyUpdate is
answered (:attr:`TlsChannel.has_output` after a read).

Errors are the ``ssl`` module's (``SSLError`` and subclasses, ``OSError``); the connection wraps them.
"""

from __future__ import annotations

import collections
import socket
import ssl

__all__ = ["TlsChannel"]

_RECV_SIZE = 262144  # one recv per event for most answers; preallocated once per connection
_RECORD = 16384  # the most plaintext one TLS record carries (and one SSLObject.read returns)


class TlsChannel:
    """The TLS state of one connection; the caller owns the socket and the selector."""

    def __init__(self, context: ssl.SSLContext, server_hostname: str) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._obj = context.wrap_bio(self._incoming, self._outgoing, server_side=False,
                                     server_hostname=server_hostname)
        self._wire: collections.deque[memoryview] = collections.deque()  # ciphertext not yet written
        self._buffer = memoryview(bytearray(_RECV_SIZE))

    def __repr__(self) -> str:
        return f"TlsChannel({self._obj.server_hostname!r})"

    @property
    def has_output(self) -> bool:
        """True when ciphertext waits to be written (:meth:`send`)."""
        return bool(self._wire) or bool(self._outgoing.pending)

    @property
    def version(self) -> str | None:
        return self._obj.version()

    def peer_certificate(self) -> bytes | None:
        """The broker's certificate (DER), once the handshake is done."""
        return self._obj.getpeercert(binary_form=True)

    def handshake(self, sock: socket.socket, readable: bool) -> bool:
        """Advance the handshake with what arrived (``readable``: the socket has an event); True once
        done. Raises ``ssl.SSLError`` (``SSLEOFError`` when the broker closed) or ``OSError``."""
        if readable and self._pull(sock):
            self._incoming.write_eof()  # do_handshake now raises SSLEOFError
        try:
            self._obj.do_handshake()
            done = True
        except ssl.SSLWantReadError:
            done = False
        self._take_output()
        self.send(sock)
        return done

    def encrypt(self, frames: collections.deque[memoryview]) -> None:
        """Encrypt ``frames`` in order (several small ones as one record) for :meth:`send`."""
        obj = self._obj
        if len(frames) > 1 and sum(len(f) for f in frames) <= _RECORD:
            obj.write(b"".join(frames))
        else:
            for frame in frames:
                obj.write(frame)
        self._take_output()

    def send(self, sock: socket.socket) -> bool:
        """Write the ciphertext the socket takes; True when none is left. Raises ``OSError``."""
        wire = self._wire
        while wire:
            chunk = wire[0]
            try:
                sent = sock.send(chunk)
            except (BlockingIOError, InterruptedError):
                return False
            if sent == len(chunk):
                wire.popleft()
            else:
                wire[0] = chunk[sent:]
                return False
        return True

    def receive(self, sock: socket.socket) -> tuple[list[bytes], bool]:
        """Read what the socket has and decrypt every complete record: (plaintext, end of stream).

        The plaintext before an end of stream is returned with it (a broker's last answer, such as a
        SASL failure, arrives together with its close). Raises ``ssl.SSLError`` (an alert: the broker
        refused the handshake's outcome, e.g. a missing client certificate under TLS 1.3) or ``OSError``.
        """
        eof = self._pull(sock)
        chunks: list[bytes] = []
        obj, incoming = self._obj, self._incoming
        while incoming.pending or obj.pending():
            try:
                data = obj.read(_RECORD)
            except ssl.SSLWantReadError:
                break  # part of a record: the socket signals the rest
            except ssl.SSLZeroReturnError:  # the broker's close_notify
                eof = True
                break
            if not data:
                break
            chunks.append(data)
        self._take_output()  # e.g. the answer to a TLS 1.3 KeyUpdate
        return chunks, eof

    def _pull(self, sock: socket.socket) -> bool:
        """Move what the socket has into the incoming BIO; True at end of stream."""
        buffer, incoming = self._buffer, self._incoming
        while True:
            try:
                n = sock.recv_into(buffer)
            except (BlockingIOError, InterruptedError):
                return False
            if n == 0:
                return True
            incoming.write(buffer[:n])
            if n < _RECV_SIZE:
                return False

    def _take_output(self) -> None:
        if self._outgoing.pending:
            self._wire.append(memoryview(self._outgoing.read()))
