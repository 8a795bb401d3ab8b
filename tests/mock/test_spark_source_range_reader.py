"""The txnkafka source's read of one range on an executor (txnproducer/spark/source/range_reader.py,
consumers.py) against MockCluster: the three failure modes of transactional topics - a marker at a
range's start, middle or end; a range of markers only; a range of aborted records only - a start
inside an aborted transaction, data loss both ways, the progress bound, a refused READ, and the
consumers a Python worker keeps. No Spark: the read is plain Python.

Partition 0 holds ``tests/_support/source_input.LAYOUT``: commit [0 1 2] marker 3, abort [4 5]
marker 6, commit [7] marker 8, commit [9 10 11] marker 12.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.source_input import LAYOUT, write_layout
from txnproducer import TimeoutError, TopicAuthorizationError
from txnproducer.spark.source import consumers
from txnproducer.spark.source.data_loss import DataLossReport, SourceDataLossError
from txnproducer.spark.source.options import SourceOptions
from txnproducer.spark.source.planning import OffsetRange
from txnproducer.spark.source.range_reader import read_range
from txnproducer.testing import MockCluster

TOPIC = "layout"
POLL_TIMEOUT_S = 20.0  # a read that waited for a record a marker holds would fail here, not hang


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1) as c:
        c.create_topic(TOPIC, 1)
        write_layout(c.bootstrap_servers, TOPIC)
        yield c
        consumers.close_all()


@pytest.fixture(autouse=True)
def fresh_consumers() -> Iterator[None]:
    """Each test starts without kept consumers: a kept one's fetch ahead, held by the broker for
    fetch.max.wait.ms, would delay the next test's first fetch (what the source's 100 ms default
    bounds; these tests set 5 s to show that no read waits on the broker)."""
    consumers.close_all()
    yield
    consumers.close_all()


def options(cluster: MockCluster, **extra: str) -> SourceOptions:
    return SourceOptions.parse(
        {
            "kafka.bootstrap.servers": cluster.bootstrap_servers,
            "subscribe": TOPIC,
            "kafka.fetch.max.wait.ms": "5000",
            **extra,
        },
        streaming=False,
    )


def offsets_read(opts: SourceOptions, start: int, end: int, fail: bool = True) -> list[int]:
    with consumers.borrowed(opts) as consumer:
        return [
            int(o)
            for batch in read_range(
                consumer, OffsetRange(TOPIC, 0, start, end), DataLossReport(fail), POLL_TIMEOUT_S
            )
            for o in batch.offsets
        ]


def committed_in(start: int, end: int) -> list[int]:
    return [o for o in LAYOUT["committed"] if start <= o < end]


@pytest.mark.parametrize(
    ("start", "end", "case"),
    [
        (0, 13, "the whole log"),
        (3, 9, "starts at a commit marker, holds an abort in the middle"),
        (0, 8, "markers and aborted records in the middle"),
        (0, 4, "ends right after a commit marker"),
        (0, 3, "ends at a commit marker"),
        (5, 13, "starts inside an aborted transaction"),
        (6, 9, "starts at an abort marker"),
        (3, 4, "a commit marker only"),
        (6, 7, "an abort marker only"),
        (12, 13, "the last marker only"),
        (4, 6, "aborted records only"),
        (4, 7, "an aborted transaction and its marker only"),
    ],
)
def test_a_range_reads_exactly_its_committed_records_whatever_its_ends_hold(
    cluster: MockCluster, start: int, end: int, case: str
) -> None:
    began = time.monotonic()
    assert offsets_read(options(cluster), start, end) == committed_in(start, end), case
    # the end is reached by the position: no wait for a record that a marker or an abort holds
    # (fetch.max.wait.ms is 5 s: a read that waited on the broker once would take that long)
    assert time.monotonic() - began < 4.0, f"{case}: the read waited"


def test_read_uncommitted_returns_aborted_records_never_markers(cluster: MockCluster) -> None:
    opts = options(cluster, **{"kafka.isolation.level": "read_uncommitted"})
    assert offsets_read(opts, 0, 13) == sorted(LAYOUT["committed"] + LAYOUT["aborted"])


def test_values_and_columns_come_through(cluster: MockCluster) -> None:
    with consumers.borrowed(options(cluster)) as consumer:
        batches = list(
            read_range(consumer, OffsetRange(TOPIC, 0, 0, 13), DataLossReport(True), POLL_TIMEOUT_S)
        )
    values = [v for b in batches for v in b.values.to_list()]
    assert values == [b"c%d" % o for o in LAYOUT["committed"]]


def test_a_kept_consumer_continues_where_the_last_range_ended(
    cluster: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = options(cluster, **{"kafka.client.id": "kept-consumer-test"})
    with consumers.borrowed(opts) as first:  # three records: the position stops at 3, the end
        list(read_range(first, OffsetRange(TOPIC, 0, 0, 3), DataLossReport(True), POLL_TIMEOUT_S))
    seeks: list[Any] = []
    with consumers.borrowed(opts) as second:
        assert second is first, "the Python worker keeps the consumer for the next task"
        original = second.seek
        monkeypatch.setattr(second, "seek", lambda tp, offset: (seeks.append(offset), original(tp, offset)))
        got = [
            int(o)
            for b in read_range(second, OffsetRange(TOPIC, 0, 3, 13), DataLossReport(True), POLL_TIMEOUT_S)
            for o in b.offsets
        ]
        assert got == committed_in(3, 13) and seeks == [], "no seek: the position was the range's start"
        got = [
            int(o)
            for b in read_range(second, OffsetRange(TOPIC, 0, 0, 3), DataLossReport(True), POLL_TIMEOUT_S)
            for o in b.offsets
        ]
        assert got == [0, 1, 2] and seeks == [0]


def test_a_consumer_that_raised_is_closed_not_kept(cluster: MockCluster) -> None:
    opts = options(cluster, **{"kafka.client.id": "raised-consumer-test"})
    with pytest.raises(RuntimeError), consumers.borrowed(opts) as consumer:
        raise RuntimeError("the task failed")
    assert consumer.closed
    with consumers.borrowed(opts) as other:
        assert other is not consumer


def test_the_cache_is_bounded(cluster: MockCluster) -> None:
    made = []
    for n in range(consumers.MAX_KEPT + 2):
        with consumers.borrowed(options(cluster, **{"kafka.client.id": f"bounded-{n}"})) as c:
            made.append(c)
    assert sum(not c.closed for c in made) <= consumers.MAX_KEPT
    assert made[0].closed, "the least recently used went first"


def test_an_end_past_the_last_stable_offset_times_out_naming_it() -> None:
    with MockCluster(num_brokers=1) as c:
        c.create_topic(TOPIC, 1)
        open_txn = write_layout(c.bootstrap_servers, TOPIC, leave_open=True)
        assert open_txn is not None
        try:
            opts = options(c, **{"kafka.fetch.max.wait.ms": "100"})
            began = time.monotonic()
            with pytest.raises(TimeoutError) as caught, consumers.borrowed(opts) as consumer:
                list(read_range(consumer, OffsetRange(TOPIC, 0, 0, 14), DataLossReport(True), 1.5))
            assert time.monotonic() - began < 15
            message = str(caught.value)
            assert (
                "layout-0 stayed at 13" in message and "end 14" in message and "open transaction" in message
            )
        finally:
            open_txn.abort_transaction()
            open_txn.close(5)
            consumers.close_all()


def test_deleted_records_are_data_loss_or_skipped() -> None:
    with MockCluster(num_brokers=1) as c:
        c.create_topic(TOPIC, 1)
        write_layout(c.bootstrap_servers, TOPIC)
        c.delete_records(TOPIC, 0, 5)
        try:
            with pytest.raises(SourceDataLossError) as caught:
                offsets_read(options(c), 0, 13)
            assert "offsets 0 to 4 of layout-0 [0, 13) were deleted" in str(caught.value)
            assert "log of layout-0 starts at 5" in str(caught.value)
            assert offsets_read(options(c), 0, 13, fail=False) == committed_in(5, 13)
            assert offsets_read(options(c), 0, 4, fail=False) == [], "nothing of the range is left"
            with pytest.raises(
                SourceDataLossError, match="offset 40 of layout-0 \\[40, 50\\) is past the end"
            ):
                offsets_read(options(c), 40, 50)
            assert offsets_read(options(c), 40, 50, fail=False) == []
        finally:
            consumers.close_all()


def test_a_topic_without_read_permission_is_a_typed_error_naming_it() -> None:
    acls = [("User:alice", "topic", TOPIC, "Describe")]  # may see it, may not read it
    with MockCluster(
        num_brokers=1,
        sasl_mechanisms=["PLAIN"],
        users={"alice": "alice-pw", "admin": "admin-pw"},
        acls=acls,
        super_users=["User:admin"],
    ) as c:
        c.create_topic(TOPIC, 1)
        security = {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN"}
        admin = {**security, "kafka.sasl.plain.username": "admin", "kafka.sasl.plain.password": "admin-pw"}
        write_layout_as(c, admin)
        alice = options(
            c, **security, **{"kafka.sasl.plain.username": "alice", "kafka.sasl.plain.password": "alice-pw"}
        )
        try:
            with pytest.raises(TopicAuthorizationError) as caught:
                offsets_read(alice, 0, 13)
            assert f"not authorized to read topic {TOPIC!r}" in str(caught.value)
            assert "alice-pw" not in str(caught.value)
        finally:
            consumers.close_all()


def write_layout_as(cluster: MockCluster, settings: dict[str, str]) -> None:
    from txnproducer import TransactionalProducer

    p = TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        transactional_id="admin-writer",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=settings["kafka.sasl.plain.username"],
        sasl_plain_password=settings["kafka.sasl.plain.password"],
        max_block_ms=10_000,
    )
    with p:
        p.init_transactions()
        with p.transaction():
            p.send(TOPIC, b"c0", partition=0)
