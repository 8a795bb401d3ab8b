"""Failing loud and early (issue 34, items 3, 5 and 8): what a user sees first when something is wrong.

* a bootstrap server that refuses connections is a WARNING naming its address and the cause at the
  first failed attempt, while the call that needs it still waits (not 60 s later);
* ``close(0)`` closes at once, as asked, without a warning;
* after the coordinator aborted a transaction at ``transaction_timeout_ms``, the first error the
  application sees - the record's future, or the commit - names the timeout;
* a call ``timeout`` that can only be milliseconds (``commit_transaction(timeout=5000)``) is logged.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator

import pytest

from tests._support.aio import AsyncProducerFactory, run
from tests._support.producers import ProducerFactory
from txnproducer import TransactionalProducer, errors
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


class Captured(logging.Handler):
    """Records of one logger and its children; ``seen`` is set by the first that matches."""

    def __init__(self, logger: str, needle: str = "") -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.seen = threading.Event()
        self._needle = needle
        self._logger = logging.getLogger(logger)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self._needle and self._needle in record.getMessage():
            self.seen.set()

    def __enter__(self) -> Captured:
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)

    def warnings(self) -> list[str]:
        return [r.getMessage() for r in self.records if r.levelno >= logging.WARNING]


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-loud")
    yield factory
    factory.close_all(5)


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound, never listening, and held for the test, so
    that no other test's broker can take it meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def test_a_refused_bootstrap_server_is_a_warning_at_the_first_attempt_while_the_call_waits(
        refused_port: int) -> None:
    outcome: list[BaseException] = []
    with Captured("txnproducer", needle="txn.connection_failed") as logs:
        # one reconnect backoff is 10 s here: a warning held back for a later attempt would come too late
        producer = TransactionalProducer(bootstrap_servers=f"127.0.0.1:{refused_port}",
                                         transactional_id="tx-refused", reconnect_backoff_ms=10_000,
                                         reconnect_backoff_max_ms=10_000)

        def init() -> None:
            try:
                producer.init_transactions(timeout=60)
            except BaseException as exc:
                outcome.append(exc)

        waiting = threading.Thread(target=init)
        waiting.start()
        try:
            assert logs.seen.wait(8), f"no connection warning within 8 s: {logs.warnings()}"
            assert waiting.is_alive()  # the call still waits: the warning did not wait for its bound
        finally:
            producer.close(0)
            waiting.join(10)
    warning = next(m for m in logs.warnings() if "txn.connection_failed" in m)
    assert f"address='127.0.0.1:{refused_port}'" in warning
    assert "ECONNREFUSED" in warning and "failed_attempts=1" in warning  # the first attempt's
    assert isinstance(outcome[0], errors.ClosedError)


def test_close_0_closes_at_once_without_a_warning(mock_cluster: MockCluster, make_producer: ProducerFactory,
                                                  ) -> None:
    mock_cluster.create_topic("loud-close", partitions=1)
    producer = make_producer("tx-loud-close")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("loud-close", b"dropped")
    with Captured("txnproducer") as logs:
        producer.close(0)
    assert producer.closed
    assert not [m for m in logs.warnings() if "close_forced" in m]


def test_async_close_0_closes_at_once_without_a_warning(mock_cluster: MockCluster) -> None:
    factory = AsyncProducerFactory(mock_cluster, "tx-loud-close-aio")

    async def main() -> None:
        producer = factory()
        await producer.init_transactions()
        producer.begin_transaction()
        await producer.send("loud-close-aio", b"dropped")
        with Captured("txnproducer") as logs:
            await producer.close(0)
        assert not [m for m in logs.warnings() if "close_forced" in m]

    try:
        run(main())
    finally:
        factory.close_all(5)


def _timed_out(cluster: MockCluster, producer: TransactionalProducer, topic: str) -> None:
    """Open a transaction with a record, then wait (on the mock's state, not a sleep) until the
    coordinator aborted it at transaction_timeout_ms."""
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(topic, b"before").get(5)
    txn_id = producer.config.transactional_id
    state = cluster.state
    with state.lock:
        aborted = state.cond.wait_for(lambda: state.txn.describe(txn_id)["state"] == "CompleteAbort",
                                      timeout=15)
    assert aborted, "the coordinator did not abort the transaction at its timeout"


@TVS
def test_after_a_transaction_timeout_the_records_future_names_the_timeout(
        mock_cluster: MockCluster, make_producer: ProducerFactory) -> None:
    mock_cluster.create_topic("loud-timeout", partitions=1)
    producer = make_producer("tx-loud-timeout-send", transaction_timeout_ms=1000)
    _timed_out(mock_cluster, producer, "loud-timeout")
    future = producer.send("loud-timeout", b"after")
    with pytest.raises(errors.InvalidProducerEpochError, match="transaction_timeout_ms") as first:
        future.get(10)
    assert "Call abort_transaction()" in str(first.value)


@TVS
def test_after_a_transaction_timeout_the_commit_names_the_timeout(
        mock_cluster: MockCluster, make_producer: ProducerFactory) -> None:
    mock_cluster.create_topic("loud-timeout", partitions=1)
    producer = make_producer("tx-loud-timeout-commit", transaction_timeout_ms=1000)
    _timed_out(mock_cluster, producer, "loud-timeout")
    with pytest.raises(errors.TxnProducerError, match="transaction_timeout_ms") as first:
        producer.commit_transaction()
    assert isinstance(first.value, errors.FatalError)  # as the Java client: close and start again


def test_a_timeout_that_can_only_be_milliseconds_is_logged_once(
        mock_cluster: MockCluster, make_producer: ProducerFactory) -> None:
    mock_cluster.create_topic("loud-units", partitions=1)
    producer = make_producer("tx-loud-units")
    producer.init_transactions()
    with Captured("txnproducer.producer") as logs:
        for _ in range(2):
            with producer.transaction():
                producer.send("loud-units", b"v")
            producer.flush(timeout=5000)  # meant 5 s
        producer.flush(timeout=30)  # plausible: nothing to say
    implausible = [m for m in logs.warnings() if "txn.implausible_timeout" in m]
    assert len(implausible) == 1
    assert "timeout_s=5000" in implausible[0] and "meant_s=5.0" in implausible[0]
