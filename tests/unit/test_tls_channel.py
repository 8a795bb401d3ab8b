"""TLS for the Sender's own connections (``network/tls_channel.py``): SSLObject + memory BIOs on a
non-blocking socket, against a plain ``ssl`` server.

What the connection relies on: after a read event nothing decrypted is left where the selector cannot see
it (every complete record is returned, however many arrived at once), an answer spanning many records
arrives whole, small requests written together become one TLS record, and a broker that closes during
the handshake is an ``SSLEOFError``, not a hang.
"""

from __future__ import annotations

import collections
import selectors
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from txnproducer._internal.network.tls_channel import TlsChannel

trustme = pytest.importorskip("trustme")


class TlsPeer:
    """One TLS connection from a test server thread; ``serve(sock)`` runs on the server's socket."""

    def __init__(self, serve: Callable[[ssl.SSLSocket], None], *, handshake: bool = True) -> None:
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1")
        self.client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ca.configure_trust(self.client_context)
        server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        cert.configure_cert(server_context)
        listener = socket.create_server(("127.0.0.1", 0))
        self.port = listener.getsockname()[1]

        def run() -> None:
            raw, _ = listener.accept()
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as a broker: no Nagle delay
            listener.close()
            if not handshake:
                raw.recv(65536)  # the ClientHello, then close (unanswered)
                raw.close()
                return
            with server_context.wrap_socket(raw, server_side=True) as sock:
                serve(sock)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def connect(self) -> tuple[socket.socket, TlsChannel]:
        sock = socket.create_connection(("127.0.0.1", self.port))
        sock.setblocking(False)
        return sock, TlsChannel(self.client_context, "127.0.0.1")


def wait(sock: socket.socket, events: int = selectors.EVENT_READ) -> None:
    with selectors.DefaultSelector() as sel:
        sel.register(sock, events)
        assert sel.select(5), "no event within 5 s"


def handshake(sock: socket.socket, tls: TlsChannel) -> None:
    readable = False
    deadline = time.monotonic() + 5
    while not tls.handshake(sock, readable):
        assert time.monotonic() < deadline
        wait(sock)
        readable = True


@pytest.fixture
def sent() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_everything_received_at_once_is_decrypted_in_one_read() -> None:
    answers = [frame(b"a" * 100), frame(b"b" * 200), frame(b"c" * 300)]
    written = threading.Event()
    done = threading.Event()

    def serve(sock: ssl.SSLSocket) -> None:
        for answer in answers:
            sock.send(answer)  # one TLS record each, back to back
        written.set()
        done.wait(5)

    peer = TlsPeer(serve)
    sock, tls = peer.connect()
    try:
        handshake(sock, tls)
        assert written.wait(5)  # all three records are in our socket's receive buffer now
        wait(sock)
        chunks, eof = tls.receive(sock)  # one read event
        # all of it, at once: an answer left decrypted behind the descriptor would wait for an event
        # that never comes (the selector sees the socket, not OpenSSL's buffer)
        assert b"".join(chunks) == b"".join(answers) and not eof
        assert tls._obj.pending() == 0 and tls._incoming.pending == 0
    finally:
        done.set()
        sock.close()


def test_an_answer_of_many_records_arrives_whole(sent: threading.Event) -> None:
    answer = frame(bytes(range(256)) * 4096)  # 1 MiB: 64 records

    def serve(sock: ssl.SSLSocket) -> None:
        sock.sendall(answer)
        sent.wait(5)

    peer = TlsPeer(serve)
    sock, tls = peer.connect()
    try:
        handshake(sock, tls)
        received = bytearray()
        deadline = time.monotonic() + 10
        while len(received) < len(answer):
            assert time.monotonic() < deadline
            wait(sock)
            chunks, _eof = tls.receive(sock)
            for chunk in chunks:
                received += chunk
        assert bytes(received) == answer
    finally:
        sock.close()


def _records(ciphertext: bytes) -> list[int]:
    """The content types of the TLS records in ``ciphertext``."""
    types, pos = [], 0
    while pos + 5 <= len(ciphertext):
        content_type, _version, length = struct.unpack_from(">BHH", ciphertext, pos)
        types.append(content_type)
        pos += 5 + length
    return types


@pytest.mark.parametrize(("sizes", "records"), [((200, 200, 200), 1), ((10_000, 10_000), 2)])
def test_small_requests_written_together_become_one_record(sent: threading.Event, sizes: tuple[int, ...],
                                                           records: int) -> None:
    got: list[bytes] = []

    def serve(sock: ssl.SSLSocket) -> None:
        want = sum(sizes)
        data = b""
        while len(data) < want:
            data += sock.recv(65536)
        got.append(data)
        sent.set()

    peer = TlsPeer(serve)
    sock, tls = peer.connect()
    try:
        handshake(sock, tls)
        frames = collections.deque(memoryview(bytes([i]) * n) for i, n in enumerate(sizes))
        tls.encrypt(frames)
        ciphertext = b"".join(bytes(c) for c in tls._wire)
        assert _records(ciphertext).count(23) == records  # application-data records
        while not tls.send(sock):
            wait(sock, selectors.EVENT_WRITE)
        assert sent.wait(5) and got == [b"".join(frames)]
    finally:
        sock.close()


def test_a_broker_closing_during_the_handshake_is_an_eof_error() -> None:
    peer = TlsPeer(lambda _sock: None, handshake=False)
    sock, tls = peer.connect()
    try:
        with pytest.raises(ssl.SSLEOFError):
            handshake(sock, tls)
    finally:
        sock.close()
