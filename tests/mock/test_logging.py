"""What the library logs on its ordinary paths: our loggers only, and no ERROR without an error the
application receives (docs/guide/errors.md, "Logging").

Why: log-based alerting pages on ERROR lines. kafka-python's connection layer used to log "Bootstrap
failed ... Unable to bootstrap" for a producer created and closed at once against a healthy broker, and
about twenty ERROR lines for an unreachable bootstrap server, beside our one documented WARNING. The three
situations a new user meets first are run here with every logger of the process captured at DEBUG:

* a producer created and closed at once: nothing at WARNING or above;
* an unreachable bootstrap server: the WARNING naming it (``txn.connection_failed``) and the call's
  TimeoutError, no ERROR;
* a broker stopped in the middle of a run: the transaction still commits, no ERROR.

In each, no line comes from a kafka-python logger (``kafka.*``) at any level.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import pytest

from tests._support.producers import committed_values
from txnproducer import TransactionalProducer, errors
from txnproducer.testing import MockCluster


class Everything(logging.Handler):
    """Every record of every logger in the process, at DEBUG and above."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def at_least(self, level: int) -> list[str]:
        return [f"{r.name}: {r.getMessage()}" for r in self.records if r.levelno >= level]

    def from_kafka_python(self) -> list[str]:
        return [f"{r.name}: {r.getMessage()}" for r in self.records
                if r.name == "kafka" or r.name.startswith("kafka.")]


@pytest.fixture
def logs() -> Iterator[Everything]:
    handler = Everything()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    # kafka-python's own loggers: at DEBUG too, whatever another test set them to
    kafka_levels = {name: logging.getLogger(name).level for name in ("kafka", "kafka.net", "kafka.protocol")}
    for name in kafka_levels:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        for name, old in kafka_levels.items():
            logging.getLogger(name).setLevel(old)


def test_a_producer_created_and_closed_at_once_logs_no_warning(mock_cluster: MockCluster,
                                                               logs: Everything) -> None:
    producer = TransactionalProducer(bootstrap_servers=mock_cluster.bootstrap_servers,
                                     transactional_id="tx-log-at-once")
    producer.close(5)
    assert logs.at_least(logging.WARNING) == []
    assert logs.from_kafka_python() == []
    assert logs.records, "the capture saw nothing: it would pass whatever was logged"


def test_an_unreachable_bootstrap_server_is_one_warning_and_the_calls_error(logs: Everything) -> None:
    with socket.socket() as held:  # bound, never listening: refuses connections for the test's length
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        producer = TransactionalProducer(bootstrap_servers=f"127.0.0.1:{port}",
                                         transactional_id="tx-log-down", max_block_ms=1_500)
        try:
            with pytest.raises(errors.TimeoutError, match="could not reach the cluster"):
                producer.init_transactions()
        finally:
            producer.close(5)
    warnings = logs.at_least(logging.WARNING)
    assert warnings, "the unreachable server must be said"
    assert all("txn.connection_failed" in w and f"127.0.0.1:{port}" in w for w in warnings), warnings
    assert logs.at_least(logging.ERROR) == []
    assert logs.from_kafka_python() == []


@pytest.mark.stops_brokers
def test_a_broker_stopped_mid_run_logs_no_error(mock_cluster: MockCluster, logs: Everything) -> None:
    mock_cluster.create_topic("log-stop", partitions=1)
    leader = mock_cluster.leader_of("log-stop", 0)
    txn_id = next(f"tx-log-stop-{i}" for i in range(100)
                  if mock_cluster.coordinator_for(f"tx-log-stop-{i}") != leader)
    producer = TransactionalProducer(bootstrap_servers=mock_cluster.bootstrap_servers,
                                     transactional_id=txn_id, linger_ms=0, request_timeout_ms=3_000)
    try:
        producer.init_transactions()
        with producer.transaction():
            producer.send("log-stop", b"before", partition=0)
        mock_cluster.stop_broker(leader)
        with producer.transaction():
            producer.send("log-stop", b"after", partition=0)
    finally:
        producer.close(5)
    assert committed_values(mock_cluster, "log-stop", 0) == [b"before", b"after"]
    assert logs.at_least(logging.ERROR) == []
    assert logs.from_kafka_python() == []
