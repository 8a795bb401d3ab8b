"""Fixtures of the sink's protocol tests (test_task.py, test_committer.py): a one-broker
MockCluster with the output topic, and sink options for it with the state topic created."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from txnproducer.testing import MockCluster


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    from tests._support.sink_protocol import TOPIC

    with MockCluster(num_brokers=1) as mock:
        mock.create_topic(TOPIC, partitions=2)
        yield mock


@pytest.fixture
def options(cluster: MockCluster) -> Any:
    from tests._support.sink_protocol import TOPIC, sink_options

    return sink_options(cluster, TOPIC)
