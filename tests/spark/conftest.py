"""Fixtures of the sink's protocol tests (test_task.py, test_committer.py): a one-broker
MockCluster with the output topic (the sink's per-process state-topic clients are closed before
it stops), and sink options for it with the state topic created."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from txnproducer.testing import MockCluster


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    from tests._support.sink_protocol import TOPIC
    from txnproducer.spark.sink.state_topic import close_shared_state_topic

    with MockCluster(num_brokers=1) as mock:
        mock.create_topic(TOPIC, partitions=2)
        try:
            yield mock
        finally:  # before the brokers go: the clients would keep reconnecting until replaced
            close_shared_state_topic()


@pytest.fixture
def options(cluster: MockCluster) -> Any:
    from tests._support.sink_protocol import TOPIC, sink_options

    return sink_options(cluster, TOPIC)
