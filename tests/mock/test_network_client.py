"""The network layer's promises (``network/client.py``, ``direct_connections.py``, ``refresh.py``), against
MockCluster, with the test playing the network thread.

What a user relies on, each the Java client's behaviour: metadata refreshed every ``metadata_max_age_ms``
without errors; a connection idle for ``connections_max_idle_ms`` closed (and a new one made for the
next request); TCP_NODELAY and keep-alive on every socket; a bootstrap server given as an IPv6 literal;
no more than ``max_in_flight_requests_per_connection`` requests on a connection before it counts as
busy; a request abandoned on a connection that does not answer fails at once while the connection's
later answers still reach their own requests; and ``close()`` fails what is in flight and releases
every socket.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import kafka.errors as kerrors
import pytest
from kafka.protocol.metadata import MetadataRequest

from txnproducer import errors
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.network.future import Future
from txnproducer.config import ProducerConfig
from txnproducer.testing import MockCluster


@pytest.fixture
def networks(mock_cluster: MockCluster) -> Iterator[Callable[..., NetworkClient]]:
    made: list[NetworkClient] = []

    def make(**settings: Any) -> NetworkClient:
        settings = {"bootstrap_servers": mock_cluster.bootstrap_servers, "transactional_id": "t-net",
                    **settings}
        made.append(NetworkClient(ProducerConfig(**settings)))
        return made[-1]

    yield make
    for net in made:
        net.close()


def pump(net: NetworkClient, until: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "condition not reached within the test's bound"
        net.maintain()
        net.poll(0.02)


def ready(net: NetworkClient, node: int = 1) -> None:
    pump(net, lambda: net.bootstrapped)

    def connected() -> bool:
        net.ensure_connecting(node)
        return net.is_ready(node)

    pump(net, connected)


def metadata() -> MetadataRequest:
    return MetadataRequest(version=9, topics=[], allow_auto_topic_creation=False)


def test_metadata_is_refreshed_every_metadata_max_age_ms(mock_cluster: MockCluster,
                                                         networks: Callable[..., NetworkClient]) -> None:
    net = networks(metadata_max_age_ms=300)
    pump(net, lambda: net.bootstrapped)
    since = mock_cluster.requests.next_seq()
    started = time.monotonic()
    pump(net, lambda: sum(e.api == "Metadata" for e in mock_cluster.request_log[since:]) >= 3)
    # three refreshes take at least two max ages; without the bound they would never come
    assert time.monotonic() - started >= 0.55


def test_a_topic_asked_for_while_a_refresh_is_on_its_way_is_fetched_after_it(
        mock_cluster: MockCluster, networks: Callable[..., NetworkClient]) -> None:
    """The answer to a request made before a topic was asked for does not end that topic's refresh
    (Java's request version): the next request goes at once, not a ``metadata_max_age_ms`` later -
    a ``send()`` to the topic would otherwise wait that long and time out (seen on a loaded machine)."""
    mock_cluster.create_topic("early", partitions=1)
    mock_cluster.create_topic("late", partitions=2)
    net = networks()  # metadata_max_age_ms: 5 minutes
    for node in mock_cluster.broker_ids:
        ready(net, node)  # connected everywhere: the next request in flight is the refresh
    pump(net, lambda: net.in_flight_count() == 0)
    mock_cluster.delay_responses("Metadata", 300)
    since = mock_cluster.requests.next_seq()
    net.request_topic("early")
    pump(net, lambda: net.in_flight_count() > 0)  # the refresh naming only "early" is on its way
    net.request_topic("late")
    pump(net, lambda: net.partitions_for("late") is not None, timeout=3)
    assert net.partitions_for("late") == [0, 1] and net.partitions_for("early") == [0]
    asked = [e for e in mock_cluster.request_log[since:] if e.api == "Metadata"]
    assert [e.fields["topics"] for e in asked] == [["early"], ["early", "late"]]


def test_an_idle_connection_is_closed_and_the_next_request_reconnects(
        mock_cluster: MockCluster, networks: Callable[..., NetworkClient]) -> None:
    net = networks(connections_max_idle_ms=300, metadata_max_age_ms=600_000)
    ready(net)
    first = net._direct.get(1)
    assert first is not None
    pump(net, lambda: not net.has_connection(1), timeout=5)
    assert first.closed
    before = {e.connection_id for e in mock_cluster.request_log if e.broker_id == 1}
    assert before, "the first connection's ApiVersions is in the broker's log"
    since = mock_cluster.requests.next_seq()
    future = net.send(1, metadata())
    pump(net, lambda: future.is_done)
    assert future.succeeded()
    after = {e.connection_id for e in mock_cluster.request_log[since:]
             if e.broker_id == 1 and e.api == "Metadata"}
    assert after and not after & before, "the request after the idle close went on a new connection"


def test_every_socket_gets_tcp_nodelay_and_keepalive(networks: Callable[..., NetworkClient]) -> None:
    net = networks()
    ready(net)
    conn = net._direct.get(1)
    assert conn is not None and conn._sock is not None
    assert conn._sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    assert conn._sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1


@contextlib.contextmanager
def ipv6_relay(target: tuple[str, int]) -> Iterator[int]:
    """A TCP relay on [::1] to ``target``: a broker reachable by an IPv6 literal."""
    listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    listener.bind(("::1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            upstream = socket.create_connection(target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        listener.close()


def test_a_bootstrap_server_given_as_an_ipv6_literal(mock_cluster: MockCluster) -> None:
    with ipv6_relay(mock_cluster.broker_address(1)) as port:
        net = NetworkClient(ProducerConfig(bootstrap_servers=f"[::1]:{port}", transactional_id="t-v6"))
        try:
            pump(net, lambda: net.bootstrapped)
            assert {b.node_id for b in net.cluster.brokers()} == set(mock_cluster.broker_ids)
            assert net.cluster.bootstrap_brokers()[0].host == "::1"
        finally:
            net.close()


def test_a_connection_is_busy_at_max_in_flight_requests(mock_cluster: MockCluster,
                                                        networks: Callable[..., NetworkClient]) -> None:
    net = networks(max_in_flight_requests_per_connection=2)
    ready(net)
    mock_cluster.delay_responses("Metadata", 500, count=2, broker_id=1)
    futures = [net.send(1, metadata())]
    assert net.is_ready(1)
    futures.append(net.send(1, metadata()))
    assert not net.is_ready(1), "two in flight: the limit"
    pump(net, lambda: all(f.is_done for f in futures))
    assert net.is_ready(1) and all(f.succeeded() for f in futures)


def test_an_abandoned_request_fails_at_once_and_the_connection_stays_in_step(
        mock_cluster: MockCluster, networks: Callable[..., NetworkClient]) -> None:
    net = networks()
    ready(net)
    mock_cluster.delay_responses("Metadata", 800, count=1, broker_id=1)
    slow = net.send(1, metadata())
    started = time.monotonic()
    gone = kerrors.KafkaConnectionError("the coordinator moved")
    assert net.abandon_request(1, slow, gone)
    assert slow.failed() and slow.exception is gone and time.monotonic() - started < 0.1
    assert not net.abandon_request(1, slow, gone), "no longer waiting there"
    after = net.send(1, MetadataRequest(version=4, topics=[], allow_auto_topic_creation=False))
    pump(net, lambda: after.is_done)
    # the abandoned request's answer came first on the wire and was dropped: this one got its own
    assert after.succeeded() and after.value.API_VERSION == 4
    assert net.has_connection(1)


def test_close_fails_what_is_in_flight_and_releases_every_socket(
        mock_cluster: MockCluster, networks: Callable[..., NetworkClient]) -> None:
    net = networks()
    ready(net)
    mock_cluster.black_hole(1)
    try:
        waiting = net.send(1, metadata())
        sockets = [c._sock for c in net._direct._conns.values()]
        net.close()
        assert waiting.failed() and isinstance(waiting.exception, errors.ClosedError)
        assert all(s is not None and s.fileno() == -1 for s in sockets)
        assert net._direct._wake_r.fileno() == -1 and net._direct._wake_w.fileno() == -1
        refused: Future = net.send(1, metadata())
        assert refused.failed(), "a closed client sends nothing"
    finally:
        mock_cluster.black_hole(1, enabled=False)
