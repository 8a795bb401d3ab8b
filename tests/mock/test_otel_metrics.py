"""A producer's metrics as OpenTelemetry instruments: the totals of ``metrics()`` under the Java client's
names, transactions by outcome, and the durations of transactions and calls - for every producer of a meter
provider, told apart by transactional id."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")

from tests._support.otel import Telemetry
from txnproducer import TransactionalProducer
from txnproducer._internal import metrics as m
from txnproducer.otel import names
from txnproducer.testing import MockCluster

TOPIC = "otel-metrics"


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1) as mock:
        mock.create_topic(TOPIC, partitions=2)
        yield mock


def _of(points: list[tuple[dict[str, Any], Any]], **attributes: Any) -> list[Any]:
    return [value for attrs, value in points if all(attrs.get(k) == v for k, v in attributes.items())]


def test_metrics_mirror_the_producers_and_count_transactions(cluster: MockCluster,
                                                             telemetry: Telemetry) -> None:
    tid = names.TRANSACTIONAL_ID
    with TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="m-1",
                               meter_provider=telemetry.meter_provider) as one, \
            TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="m-2",
                                  meter_provider=telemetry.meter_provider) as two:
        for p in (one, two):
            p.init_transactions()
        for _ in range(3):
            with one.transaction():
                for j in range(10):
                    one.send(TOPIC, b"v%d" % j)
        one.begin_transaction()
        one.send(TOPIC, b"dropped")
        one.abort_transaction()
        with two.transaction():
            two.send(TOPIC, b"w")
        own = one.metrics()
        reported = telemetry.metrics()
    # every total of metrics(), per producer, under kafka.producer.<name>
    for name in m.METRIC_NAMES:
        assert _of(reported[names.METRIC_PREFIX + name], **{tid: "m-1"}) == [int(own[name])], name
    assert _of(reported[names.METRIC_PREFIX + m.RECORDS_SENT], **{tid: "m-2"}) == [1]
    assert _of(reported[names.METRIC_BUFFER_TOTAL], **{tid: "m-1"}) == [int(own["buffer_total_bytes"])]
    available = int(own["buffer_available_bytes"])
    assert _of(reported[names.METRIC_BUFFER_AVAILABLE], **{tid: "m-1"}) == [available]
    attrs = reported[names.METRIC_TRANSACTIONS][0][0]
    assert attrs[names.MESSAGING_SYSTEM] == "kafka" and names.MESSAGING_CLIENT_ID in attrs
    # transactions by outcome, and how long they took
    transactions = reported[names.METRIC_TRANSACTIONS]
    assert _of(transactions, **{tid: "m-1", names.OUTCOME: "committed"}) == [3]
    assert _of(transactions, **{tid: "m-1", names.OUTCOME: "aborted"}) == [1]
    assert _of(transactions, **{tid: "m-2", names.OUTCOME: "committed"}) == [1]
    durations = reported[names.METRIC_TRANSACTION_DURATION]
    assert _of(durations, **{tid: "m-1", names.OUTCOME: "committed"}) == [3]  # a histogram's count
    calls = reported[names.METRIC_OPERATION_DURATION]
    assert _of(calls, **{tid: "m-1", names.OPERATION: names.SPAN_COMMIT}) == [3]
    assert _of(calls, **{tid: "m-1", names.OPERATION: names.SPAN_ABORT}) == [1]
    assert _of(calls, **{tid: "m-1", names.OPERATION: names.SPAN_INIT}) == [1]


def test_a_failed_call_is_measured_with_its_error_type(cluster: MockCluster, telemetry: Telemetry) -> None:
    with TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="m-fail",
                               meter_provider=telemetry.meter_provider) as p:
        p.init_transactions()
        cluster.inject_error("TxnOffsetCommit", 22)  # ILLEGAL_GENERATION: the group moved on
        p.begin_transaction()
        with pytest.raises(Exception, match=r"ILLEGAL_GENERATION|generation"):
            p.send_offsets_to_transaction({("in", 0): 1}, "g")
        p.abort_transaction()
        reported = telemetry.metrics()
    failed = [attrs for attrs, _ in reported[names.METRIC_OPERATION_DURATION]
              if attrs[names.OPERATION] == names.SPAN_SEND_OFFSETS]
    assert len(failed) == 1 and failed[0][names.ERROR_TYPE] == "ILLEGAL_GENERATION"
    assert _of(reported[names.METRIC_TRANSACTIONS], **{names.OUTCOME: "aborted"}) == [1]
