"""The txnkafka source's driver lookups (txnproducer/spark/source/offset_reader.py) against MockCluster:
which partitions subscribe / subscribePattern / assign cover, the start and end offsets of each way to
give them (earliest, latest = the last stable offset under read_committed, per partition, by
timestamp), data loss in given offsets, and the errors a user must be able to act on: an unknown topic,
an unreachable cluster (bounded, naming the servers), a topic the principal may not describe."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from kafka.structs import TopicPartition

from tests._support.source_input import LAYOUT, write_layout
from txnproducer import TimeoutError
from txnproducer.admin.errors import AdminAuthorizationError
from txnproducer.errors import ConfigError
from txnproducer.spark.source.data_loss import DataLossReport, SourceDataLossError
from txnproducer.spark.source.offset_reader import OffsetReader
from txnproducer.spark.source.options import SourceOptions
from txnproducer.testing import MockCluster

FAIL = DataLossReport(True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=2) as c:
        for topic, partitions in (("in-a", 2), ("in-b", 1), ("other", 1), ("layout", 1)):
            c.create_topic(topic, partitions)
        write_layout(c.bootstrap_servers, "layout")
        yield c


def reader(cluster: MockCluster, streaming: bool = False, **options: str) -> OffsetReader:
    opts = SourceOptions.parse(
        {"kafka.bootstrap.servers": cluster.bootstrap_servers, **options}, streaming=streaming
    )
    return OffsetReader(opts, batch=not streaming)


def tps(*names: tuple[str, int]) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t, p in names}


def test_subscribe_pattern_and_assign(cluster: MockCluster) -> None:
    with reader(cluster, subscribe="in-a,in-b") as r:
        assert r.partitions() == tps(("in-a", 0), ("in-a", 1), ("in-b", 0))
    with reader(cluster, subscribePattern="in-.") as r:
        assert r.partitions() == tps(("in-a", 0), ("in-a", 1), ("in-b", 0))
        cluster.create_topic("in-c", 1)
        assert TopicPartition("in-c", 0) in r.partitions(), "a new topic matching the pattern is picked up"
    with reader(cluster, subscribePattern="in") as r:
        assert r.partitions() == set(), "the whole name must match (Java's Pattern.matches)"
    with reader(cluster, assign='{"in-a":[1]}') as r:
        assert r.partitions() == tps(("in-a", 1))


def test_a_batch_read_of_a_missing_topic_names_it_a_stream_waits_for_it(cluster: MockCluster) -> None:
    with (
        reader(cluster, subscribe="in-b,nope") as r,
        pytest.raises(ConfigError, match="topic\\(s\\) nope of"),
    ):
        r.partitions()
    with reader(cluster, streaming=True, subscribe="in-b,nope") as r:
        assert r.partitions() == tps(("in-b", 0))


def test_latest_is_the_last_stable_offset_under_read_committed() -> None:
    with MockCluster(num_brokers=1) as c:
        c.create_topic("layout", 1)
        open_txn = write_layout(c.bootstrap_servers, "layout", leave_open=True)
        assert open_txn is not None
        try:
            tp = {TopicPartition("layout", 0)}
            with reader(c, subscribe="layout") as r:
                assert r.latest(tp) == dict.fromkeys(tp, LAYOUT["end"]), "the open transaction's first offset"
                assert r.earliest(tp) == dict.fromkeys(tp, 0)
            with reader(c, subscribe="layout", **{"kafka.isolation.level": "read_uncommitted"}) as r:
                assert r.latest(tp) == dict.fromkeys(tp, LAYOUT["end"] + 1), "the high watermark"
        finally:
            open_txn.abort_transaction()
            open_txn.close(5)


def test_offsets_per_partition_and_their_data_loss(cluster: MockCluster) -> None:
    tp = TopicPartition("layout", 0)
    with reader(cluster, subscribe="layout") as r:
        spec = r.options.starting
        assert r.resolve(spec, {tp}, starting=True, report=FAIL) == {tp: 0}
        given = SourceOptions.parse(
            {
                "kafka.bootstrap.servers": "x:1",
                "subscribe": "layout",
                "startingOffsets": '{"layout":{"0":5}}',
                "endingOffsets": '{"layout":{"0":-1}}',
            },
            streaming=False,
        )
        assert r.resolve(given.starting, {tp}, starting=True, report=FAIL) == {tp: 5}
        assert r.resolve(given.ending, {tp}, starting=False, report=FAIL) == {tp: LAYOUT["end"]}
        past = SourceOptions.parse(
            {
                "kafka.bootstrap.servers": "x:1",
                "subscribe": "layout",
                "startingOffsets": '{"layout":{"0":99}}',
            },
            streaming=False,
        ).starting
        with pytest.raises(
            SourceDataLossError, match="startingOffsets for layout-0 is 99, past the end of its log"
        ):
            r.resolve(past, {tp}, starting=True, report=FAIL)
        assert r.resolve(past, {tp}, starting=True, report=DataLossReport(False)) == {tp: LAYOUT["end"]}
        with pytest.raises(ConfigError, match="must name every partition read"):
            r.resolve(past, {tp, TopicPartition("other", 0)}, starting=True, report=FAIL)


def test_timestamps_find_the_first_offset_at_or_after_them() -> None:
    """As Kafka answers ListOffsets by timestamp: the first batch whose timestamp is at least the
    one asked - a transaction marker too (its timestamp is when it was written), which the read
    then skips. The records here are time-stamped 20 minutes ahead, after their markers."""
    base = int(time.time() * 1000) + 20 * 60_000
    with MockCluster(num_brokers=1) as c:
        c.create_topic("ts", 2)
        from txnproducer import TransactionalProducer

        with TransactionalProducer(
            bootstrap_servers=c.bootstrap_servers, transactional_id="ts-writer", linger_ms=0
        ) as p:
            p.init_transactions()
            for ts in (1000, 2000, 3000):
                with p.transaction():
                    p.send("ts", b"v", partition=0, timestamp_ms=base + ts)
                    p.send("ts", b"v", partition=1, timestamp_ms=base + ts + 5000)
        zero, one = TopicPartition("ts", 0), TopicPartition("ts", 1)
        options = {"kafka.bootstrap.servers": c.bootstrap_servers, "subscribe": "ts"}

        def start(**more: str) -> dict[TopicPartition, int]:
            opts = SourceOptions.parse({**options, **more}, streaming=False)
            with OffsetReader(opts, batch=True) as r:
                return r.resolve(opts.starting, {zero, one}, starting=True, report=FAIL)

        # each transaction is a record and a marker: offsets 0, 2, 4 hold the records
        assert start(startingTimestamp=str(base + 1500)) == {zero: 2, one: 0}
        assert start(startingOffsetsByTimestamp=f'{{"ts":{{"0":{base + 2500},"1":{base + 7000}}}}}') == {
            zero: 4,
            one: 2,
        }
        with pytest.raises(ConfigError, match=f"no record of ts-0 has a timestamp at or after {base + 3500}"):
            start(startingTimestamp=str(base + 3500))
        assert start(startingTimestamp=str(base + 3500), startingOffsetsByTimestampStrategy="latest") == {
            zero: 6,
            one: 0,
        }
        ending = SourceOptions.parse({**options, "endingTimestamp": str(base + 99_999)}, streaming=False)
        with OffsetReader(ending, batch=True) as r:
            assert r.resolve(ending.ending, {zero, one}, starting=False, report=FAIL) == {zero: 6, one: 6}


def test_an_unreachable_cluster_is_a_timeout_naming_the_servers_within_its_bound() -> None:
    with socket.socket() as held:  # a port nobody listens on, held so that no other test's broker takes it
        held.bind(("127.0.0.1", 0))
        servers = f"127.0.0.1:{held.getsockname()[1]}"
        opts = SourceOptions.parse(
            {"kafka.bootstrap.servers": servers, "subscribe": "t", "kafka.default.api.timeout.ms": "1500"},
            streaming=False,
        )
        began = time.monotonic()
        with OffsetReader(opts, batch=True) as r, pytest.raises(TimeoutError) as caught:
            r.partitions()
        assert time.monotonic() - began < 10
    assert servers in str(caught.value) and "1500 ms (default.api.timeout.ms)" in str(caught.value)


def test_a_topic_the_principal_may_not_describe_is_refused_naming_the_acl() -> None:
    with MockCluster(num_brokers=1, sasl_mechanisms=["PLAIN"], users={"alice": "alice-pw"}, acls=[]) as c:
        c.create_topic("secret", 1)
        opts = SourceOptions.parse(
            {
                "kafka.bootstrap.servers": c.bootstrap_servers,
                "assign": '{"secret":[0]}',
                "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.plain.username": "alice",
                "kafka.sasl.plain.password": "alice-pw",
            },
            streaming=False,
        )
        with OffsetReader(opts, batch=True) as r, pytest.raises(AdminAuthorizationError) as caught:
            r.latest(r.partitions())
    assert "Describe on Topic 'secret'" in str(caught.value) and "alice-pw" not in str(caught.value)
