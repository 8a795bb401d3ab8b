"""DirectConnection: the Sender's own plaintext connection, against a scripted one-socket broker.

What a user relies on here is what the Java client's NetworkClient promises: requests leave in
order and each answer reaches its request; a dropped connection or a request that outlives
``request_timeout_ms`` fails every waiting request (so the Sender retries it) instead of leaving
it waiting forever; a throttled broker (KIP-219) gets nothing more until the throttle ends; and a
broker that cannot be reached is retried only after a growing backoff.
"""

from __future__ import annotations

import queue
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import kafka.errors as kerrors
import pytest
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest

from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.network.connection import DirectConnection
from txnproducer._internal.network.future import Future
from txnproducer.config import ProducerConfig

Answer = Callable[[int, int], bytes | None]  # (correlation id, request index) -> frame, or None


def metadata_answer(throttle_ms: int = 0) -> Answer:
    def answer(correlation_id: int, _index: int) -> bytes:
        response = MetadataResponse(version=9, throttle_time_ms=throttle_ms, brokers=[], cluster_id=None,
                                    controller_id=1, topics=[])
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))
    return answer


class FakeBroker:
    """Accepts one connection; reads request frames and answers each with ``answer`` (None: no
    answer). Records (monotonic arrival time, correlation id, frame size) per request."""

    def __init__(self, answer: Answer, *, read_gate: threading.Event | None = None) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._answer = answer
        self._read_gate = read_gate
        self.requests: queue.Queue[tuple[float, int, int]] = queue.Queue()
        self.conn: socket.socket | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _read_exact(self, conn: socket.socket, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def _serve(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        self.conn = conn
        if self._read_gate is not None:
            self._read_gate.wait(10)
        index = 0
        try:
            while True:
                head = self._read_exact(conn, 4)
                if head is None:
                    return
                size = struct.unpack(">i", head)[0]
                body = self._read_exact(conn, size)
                if body is None:
                    return
                correlation_id = struct.unpack(">i", body[4:8])[0]
                self.requests.put((time.monotonic(), correlation_id, size))
                frame = self._answer(correlation_id, index)
                index += 1
                if frame is not None:
                    conn.sendall(frame)
        except OSError:
            return

    def drop(self) -> None:
        """Close the accepted connection (shutdown first: a close alone does not wake the
        serving thread's recv, and the peer would see nothing)."""
        assert self.conn is not None
        self.conn.shutdown(socket.SHUT_RDWR)
        self.conn.close()

    def close(self) -> None:
        self._listener.close()
        if self.conn is not None:
            self.conn.close()


@pytest.fixture
def selector() -> Iterator[selectors.BaseSelector]:
    sel = selectors.DefaultSelector()
    yield sel
    sel.close()


def make_conn(selector: selectors.BaseSelector, port: int, *, request_timeout_s: float = 5.0,
              setup_timeout_s: float = 5.0, closed: list[bool] | None = None) -> DirectConnection:
    def on_close(_conn: DirectConnection, was_ready: bool) -> None:
        if closed is not None:
            closed.append(was_ready)
    return DirectConnection(1, "127.0.0.1", port, selector=selector, client_id="t",
                            request_timeout_s=request_timeout_s, setup_timeout_s=setup_timeout_s,
                            on_close=on_close)


def pump(selector: selectors.BaseSelector, conn: DirectConnection, until: Callable[[], bool],
         timeout: float = 5.0) -> None:
    """Play the Sender: dispatch selector events and tick until ``until()`` or fail."""
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "condition not reached within the test's bound"
        for key, events in selector.select(0.02):  # as DirectConnections.poll dispatches them
            key.data.on_events(events)
        conn.tick(time.monotonic())


def request() -> MetadataRequest:
    return MetadataRequest(version=9, topics=[], allow_auto_topic_creation=False)


def test_requests_sent_while_connecting_are_answered_in_order(selector: selectors.BaseSelector) -> None:
    broker = FakeBroker(metadata_answer())
    conn = make_conn(selector, broker.port)
    try:
        futures = [conn.send(request()) for _ in range(5)]  # queued before the connect completes
        pump(selector, conn, lambda: all(f.is_done for f in futures))
        assert all(f.succeeded() for f in futures)
        ids = [broker.requests.get(timeout=1)[1] for _ in futures]
        assert ids == sorted(ids) and len(set(ids)) == 5
        assert conn.in_flight_count == 0
    finally:
        conn.close()
        broker.close()


def test_a_request_larger_than_the_socket_buffer_arrives_whole_and_in_order(
        selector: selectors.BaseSelector) -> None:
    gate = threading.Event()  # the broker reads nothing until the client has queued everything
    broker = FakeBroker(metadata_answer(), read_gate=gate)
    conn = make_conn(selector, broker.port)
    try:
        pump(selector, conn, lambda: conn.ready)
        big = MetadataRequest(version=9, topics=[{"name": "t" * 30_000, "topic_id": None}] * 200,
                              allow_auto_topic_creation=False)
        futures = [conn.send(big), conn.send(request()), conn.send(big)]
        gate.set()
        pump(selector, conn, lambda: all(f.is_done for f in futures), timeout=20)
        assert all(f.succeeded() for f in futures)
        sizes = [broker.requests.get(timeout=1)[2] for _ in futures]
        assert sizes[0] == sizes[2] > 5_000_000 > sizes[1]
    finally:
        conn.close()
        broker.close()


def test_a_dropped_connection_fails_every_waiting_request(selector: selectors.BaseSelector) -> None:
    broker = FakeBroker(lambda _cid, _i: None)  # reads, never answers
    closed: list[bool] = []
    conn = make_conn(selector, broker.port, closed=closed)
    try:
        futures = [conn.send(request()) for _ in range(3)]
        pump(selector, conn, lambda: broker.requests.qsize() == 3)
        broker.drop()
        pump(selector, conn, lambda: all(f.is_done for f in futures))
        assert all(isinstance(f.exception, kerrors.KafkaConnectionError) for f in futures), \
            [f.exception for f in futures]
        assert conn.closed and closed == [True]
        late = conn.send(request())
        assert late.failed(), "a closed connection must refuse, not queue"
    finally:
        conn.close()
        broker.close()


def test_a_request_without_an_answer_times_out_and_closes_the_connection(
        selector: selectors.BaseSelector) -> None:
    broker = FakeBroker(lambda _cid, _i: None)
    conn = make_conn(selector, broker.port, request_timeout_s=0.3)
    try:
        sent_at = time.monotonic()
        future = conn.send(request())
        pump(selector, conn, lambda: future.is_done)
        assert isinstance(future.exception, kerrors.RequestTimedOutError)
        assert "request_timeout_ms" in str(future.exception)
        assert time.monotonic() - sent_at >= 0.3
        assert conn.closed
    finally:
        conn.close()
        broker.close()


def test_a_request_with_its_own_timeout_outlives_request_timeout_ms(selector: selectors.BaseSelector) -> None:
    """A request the broker holds on purpose (a group's JoinGroup, up to the rebalance timeout) gets
    its own bound: it is answered after request_timeout_ms has passed, and the connection stays."""
    held = threading.Event()

    def answer(correlation_id: int, index: int) -> bytes:
        if index == 0:
            held.wait(5)  # the broker holds the first request until the test lets it go
        return metadata_answer()(correlation_id, index)

    broker = FakeBroker(answer)
    conn = make_conn(selector, broker.port, request_timeout_s=0.2)
    try:
        sent_at = time.monotonic()
        future = conn.send(request(), timeout_s=5.0)
        pump(selector, conn, lambda: time.monotonic() - sent_at > 0.4)  # twice request_timeout_ms
        assert not future.is_done and not conn.closed
        held.set()
        pump(selector, conn, lambda: future.is_done)
        assert future.succeeded()
    finally:
        held.set()
        conn.close()
        broker.close()


def test_own_timeouts_still_end_a_request_that_gets_no_answer(selector: selectors.BaseSelector) -> None:
    broker = FakeBroker(lambda _cid, _i: None)
    conn = make_conn(selector, broker.port, request_timeout_s=5.0)
    try:
        held = conn.send(request(), timeout_s=0.3)
        queued_after = conn.send(request())  # request_timeout_ms: 5 s; closing fails it as well
        pump(selector, conn, lambda: held.is_done)
        assert isinstance(held.exception, kerrors.RequestTimedOutError)
        assert "its own Metadata timeout (300 ms)" in str(held.exception)
        assert queued_after.failed() and conn.closed
    finally:
        conn.close()
        broker.close()


def test_nothing_is_written_to_a_throttled_broker_until_the_throttle_ends(
        selector: selectors.BaseSelector) -> None:
    broker = FakeBroker(lambda cid, i: metadata_answer(throttle_ms=300 if i == 0 else 0)(cid, i))
    conn = make_conn(selector, broker.port)
    try:
        first = conn.send(request())
        pump(selector, conn, lambda: first.is_done)
        answered_at = time.monotonic()
        assert conn.throttled_until >= answered_at + 0.25
        second = conn.send(request())
        pump(selector, conn, lambda: second.is_done)
        broker.requests.get(timeout=1)
        arrived_at, _cid, _size = broker.requests.get(timeout=1)
        assert arrived_at >= answered_at + 0.25, "the second request reached a throttled broker"
    finally:
        conn.close()
        broker.close()


def test_a_refused_connection_fails_its_requests(selector: selectors.BaseSelector) -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    closed: list[bool] = []
    conn = make_conn(selector, port, closed=closed)
    try:
        future = conn.send(request()) if not conn.closed else Future().failure(conn.error)
        pump(selector, conn, lambda: future.is_done)
        assert isinstance(future.exception, kerrors.KafkaConnectionError)
        assert closed == [False], "on_close must say the connection never worked"
    finally:
        conn.close()


def test_network_client_backs_off_from_an_unreachable_broker() -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    config = ProducerConfig(bootstrap_servers=f"127.0.0.1:{port}", transactional_id="t",
                            reconnect_backoff_ms=200, reconnect_backoff_max_ms=1000)
    net = NetworkClient(config)
    try:
        net.ensure_broker(7, "127.0.0.1", port)
        delays = []  # the backoff left when the failure was seen; with the most that had passed by then
        for _ in range(3):
            future = net.send(7, request())
            deadline = time.monotonic() + 5
            while not future.is_done:
                assert time.monotonic() < deadline
                polled_at = time.monotonic()  # the failure came after this: the poll below saw it
                net.poll(0.02)
            assert future.failed()
            delay = net.connection_delay(7)
            delays.append((delay, delay + time.monotonic() - polled_at))
            refused = net.send(7, request())  # inside the backoff: refused at once, not queued
            assert refused.failed() and "reconnecting" in str(refused.exception)
            while net.connection_delay(7) > 0:
                net.poll(0.05)
        # 200 ms, doubled per failed attempt in a row (capped at 1,000), with +-20 % jitter: what is
        # left is at most the whole backoff, and with the time since the poll that saw the failure at
        # least all of it (on a loaded machine a tenth of a second can pass before the test looks)
        bounds = [(0.14, 0.24), (0.3, 0.48), (0.6, 0.96)]
        for (left, at_least_whole), (low, high) in zip(delays, bounds, strict=True):
            assert left <= high and at_least_whole >= low, delays
    finally:
        net.close()


def test_the_next_resolved_address_is_tried_when_the_first_refuses(
        selector: selectors.BaseSelector, monkeypatch: pytest.MonkeyPatch) -> None:
    # ``localhost`` can resolve to ::1 first while the broker listens on 127.0.0.1 only
    broker = FakeBroker(metadata_answer())
    probe = socket.create_server(("127.0.0.1", 0))
    refused_port = probe.getsockname()[1]
    probe.close()
    stream = socket.SOCK_STREAM
    addresses = [(socket.AF_INET, stream, 6, "", ("127.0.0.1", refused_port)),
                 (socket.AF_INET, stream, 6, "", ("127.0.0.1", broker.port))]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *_args, **_kw: list(addresses))
    conn = DirectConnection(1, "broker.example", broker.port, selector=selector, client_id="t",
                            request_timeout_s=5, setup_timeout_s=5)
    try:
        future = conn.send(request())
        pump(selector, conn, lambda: future.is_done)
        assert future.succeeded(), future.exception
    finally:
        conn.close()
        broker.close()


def _sent_and_silent(selector: selectors.BaseSelector, count: int) -> tuple[FakeBroker, DirectConnection,
                                                                            list[Future], list[int]]:
    """``count`` requests the broker received and will never answer (the test feeds the answers),
    with their correlation ids."""
    broker = FakeBroker(lambda _cid, _i: None)
    conn = make_conn(selector, broker.port)
    futures = [conn.send(request()) for _ in range(count)]
    pump(selector, conn, lambda: broker.requests.qsize() == count)
    ids = [broker.requests.get_nowait()[1] for _ in range(count)]
    return broker, conn, futures, ids


@pytest.mark.parametrize("split", ["byte-by-byte", "all-in-one", "across-frames"])
def test_answers_are_reassembled_however_the_bytes_arrive(
        selector: selectors.BaseSelector, split: str) -> None:
    broker, conn, futures, ids = _sent_and_silent(selector, 3)
    try:
        stream = b"".join(metadata_answer(throttle_ms=0)(cid, 0) for cid in ids)
        if split == "byte-by-byte":
            pieces = [stream[i:i + 1] for i in range(len(stream))]
        elif split == "all-in-one":
            pieces = [stream]
        else:  # cut in the middle of the second frame's size prefix and of the third body
            pieces = [stream[:27], stream[27:60], stream[60:]]
        for piece in pieces:
            conn._deliver([piece])
        assert all(f.succeeded() for f in futures), [f.exception for f in futures]
        assert all(isinstance(f.value, MetadataResponse) and f.value.controller_id == 1 for f in futures)
        assert conn.in_flight_count == 0 and not conn.closed
    finally:
        conn.close()
        broker.close()


def test_an_answer_with_the_wrong_correlation_id_closes_the_connection(
        selector: selectors.BaseSelector) -> None:
    broker, conn, futures, ids = _sent_and_silent(selector, 2)
    try:
        conn._deliver([metadata_answer()(ids[0] + 1, 0)])
        assert conn.closed
        assert all(isinstance(f.exception, kerrors.KafkaConnectionError) for f in futures)
        assert "correlation id" in str(futures[0].exception)
    finally:
        conn.close()
        broker.close()


def test_an_answer_that_cannot_be_decoded_fails_its_request_and_closes_the_connection(
        selector: selectors.BaseSelector) -> None:
    """Whatever the decoder raises (here an IndexError from kafka-python's InitProducerId v4
    decoder on a garbled body), the request fails at once and the connection closes: a request
    left waiting would hold the transaction manager forever (no timeout covers a popped request)."""
    garbled = bytes.fromhex("00c3bdf4390f9a96f1244f1fa8ceb9d369")

    def answer(correlation_id: int, _index: int) -> bytes:
        body = struct.pack(">i", correlation_id) + garbled
        return struct.pack(">i", len(body)) + body

    broker = FakeBroker(answer)
    conn = make_conn(selector, broker.port)
    try:
        future = conn.send(InitProducerIdRequest(version=4, transactional_id="t", transaction_timeout_ms=1000,
                                                 producer_id=-1, producer_epoch=-1))
        pump(selector, conn, lambda: future.is_done)
        assert isinstance(future.exception, kerrors.KafkaConnectionError)
        assert "unreadable answer" in str(future.exception) and conn.closed
    finally:
        conn.close()
        broker.close()


def big_metadata_answer(correlation_id: int, topics: int = 2500) -> bytes:
    """A Metadata answer of about 300 KB: larger than two reads, received into its own buffer."""
    topic = MetadataResponse.MetadataResponseTopic
    response = MetadataResponse(version=9, throttle_time_ms=0, brokers=[], cluster_id="c" * 50,
                                controller_id=1,
                                topics=[topic(error_code=0, name=f"topic-{i:05d}-" + "x" * 100,
                                              is_internal=False, partitions=[]) for i in range(topics)])
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


@pytest.mark.parametrize("arrival", ["at once", "in 7 KB pieces"])
def test_a_large_answer_is_received_whole_and_the_next_one_after_it(
        selector: selectors.BaseSelector, monkeypatch: pytest.MonkeyPatch, arrival: str) -> None:
    """A multi-MB Fetch answer is read straight into a buffer of its size once its size is known;
    whatever way its bytes arrive, it and the small answer behind it complete in order, whole."""
    direct = []
    receive = DirectConnection._receive_frame
    monkeypatch.setattr(DirectConnection, "_receive_frame",
                        lambda self, sock: direct.append(self._filled) or receive(self, sock))
    broker, conn, futures, ids = _sent_and_silent(selector, 2)
    try:
        stream = big_metadata_answer(ids[0]) + metadata_answer()(ids[1], 0)
        assert len(stream) > 3 * 65536
        assert broker.conn is not None
        if arrival == "at once":
            broker.conn.sendall(stream)
        else:
            for start in range(0, len(stream), 7000):
                broker.conn.sendall(stream[start:start + 7000])
                selector.select(0.01)  # the connection reads what came so far
        pump(selector, conn, lambda: all(f.is_done for f in futures))
        assert all(f.succeeded() for f in futures), [f.exception for f in futures]
        assert len(futures[0].value.topics) == 2500
        assert futures[0].value.topics[-1].name.startswith("topic-02499-")
        assert isinstance(futures[1].value, MetadataResponse) and futures[1].value.topics == []
        assert direct, "the large answer was not received into its own buffer"
        assert conn.in_flight_count == 0 and not conn.closed and conn._frame is None
    finally:
        conn.close()
        broker.close()


def test_a_connection_closed_in_the_middle_of_a_large_answer_fails_its_request(
        selector: selectors.BaseSelector) -> None:
    broker, conn, futures, ids = _sent_and_silent(selector, 1)
    try:
        stream = big_metadata_answer(ids[0])
        assert broker.conn is not None
        broker.conn.sendall(stream[: len(stream) // 2])
        pump(selector, conn, lambda: conn._frame is not None)
        broker.drop()
        pump(selector, conn, lambda: futures[0].is_done)
        assert isinstance(futures[0].exception, kerrors.KafkaConnectionError) and conn.closed
        assert conn._frame is None
    finally:
        conn.close()
        broker.close()
