"""Client CPU of TLS reads and writes: ``SSLSocket`` against ``SSLObject`` with memory BIOs.

Why: the Sender's own connections (``txnproducer/_internal/network/connection.py``) speak TLS with Python's
``ssl`` in non-blocking mode, and there are two ways to do that. An ``SSLSocket`` encrypts into the socket
and decrypts from it inside OpenSSL (one call per write and per read); an ``SSLObject`` with two
``MemoryBIO`` objects leaves the socket to Python (read raw bytes, feed the incoming BIO, read plaintext;
write plaintext, take the ciphertext from the outgoing BIO, send it) - more control (nothing is ever
buffered where the selector cannot see it) and more Python calls and copies. This measures which costs the
client less, for the shapes of the producer's traffic:

* ``rt-small``: a 200-byte request, a 100-byte answer (EndTxn, a one-record Produce): the CPU per round trip;
* ``rt-bulk``: a 262,144-byte request (a full Produce batch), a 100-byte answer;
* ``rt-fetch``: a 100-byte request, a 1 MiB answer (a Fetch);
* ``joined``: two 200-byte requests written as one joined buffer against two writes, one answer each.

The server is another process (blocking ``SSLSocket``, TLS 1.3, a certificate from ``trustme``), so the
client's CPU (``time.thread_time``) is its own. Medians of ``--rounds``.

    python benchmarks/tls_io.py [--rounds 5] [--iterations 3000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import selectors
import socket
import ssl
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

_SIZE = struct.Struct(">i")


def _serve(listener: socket.socket, certfile: str, keyfile: str) -> None:
    """Answer each frame ``[4-byte size][4-byte answer size][payload]`` with a frame of that size."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)

    def answer(raw: socket.socket) -> None:
        with context.wrap_socket(raw, server_side=True) as sock:
            buf = b""
            try:
                while True:
                    while len(buf) < 4 or len(buf) < 4 + _SIZE.unpack_from(buf)[0]:
                        data = sock.recv(1 << 20)
                        if not data:
                            return
                        buf += data
                    size = _SIZE.unpack_from(buf)[0]
                    (length,) = _SIZE.unpack_from(buf, 4)
                    buf = buf[4 + size:]
                    sock.sendall(_SIZE.pack(length) + b"a" * length)
            except OSError:
                return

    while True:
        raw, _ = listener.accept()
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=answer, args=(raw,), daemon=True).start()


class _Client:
    """A non-blocking TLS client over one of the two mechanisms."""

    def __init__(self, port: int, cafile: str, mode: str) -> None:
        self.mode = mode
        self.buf = bytearray()
        self.view = memoryview(bytearray(262144))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_verify_locations(cafile)
        raw = socket.create_connection(("127.0.0.1", port))
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.selector = selectors.DefaultSelector()
        if mode == "sslsocket":
            self.sock: Any = context.wrap_socket(raw, server_hostname="localhost")
            self.sock.setblocking(False)
            self.selector.register(self.sock, selectors.EVENT_READ)
        else:
            self.raw = raw
            self.incoming = ssl.MemoryBIO()
            self.outgoing = ssl.MemoryBIO()
            self.obj = context.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")
            raw.setblocking(True)
            while True:
                try:
                    self.obj.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    raw.sendall(self.outgoing.read())
                    self.incoming.write(raw.recv(65536))
            raw.sendall(self.outgoing.read())
            raw.setblocking(False)
            self.selector.register(raw, selectors.EVENT_READ)

    def close(self) -> None:
        self.selector.close()
        (self.sock if self.mode == "sslsocket" else self.raw).close()

    def write(self, buffers: list[memoryview]) -> None:
        for buf in buffers:
            if self.mode == "sslsocket":
                while True:
                    try:
                        self.sock.send(buf)  # all or SSLWantWriteError: retried with the same bytes
                        break
                    except ssl.SSLWantWriteError:
                        self.selector.select(0.01)
            else:
                self.obj.write(buf)
                out = memoryview(self.outgoing.read())
                while out:
                    try:
                        out = out[self.raw.send(out):]
                    except BlockingIOError:
                        self.selector.select(0.01)

    def read_frame(self) -> int:
        """Read one answer frame; its size (bytes of the next one stay for the next call)."""
        got = self.buf
        while len(got) < 4 or len(got) < 4 + _SIZE.unpack_from(got)[0]:
            self.selector.select(1.0)
            if self.mode == "sslsocket":
                while True:
                    try:
                        data = self.sock.recv(65536)
                    except ssl.SSLWantReadError:
                        break
                    got += data
                    if len(data) < 16384 and not self.sock.pending():
                        break
            else:
                view = self.view
                while True:
                    try:
                        n = self.raw.recv_into(view)  # no 256 KiB allocation per read
                    except BlockingIOError:
                        break
                    self.incoming.write(view[:n])
                    if n < len(view):
                        break
                incoming, obj = self.incoming, self.obj
                while incoming.pending or obj.pending():  # no exception at the end of whole records
                    try:
                        got += obj.read(65536)
                    except ssl.SSLWantReadError:
                        break  # a partial record: the rest comes with the next read event
        size = 4 + _SIZE.unpack_from(got)[0]
        del got[:size]
        return size


def _request(payload: int, answer: int) -> memoryview:
    return memoryview(_SIZE.pack(payload + 4) + _SIZE.pack(answer) + b"r" * payload)


def _measure(client: _Client, step: Callable[[], None], iterations: int) -> float:
    """CPU microseconds per iteration of ``step`` (the client thread's own)."""
    for _ in range(min(200, iterations)):
        step()
    cpu = time.thread_time()
    for _ in range(iterations):
        step()
    return (time.thread_time() - cpu) / iterations * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=3000)
    args = parser.parse_args(argv)
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("localhost")
    workdir = tempfile.mkdtemp(prefix="txnproducer-tls-io-")
    cafile, certfile, keyfile = (os.path.join(workdir, n) for n in ("ca.pem", "cert.pem", "key.pem"))
    ca.cert_pem.write_to_path(cafile)
    cert.private_key_pem.write_to_path(keyfile)
    cert.cert_chain_pems[0].write_to_path(certfile)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    server = multiprocessing.get_context("fork").Process(
        target=_serve, args=(listener, certfile, keyfile), daemon=True)
    server.start()
    port = listener.getsockname()[1]
    small, bulk, fetch = _request(200, 100), _request(262_144, 100), _request(100, 1 << 20)
    pair = [_request(200, 100), _request(200, 100)]
    joined = memoryview(b"".join(pair))

    def cases(client: _Client) -> dict[str, Callable[[], None]]:
        def rt(request: memoryview) -> Callable[[], None]:
            def step() -> None:
                client.write([request])
                client.read_frame()
            return step

        def two_writes() -> None:
            client.write(pair)
            client.read_frame()
            client.read_frame()

        def one_joined_write() -> None:
            client.write([joined])
            client.read_frame()
            client.read_frame()

        return {"rt-small": rt(small), "rt-bulk": rt(bulk), "rt-fetch": rt(fetch),
                "two writes": two_writes, "joined": one_joined_write}

    results: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(args.rounds):
            for mode in ("sslsocket", "sslobject"):
                client = _Client(port, cafile, mode)
                for name, step in cases(client).items():
                    n = args.iterations if name != "rt-fetch" and name != "rt-bulk" else args.iterations // 10
                    results.setdefault((name, mode), []).append(_measure(client, step, n))
                client.close()
    finally:
        server.kill()
        server.join()
    print(f"client CPU per iteration (us), medians of {args.rounds}; {ssl.OPENSSL_VERSION}, "
          f"Python {sys.version.split()[0]}")
    print("| case | SSLSocket | SSLObject + MemoryBIO | SSLObject / SSLSocket |")
    print("|---|---|---|---|")
    for name in ("rt-small", "rt-bulk", "rt-fetch", "two writes", "joined"):
        a = statistics.median(results[(name, "sslsocket")])
        b = statistics.median(results[(name, "sslobject")])
        print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
