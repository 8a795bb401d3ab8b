"""Suite-wide hygiene, and the one fixture two tiers share.

Some code under test (the CLI, ``txnproducer perf``) configures process-global logging as an
application would; resetting structlog after each test keeps one test's configuration from
changing what another test's log capture sees.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Spark standalone cluster (a master, two workers) for the whole session: the cluster tier
    (tests/cluster) and its real-broker variant (tests/broker) share it, one at a time."""
    from tests._support.spark_standalone import StandaloneCluster

    cluster = StandaloneCluster(Path(tmp_path_factory.mktemp("standalone"))).start()
    try:
        yield cluster
    finally:
        cluster.stop()
