"""benchmarks/compare.py: the CPU placement options and the Java reference client's plumbing (the rest is
exercised by `make bench`; the Java client itself runs in tests/broker/test_bench_java.py)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests._support.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _keep_signal_handlers() -> Any:
    """compare.main() installs SIGTERM/SIGINT handlers for its own process; give pytest its own back."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def _compare() -> Any:
    return load_benchmark("compare.py")


def test_cpu_lists_are_parsed_like_taskset() -> None:
    compare = _compare()
    assert compare.parse_cpus(None) is None and compare.parse_cpus("") is None
    assert compare.parse_cpus("1") == {1}
    assert compare.parse_cpus("0,2-4") == {0, 2, 3, 4}
    with pytest.raises(ValueError):
        compare.parse_cpus("one")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux-only")
def test_clients_run_on_the_given_cpus_after_a_warmup_round_and_the_report_says_so(tmp_path: Path) -> None:
    compare = _compare()
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    code = compare.main(["--mock", "--scale", "0.002", "--rounds", "1", "--warmup-rounds", "1",
                         "--scenarios", "S2", "--clients", "txnproducer", "--client-cpus", str(cpu),
                         "--broker-cpus", str(cpu), "--out-dir", str(tmp_path)])
    assert code == 0
    assert os.sched_getaffinity(0) == before  # compare.py itself is not left pinned
    report = json.loads((tmp_path / "results.json").read_text())
    warmup, run = report["runs"]
    assert warmup["warmup"] and "warmup" not in run  # the medians are the measured round's
    assert report["medians"]["S2"]["txnproducer"]["transactions_per_s"] == run["transactions_per_s"]
    assert "error" not in run and run["cpus"] == [cpu]
    assert f"clients on CPU {cpu}" in report["machine"] and f"on CPU {cpu}" in report["target"]


def test_a_broker_it_did_not_start_cannot_be_pinned(capsys: pytest.CaptureFixture[str]) -> None:
    compare = _compare()
    with pytest.raises(SystemExit):
        compare.main(["--bootstrap", "127.0.0.1:1", "--broker-cpus", "0"])
    assert "taskset" in capsys.readouterr().err


def test_the_java_client_says_what_it_needs_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    compare = _compare()
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    with pytest.raises(SystemExit):
        compare.main(["--mock", "--clients", "txnproducer,java", "--out-dir", str(tmp_path)])
    assert "--kafka-home" in capsys.readouterr().err
    (tmp_path / "libs").mkdir()
    with pytest.raises(SystemExit):  # a directory that is not a Kafka distribution
        compare.main(["--mock", "--clients", "java", "--kafka-home", str(tmp_path),
                      "--out-dir", str(tmp_path)])
    assert "no kafka-clients-*.jar" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a class path for a client that is not run
        compare.main(["--mock", "--clients", "txnproducer", "--java-classpath", "/x/*",
                      "--out-dir", str(tmp_path)])
    assert "add java to --clients" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_the_java_client_finds_kafkas_jars_and_their_version(tmp_path: Path) -> None:
    java = _java()
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka-clients-4.1.0.jar").write_bytes(b"")
    (libs / "kafka-server-4.1.0.jar").write_bytes(b"")
    classpath = java.java_classpath(None, str(tmp_path))
    assert classpath == str(libs / "*")
    assert java.kafka_clients_version(classpath) == "4.1.0"
    single = str(libs / "kafka-clients-4.1.0.jar")
    assert java.java_classpath("/x/a.jar" + os.pathsep + single, None).endswith(single)
    # what a JVM would not load: a jar that does not exist, a wildcard Java does not expand
    for bad in ("/nonexistent/kafka-clients-9.9.jar", str(libs / "kafka-clients-*.jar")):
        with pytest.raises(java.JavaUnavailable, match="no kafka-clients"):
            java.java_classpath(bad, None)
    cmd = java.java_command(classpath, tmp_path / "classes", "127.0.0.1:9092", "t", 1, 3000, 15.0, 100, 3.0)
    assert cmd[:2] == ["java", "-cp"] and cmd[2].split(os.pathsep) == [str(tmp_path / "classes"), classpath]
    assert cmd[3:] == ["TxnBench", "127.0.0.1:9092", "t", "1", "3000", "15.0", "100", "3.0", "-", "0", "0"]


def test_the_java_clients_runs_are_reported_like_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    compare = _compare()
    # who runs where is decided without starting a process: every client its scenarios
    assert compare.runs_in("java", "S4") and compare.runs_in("java", "S5") and compare.runs_in("java", "S1")
    assert compare.runs_in("txnproducer-loop", "S4") and not compare.runs_in("txnproducer-loop", "S5")
    assert compare.runs_in("txnproducer-poll", "S5") and not compare.runs_in("txnproducer-poll", "S1")
    assert not compare.runs_in("txnproducer-aio", "S4") and compare.runs_in("txnproducer-pure", "S5")
    commands: list[list[str]] = []

    def fake_jvm(cmd: list[str], **_kwargs: Any) -> Any:  # TxnBench's output: no scenario, no cpus
        commands.append(cmd)
        if "PipelineBench" in cmd:
            return compare.subprocess.CompletedProcess(cmd, 0, stdout=json.dumps({"client": "java"}) + "\n",
                                                       stderr="")
        tps = {"t1": 900.0, "t2": 700.0, "t3": 800.0}[cmd[5]]
        out = json.dumps({"client": "java", "transactions_per_s": tps, "records_per_s": tps})
        return compare.subprocess.CompletedProcess(cmd, 0, stdout="log line\n" + out + "\n", stderr="")

    monkeypatch.setattr(compare.subprocess, "run", fake_jvm)
    runs = [compare.run_client("java", "S2", "127.0.0.1:1", topic, None, 10, 1.0, 5.0,
                               java=("cp", Path("/classes"))) for topic in ("t1", "t2", "t3")]
    assert [c[-4] for c in commands] == [str(compare.JAVA_WARMUP_S)] * 3  # warmed up, untimed
    assert all(r["scenario"] == "S2" and "error" not in r for r in runs)
    if hasattr(os, "sched_getaffinity"):
        assert runs[0]["cpus"] == sorted(os.sched_getaffinity(0))
    runs.append({"client": "txnproducer", "scenario": "S2", "transactions_per_s": 1600.0})
    med = compare.medians(runs)
    assert med["S2"]["java"]["transactions_per_s"] == 800.0
    table = compare.markdown_table(med, ["txnproducer", "java"])
    assert "ours vs java" in table and "| 2.00x |" in table
    # S4 and S5: PipelineBench, the input topic read (S4 writes its own output topic), warmed up too
    commands.clear()
    jvm = ("cp", Path("/classes"))
    compare.run_client("java", "S4", "127.0.0.1:1", "out", "in", 10, 1.0, 5.0, java=jvm)
    compare.run_client("java", "S5", "127.0.0.1:1", "read-me", None, 10, 1.0, 5.0, java=jvm)
    ctp, read = (c[c.index("PipelineBench") + 1:] for c in commands)
    assert ctp[:4] == ["ctp", "127.0.0.1:1", "in", "out"] and read[:3] == ["read", "127.0.0.1:1", "read-me"]
    assert ctp[-1] == read[-1] == str(compare.JAVA_WARMUP_S)


def _java() -> Any:
    return load_benchmark("_java.py")


def test_one_batch_size_reaches_every_client_and_the_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``--batch-size``: the same batch size for every client (librdkafka's default is 60x Java's,
    which is most of its lead in CPU per record); each client gets it in its own setting's name."""
    clients = load_benchmark("_clients.py")
    seen: dict[str, Any] = {}

    class Recorder:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            seen["args"], seen["kwargs"] = args, kwargs

        def send(self, *args: Any) -> None:  # what the adapters hand the loop
            pass

        produce = send

    import kafka
    monkeypatch.setattr(kafka, "KafkaProducer", Recorder)
    clients.KafkaPythonClient("b:1", "t", batch_size=65536)
    assert seen["kwargs"]["batch_size"] == 65536
    clients.KafkaPythonClient("b:1", "t")
    assert "batch_size" not in seen["kwargs"]  # its own default
    confluent = pytest.importorskip("confluent_kafka", reason="confluent-kafka is a [bench] extra")
    monkeypatch.setattr(confluent, "Producer", Recorder)
    clients.ConfluentClient("b:1", "t", batch_size=65536)
    assert seen["args"][0]["batch.size"] == 65536
    monkeypatch.setattr(clients.OurClient, "__init__", Recorder.__init__)
    clients.make_client("txnproducer-pure", "b:1", "t", 65536)
    assert seen["kwargs"]["batch_size"] == 65536
    clients.make_client("txnproducer", "b:1", "t")
    assert "batch_size" not in seen["kwargs"]

    java = _java()
    cmd = java.java_command("cp", tmp_path, "b:1", "t", 1, 10, 15.0, 100, 3.0, 65536)
    assert cmd[-4:] == ["3.0", "65536", "0", "0"]
    assert "BATCH_SIZE_CONFIG" in (ROOT / "benchmarks" / "java" / "TxnBench.java").read_text()

    compare = _compare()
    commands: list[list[str]] = []

    def fake_run(cmd: list[str], **_kwargs: Any) -> Any:
        commands.append(cmd)
        out = json.dumps({"client": "txnproducer", "transactions_per_s": 1.0})
        return compare.subprocess.CompletedProcess(cmd, 0, stdout=out + "\n", stderr="")

    monkeypatch.setattr(compare.subprocess, "run", fake_run)
    compare.run_client("txnproducer", "S1", "b:1", "t", None, 10, 1.0, 5.0, batch_size=65536)
    assert commands[-1][-2:] == ["--batch-size", "65536"]
    compare.run_client("txnproducer", "S1", "b:1", "t", None, 10, 1.0, 5.0)
    assert "--batch-size" not in commands[-1]
    for bad in (["--scenarios", "S4"], ["--clients", "txnproducer-aio"], ["--batch-size", "0"]):
        argv = ["--mock", "--batch-size", "65536", "--out-dir", str(tmp_path), *bad]
        with pytest.raises(SystemExit):
            compare.main(argv)
        assert "--batch-size" in capsys.readouterr().err


def test_s6_spreads_each_transaction_over_six_partitions_for_every_client() -> None:
    """S6: record i of a transaction goes to partition i % 6, through each library's own partition
    argument; the warm-up runs on the same producer before the measured transactions."""
    clients = load_benchmark("_clients.py")
    assert clients.SCENARIOS["S6"]["spread"] == 6 and clients.SCENARIOS["S6"]["records_per_txn"] == 10
    sent: list[tuple[str, Any]] = []
    calls: list[str] = []

    class Library:
        name = "fake"
        queue_full: tuple[type[BaseException], ...] = ()

        def send(self, topic: str, value: bytes, partition: int | None = None) -> None:
            sent.append((topic, partition))

        def on_queue_full(self) -> None:
            pass

        def init(self) -> None:
            calls.append("init")

        def prepare(self, topic: str) -> None:
            calls.append("prepare")

        def begin(self) -> None:
            calls.append("begin")

        def commit(self) -> None:
            calls.append("commit")

        def close(self) -> None:
            pass

    result = clients.run_warmed(Library(), "t", 20, 10, 15.0, warmup_transactions=3, spread=6)
    assert [p for _t, p in sent] == [i % 6 for i in range(10)] * 5  # 3 warm-up + 2 measured transactions
    assert calls.count("init") == 1 and calls.count("prepare") == 1 and calls.count("commit") == 5
    assert result.transactions == 2 and result.records == 20  # the warm-up is not in the result
    sent.clear()
    clients.run_warmed(Library(), "t", 10, 10, 15.0, warmup_transactions=0, spread=None)
    assert [p for _t, p in sent] == [None] * 10  # S2/S3: the client's partitioner decides


def test_warmup_transactions_and_another_tree_reach_the_run(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    """--warmup-transactions reaches every run (capped in records: S1's 1,000-record transactions), the
    Java client too; a txnproducer%TREE column runs this harness with that tree's txnproducer first on
    PYTHONPATH; --s4-records-per-txn reaches S4 runs and keeps the Java loop (fixed at 1,000) out."""
    compare = _compare()
    commands: list[tuple[list[str], dict[str, str]]] = []

    def fake_run(cmd: list[str], **kwargs: Any) -> Any:
        commands.append((cmd, kwargs["env"]))
        out = json.dumps({"client": "x", "transactions_per_s": 1.0})
        return compare.subprocess.CompletedProcess(cmd, 0, stdout=out + "\n", stderr="")

    monkeypatch.setattr(compare.subprocess, "run", fake_run)
    trees = {"main": tmp_path}
    compare.run_client("txnproducer%main", "S6", "b:1", "t", None, 10, 1.0, 5.0, warmup_transactions=6000,
                       trees=trees)
    cmd, env = commands[-1]
    assert cmd[cmd.index("--warmup-transactions") + 1] == "6000"
    assert cmd[cmd.index("--client") + 1] == "txnproducer"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)
    compare.run_client("txnproducer", "S1", "b:1", "t", None, 10, 1.0, 5.0, warmup_transactions=6000)
    cmd, env = commands[-1]
    assert cmd[cmd.index("--warmup-transactions") + 1] == str(compare.WARMUP_RECORDS_MAX // 1000)
    assert str(tmp_path) not in env.get("PYTHONPATH", "")
    compare.run_client("txnproducer", "S4", "b:1", "t", "in", 10, 1.0, 5.0, warmup_transactions=6000,
                       s4_records_per_txn=10)
    cmd, _env = commands[-1]
    assert cmd[cmd.index("--s4-records-per-txn") + 1] == "10" and "--warmup-transactions" not in cmd
    java = ("cp", tmp_path)
    compare.run_client("java", "S6", "b:1", "t", None, 10, 1.0, 5.0, java=java, warmup_transactions=6000)
    cmd, _env = commands[-1]
    assert cmd[-2:] == ["6000", "6"]  # TxnBench's WARMUP_TRANSACTIONS and SPREAD
    assert not compare.runs_in("java", "S4", 10) and compare.runs_in("java", "S4", None)
    assert compare.runs_in("txnproducer%main", "S6")
    with pytest.raises(SystemExit):
        compare.main(["--mock", "--clients", "txnproducer%nowhere", "--out-dir", str(tmp_path)])
