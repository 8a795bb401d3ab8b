"""``txnproducer perf``: options, statistics, the workload loop, the JSON result, and a smoke run."""

from __future__ import annotations

import argparse
import io
import json
import math
from typing import Any

import pytest

from txnproducer import perf
from txnproducer._internal import accel


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    perf.add_arguments(parser)
    return parser.parse_args(list(argv))


# --- options -----------------------------------------------------------------------------------------


def test_defaults_follow_the_java_producer_and_perf_test() -> None:
    args = parse()
    assert (args.num_records, args.record_size, args.linger_ms, args.batch_size) == (100_000, 100, 5, 262144)
    assert args.records_per_txn is None and args.txn_duration_ms is None  # run() then uses 1000 per txn
    assert (args.acks, args.compression, args.partitions, args.transaction_version) == ("all", "none", 3, 2)
    assert args.bootstrap is None and not args.json


def test_options_are_parsed() -> None:
    args = parse("--num-records", "5000", "--record-size", "512", "--records-per-txn", "10", "--linger-ms",
                 "0", "--batch-size", "65536", "--compression", "lz4", "--partitions", "6", "--topic", "t",
                 "--bootstrap", "h:9092", "--json", "--acks", "-1")
    assert (args.num_records, args.record_size, args.records_per_txn) == (5000, 512, 10)
    assert (args.linger_ms, args.batch_size, args.compression, args.partitions) == (0, 65536, "lz4", 6)
    assert (args.topic, args.bootstrap, args.json, args.acks) == ("t", "h:9092", True, "-1")


@pytest.mark.parametrize(
    "argv",
    [
        ["--records-per-txn", "10", "--txn-duration-ms", "100"],  # one way to end a transaction
        ["--acks", "1"],  # transactions need acks=all
        ["--num-records", "0"],
        ["--records-per-txn", "-1"],
        ["--compression", "brotli"],
        ["--transaction-version", "3"],
    ],
)
def test_invalid_options_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(*argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


# --- statistics ----------------------------------------------------------------------------------------


def test_percentile_interpolates_between_ranks_like_numpy() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert perf.percentile(values, 0) == 1.0
    assert perf.percentile(values, 50) == 2.5
    assert perf.percentile(values, 100) == 4.0
    hundred = [float(i) for i in range(1, 101)]
    assert perf.percentile(hundred, 95) == pytest.approx(95.05)
    assert perf.percentile(hundred, 99) == pytest.approx(99.01)
    assert perf.percentile([7.0], 99) == 7.0


def test_percentile_of_nothing_is_nan_and_q_is_checked() -> None:
    assert math.isnan(perf.percentile([], 50))
    with pytest.raises(ValueError, match=r"0\.\.100"):
        perf.percentile([1.0], 101)


def test_latency_summary_sorts_its_input() -> None:
    summary = perf.latency_summary([30.0, 10.0, 20.0])
    assert summary == {"count": 3.0, "mean": 20.0, "p50": 20.0, "p95": 29.0, "p99": pytest.approx(29.8),
                       "max": 30.0}


def test_peak_rss_is_reported_in_bytes() -> None:
    assert perf.peak_rss_bytes() > 1024 * 1024  # an interpreter with imports is > 1 MiB


# --- the workload ----------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeClient:
    """Records the calls; each send takes 1 ms and each commit 2 ms of the fake clock."""

    name = "fake"
    queue_full: tuple[type[BaseException], ...] = ()

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: list[str] = []
        self.txn_sizes: list[int] = []
        self.values: set[bytes] = set()

    def init(self) -> None:
        self.calls.append("init")

    def prepare(self, topic: str) -> None:
        assert topic == "t"
        self.calls.append("prepare")
        self.clock.now += 0.1  # a metadata round trip: counted in init_s, not in the throughput

    def begin(self) -> None:
        self.calls.append("begin")
        self.txn_sizes.append(0)

    def send(self, topic: str, value: bytes) -> None:
        assert topic == "t"
        self.values.add(value)
        self.txn_sizes[-1] += 1
        self.clock.now += 0.001

    def on_queue_full(self) -> None:
        self.calls.append("queue_full")

    def commit(self) -> None:
        self.calls.append("commit")
        self.clock.now += 0.002

    def close(self) -> None:
        self.calls.append("close")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(perf.time, "monotonic", fake)
    return fake


def test_records_are_split_into_transactions_of_the_given_size(clock: FakeClock) -> None:
    client = FakeClient(clock)
    result = perf.run_workload(client, "t", num_records=10, record_size=50, records_per_txn=3)
    assert client.txn_sizes == [3, 3, 3, 1]
    assert client.calls == ["init", "prepare"] + ["begin", "commit"] * 4  # metadata before the clock
    assert (result.records, result.transactions) == (10, 4)
    assert [len(v) for v in client.values] == [50]  # one payload of the record size, reused
    assert result.commit_latencies_ms == pytest.approx([2.0] * 4)
    # 10 sends x 1 ms + 4 commits x 2 ms
    assert result.elapsed_s == pytest.approx(0.018)
    assert result.init_s == pytest.approx(0.1)
    assert result.records_per_s == pytest.approx(10 / 0.018)
    assert result.transactions_per_s == pytest.approx(4 / 0.018)
    assert result.mb_per_s == pytest.approx(10 * 50 / 0.018 / 2**20)


def test_a_full_local_queue_is_served_and_the_record_sent_again(clock: FakeClock) -> None:
    class Full(Exception):
        pass

    class QueueClient(FakeClient):
        """Its queue holds 4 records until served (confluent-kafka's BufferError)."""

        queue_full = (Full,)

        def __init__(self, clock: FakeClock) -> None:
            super().__init__(clock)
            self.queued = 0
            self.sent = 0

        def send(self, topic: str, value: bytes) -> None:
            if self.queued == 4:
                raise Full
            self.queued += 1
            self.sent += 1
            super().send(topic, value)

        def on_queue_full(self) -> None:
            super().on_queue_full()
            self.queued = 0

    client = QueueClient(clock)
    result = perf.run_workload(client, "t", num_records=10, record_size=1, records_per_txn=10)
    assert client.sent == result.records == 10  # each record once, none lost to the full queue
    assert client.calls == ["init", "prepare", "begin", "queue_full", "queue_full", "commit"]


def test_txn_duration_ends_transactions_by_time(clock: FakeClock) -> None:
    client = FakeClient(clock)
    result = perf.run_workload(client, "t", num_records=1000, record_size=1, records_per_txn=None,
                               txn_duration_ms=100)
    # the clock is checked every 64 records: the first check at or past 100 ms is at 128 records
    assert client.txn_sizes[:-1] == [128] * 7
    assert sum(client.txn_sizes) == result.records == 1000


def test_max_seconds_stops_at_a_transaction_boundary(clock: FakeClock) -> None:
    client = FakeClient(clock)
    result = perf.run_workload(client, "t", num_records=1_000_000, record_size=1, records_per_txn=100,
                               max_seconds=0.5)
    # a transaction takes 102 ms of the fake clock: the fifth ends past 0.5 s
    assert (result.transactions, result.records) == (5, 500)
    assert client.calls[-1] == "commit"


def test_cpu_is_measured_for_the_process_and_the_sending_thread(
        clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = {"process": 50.0, "thread": 20.0}
    monkeypatch.setattr(perf.time, "process_time", lambda: cpu["process"])
    monkeypatch.setattr(perf.time, "thread_time", lambda: cpu["thread"])

    class CpuClient(FakeClient):
        def send(self, topic: str, value: bytes) -> None:
            super().send(topic, value)
            cpu["thread"] += 3e-6  # the sending thread
            cpu["process"] += 5e-6  # ... plus 2 us in the client's network thread

    result = perf.run_workload(CpuClient(clock), "t", num_records=10, record_size=1, records_per_txn=5)
    data = result.to_dict()
    assert data["cpu_us_per_record"] == pytest.approx(5.0)
    assert data["app_cpu_us_per_record"] == pytest.approx(3.0)
    assert data["cpu_us_per_transaction"] == pytest.approx(25.0)
    assert "CPU 5.0 us/record (3.0 in the sending thread)" in result.summary()


def test_exactly_one_way_to_end_a_transaction() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        perf.run_workload(FakeClient(FakeClock()), "t", 1, 1, records_per_txn=None, txn_duration_ms=None)


def test_progress_goes_to_the_given_stream(clock: FakeClock) -> None:
    stream = io.StringIO()
    perf.run_workload(FakeClient(clock), "t", num_records=20_000, record_size=1, records_per_txn=1000,
                      progress=stream)
    lines = stream.getvalue().splitlines()
    assert lines, "a run of ~20 s of fake time prints progress"
    assert all("records/s" in line and "/20000 records" in line for line in lines)


def test_json_result_has_the_documented_keys_and_no_nan() -> None:
    result = perf.PerfResult(client="c", records=0, transactions=0, record_size=100, elapsed_s=0.0,
                             commit_latencies_ms=[], peak_rss_bytes=2**20)
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["commit_latency_ms"] == {"count": 0.0, "mean": None, "p50": None, "p95": None, "p99": None,
                                         "max": None}
    assert {"records_per_s", "mb_per_s", "transactions_per_s", "peak_rss_mib", "records", "transactions",
            "elapsed_s", "init_s", "config", "cpu_us_per_record", "cpu_us_per_transaction",
            "app_cpu_us_per_record"} <= set(data)
    assert data["peak_rss_mib"] == 1.0


# --- end to end ---------------------------------------------------------------------------------------


def test_run_against_an_embedded_cluster_writes_and_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    from txnproducer.testing import MockCluster

    with MockCluster(num_brokers=1, transaction_version=2) as cluster:
        out = io.StringIO()
        args = parse("--bootstrap", cluster.bootstrap_servers, "--num-records", "300", "--records-per-txn",
                     "100", "--topic", "perf-smoke", "--json", "--no-progress")
        monkeypatch.setattr(perf, "create_topic", lambda servers, topic, partitions: cluster.create_topic(
            topic, partitions))
        assert perf.run(args, out=out) == 0
        data: dict[str, Any] = json.loads(out.getvalue())
        logs = cluster.state.topics["perf-smoke"].partitions
        # 300 records plus one commit marker per partition per transaction
        assert sum(log.high_watermark for log in logs) >= 300
    assert (data["records"], data["transactions"], data["client"]) == (300, 3, "txnproducer")
    assert data["commit_latency_ms"]["count"] == 3.0
    assert data["commit_latency_ms"]["p50"] > 0 and data["records_per_s"] > 0
    assert data["extra"]["transaction_version"] == 2
    assert data["extra"]["hot_path"] == accel.PATH  # which implementation of send() ran
    assert data["config"]["records_per_txn"] == 100 and data["config"]["mock_cluster"] is False


def test_main_starts_and_stops_a_standalone_mock_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert perf.main(["--num-records", "200", "--records-per-txn", "50", "--no-progress"]) == 0
    summary = capsys.readouterr().out
    assert "txnproducer: 200 records in 4 transactions" in summary
    assert summary.rstrip().endswith(f"; hot path: {accel.PATH}")
    assert "records/s" in summary and "p99" in summary and "peak RSS" in summary


def test_a_secured_cluster_from_a_java_properties_file(tmp_path: Any) -> None:
    """--producer.config takes the Java client's file (Java names, text values) and --producer-props win
    over it; the topic is created through the same authenticated listener."""
    from txnproducer.testing import MockCluster

    users = {"alice": "alice-pw"}
    with MockCluster(num_brokers=1, sasl_mechanisms=["SCRAM-SHA-512"], users=users) as cluster:
        config = tmp_path / "client.properties"
        config.write_text("# the Java client's settings\nsecurity.protocol=SASL_PLAINTEXT\n"
                          "sasl.mechanism = SCRAM-SHA-512\nsasl.plain.username: alice\n"
                          "sasl.plain.password=alice-pw\nlinger.ms=50\n")
        out = io.StringIO()
        args = parse("--bootstrap", cluster.bootstrap_servers, "--num-records", "20",
                     "--records-per-txn", "10", "--topic", "perf-secured", "--partitions", "2", "--json",
                     "--no-progress",
                     "--producer.config", str(config), "--producer-props", "linger.ms=0")
        assert perf.extra_settings(args)["linger_ms"] == 0
        assert perf.run(args, out=out) == 0
        assert len(cluster.state.topics["perf-secured"].partitions) == 2
        produced = cluster.wait_for_request(lambda e: e.api == "Produce")
        assert produced.principal == "User:alice"
    assert json.loads(out.getvalue())["records"] == 20


def test_producer_props_are_checked_like_any_setting(tmp_path: Any) -> None:
    from txnproducer.errors import ConfigError

    with pytest.raises(ConfigError, match=r"unknown configuration key 'linger\.msec'"):
        perf.extra_settings(parse("--producer-props", "linger.msec=5"))
    with pytest.raises(ConfigError, match="ssl_cafile"):
        perf.extra_settings(parse("--producer-props", "ssl.truststore.location=/x.jks"))
    bad = tmp_path / "bad.properties"
    bad.write_text("security.protocol=SSL\njust-a-word\n")
    with pytest.raises(ValueError, match=r"bad.properties:2: expected key=value"):
        perf.extra_settings(parse("--producer.config", str(bad)))
