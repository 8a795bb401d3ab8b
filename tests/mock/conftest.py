"""Fixtures for tests against the in-process MockCluster.

``mock_cluster`` is a started 3-broker cluster with transaction.version 2; parametrize it indirectly
with the transaction version to run a test on both paths::

    @pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True)
    def test_x(mock_cluster): ...

A test that stops a broker is marked ``stops_brokers``: its cluster is bound below the kernel's
ephemeral port range (``tests/_support/ports.py``), so that no other test's broker takes the stopped
broker's port while the test's clients still reconnect to it.

``wire`` opens raw protocol connections (``txnproducer.testing.wire_client.WireClient``) to a broker by id and
closes them after the test.

``consumers`` makes ``TransactionalConsumer``s on ``mock_cluster`` with short bounds (keyword settings
override them) and closes them after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests._support.ports import cluster_on_reserved_ports
from tests._support.secrets_scan import debug_everywhere  # noqa: F401  (a fixture for the secrets scans)
from txnproducer import TransactionalConsumer
from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient


@pytest.fixture
def mock_cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    tv = getattr(request, "param", 2)
    if request.node.get_closest_marker("stops_brokers") is not None:
        with cluster_on_reserved_ports(num_brokers=3, transaction_version=tv) as cluster:
            yield cluster
        return
    cluster = MockCluster(num_brokers=3, transaction_version=tv)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def consumers(mock_cluster: MockCluster) -> Iterator[Callable[..., TransactionalConsumer]]:
    made: list[TransactionalConsumer] = []

    def make(**settings: Any) -> TransactionalConsumer:
        settings = {
            "bootstrap_servers": mock_cluster.bootstrap_servers,
            "auto_offset_reset": "earliest",
            "request_timeout_ms": 5_000,
            "default_api_timeout_ms": 10_000,
            "fetch_max_wait_ms": 100,
            **settings,
        }
        consumer = TransactionalConsumer(**settings)
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer.close(timeout=5)


@pytest.fixture
def wire(mock_cluster: MockCluster) -> Iterator[Callable[[int], WireClient]]:
    clients: list[WireClient] = []

    def connect(broker_id: int = 1) -> WireClient:
        host, port = mock_cluster.broker_address(broker_id)
        client = WireClient(host, port)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.close()
