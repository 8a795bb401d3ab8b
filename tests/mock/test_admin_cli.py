"""``txnproducer transactions ...`` and ``txnproducer spark ...`` on a MockCluster: help for every
command, tables and JSON, exit codes, one-line errors naming the cause, and ``abort`` refusing without
``--confirm``."""

from __future__ import annotations

import json
import socket
import time
import uuid
from pathlib import Path

import pytest

from txnproducer.admin.cli import EXIT_ERROR, EXIT_NOT_CONFIRMED, UNREACHABLE_AFTER_MS
from txnproducer.cli import main
from txnproducer.testing import MockCluster

COMMANDS = [
    ["transactions"],
    ["transactions", "list"],
    ["transactions", "describe"],
    ["transactions", "describe-producers"],
    ["transactions", "find-hanging"],
    ["transactions", "abort"],
    ["spark"],
    ["spark", "status"],
]


@pytest.fixture
def topic() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}"


def run(cluster: MockCluster, *argv: str, timeout_ms: int = 5000) -> int:
    command, rest = argv[0], list(argv[1:])
    return main(
        [command, *rest, "--bootstrap-server", cluster.bootstrap_servers, "--timeout-ms", str(timeout_ms)]
    )


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: txnproducer ") and "--bootstrap-server" in out


def test_hanging_transaction_end_to_end(
    mock_cluster: MockCluster, topic: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mock_cluster.create_topic(topic, 2)
    held = mock_cluster.plant_hanging_transaction(topic, 1, records=2)
    assert run(mock_cluster, "transactions", "find-hanging", "--topic", topic, "--json") == 0
    (found,) = json.loads(capsys.readouterr().out)
    assert (found["partition"], found["producer_id"], found["start_offset"]) == (
        {"topic": topic, "partition": 1},
        held.producer_id,
        0,
    )

    assert run(mock_cluster, "transactions", "describe-producers", "--topic", topic, "--partition", "1") == 0
    table = capsys.readouterr().out
    assert (
        "CurrentTransactionStartOffset" in table
        and f"held by the open transaction of producer {held.producer_id}" in table
    )

    argv = ["transactions", "abort", "--topic", topic, "--partition", "1", "--start-offset", "0"]
    assert run(mock_cluster, *argv) == EXIT_NOT_CONFIRMED
    printed = capsys.readouterr()
    assert printed.out.startswith(f"plan: write an ABORT marker on {topic}-1")
    assert "add --confirm" in one_error_line(printed.err)
    log = mock_cluster.state.partition_log(topic, 1)
    assert log is not None and log.last_stable_offset == 0  # refused: nothing written

    assert run(mock_cluster, *argv, "--confirm") == 0
    out = capsys.readouterr().out
    assert f"done: wrote the ABORT marker of producer {held.producer_id} on {topic}-1" in out
    assert log.last_stable_offset == log.high_watermark == 3


def test_list_and_describe_tables_use_the_java_tool_columns(
    mock_cluster: MockCluster, topic: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from txnproducer import TransactionalProducer

    with TransactionalProducer(
        bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id=f"{topic}-1"
    ) as p:
        p.init_transactions()
        with p.transaction():
            p.send(topic, b"x").get(5)
    assert run(mock_cluster, "transactions", "list", "--prefix", topic) == 0
    header, row = capsys.readouterr().out.strip().splitlines()
    assert header.split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert row.split()[0] == f"{topic}-1" and row.split()[-1] == "CompleteCommit"
    assert run(mock_cluster, "transactions", "describe", "--transactional-id", f"{topic}-1") == 0
    header, row = capsys.readouterr().out.strip().splitlines()
    assert header.split()[:5] == [
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
    ]


@pytest.mark.parametrize(
    ("argv", "cause"),
    [
        (["transactions", "describe", "--transactional-id", "nope"], "transactional id 'nope' is unknown"),
        (
            ["transactions", "describe-producers", "--topic", "nope", "--partition", "0"],
            "topic 'nope' does not exist",
        ),
        (
            ["transactions", "abort", "--transactional-id", "nope", "--confirm"],
            "transactional id 'nope' is unknown",
        ),
        (["transactions", "list", "--state", "Running"], "unknown transaction state(s) Running"),
        (["transactions", "find-hanging"], "find-hanging needs --topic or --broker-id"),
        (
            ["transactions", "find-hanging", "--partition", "1", "--broker-id", "1"],
            "--partition needs --topic",
        ),
        (["transactions", "abort", "--topic", "t"], "name the transaction to abort"),
        (
            ["spark", "status", "--prefix", "q", "--state-topic", "none-such"],
            "state topic 'none-such' does not exist",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_cause(
    mock_cluster: MockCluster, argv: list[str], cause: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mock_cluster.create_topic("t", 1)
    assert run(mock_cluster, *argv) == EXIT_ERROR
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"txnproducer {argv[0]}: error: ") and cause in line


def test_a_leaderless_partition_and_an_old_broker_are_named(
    mock_cluster: MockCluster, topic: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mock_cluster.create_topic(topic, 2)
    mock_cluster.set_partition_offline(topic, 0)
    # the bound covers connecting and the first metadata answer too: 1 s was not always enough under load
    assert run(mock_cluster, "transactions", "find-hanging", "--topic", topic, timeout_ms=3000) == EXIT_ERROR
    assert "had no leader for 3000 ms (LEADER_NOT_AVAILABLE)" in one_error_line(capsys.readouterr().err)
    mock_cluster.set_broker_api_versions(1, {"ListTransactions": (0, 1)})
    assert run(mock_cluster, "transactions", "list", "--transactional-id-pattern", "x.*") == EXIT_ERROR
    assert "needs ListTransactions v2 (Kafka 4.1+, KIP-1152); broker 1 speaks up to v1" in one_error_line(
        capsys.readouterr().err
    )


def test_connection_settings_come_from_the_command_config(
    mock_cluster: MockCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "admin.properties"
    config.write_text(f"bootstrap.servers={mock_cluster.bootstrap_servers}\nsecurity.protocol=PLAINTEXT\n")
    assert main(["transactions", "--command-config", str(config), "list"]) == 0
    config.write_text(f"bootstrap.servers={mock_cluster.bootstrap_servers}\nlinger.ms=5\n")
    assert main(["transactions", "--command-config", str(config), "list"]) == EXIT_ERROR
    assert "linger.ms: not a connection setting" in one_error_line(capsys.readouterr().err)
    assert main(["transactions", "list"]) == EXIT_ERROR
    assert "--bootstrap-server is required" in one_error_line(capsys.readouterr().err)


def test_an_unreachable_cluster_is_a_timeout_naming_the_bound(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port nobody listens on, held so that no other test's broker takes it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert (
            main(["transactions", "list", "--bootstrap-server", f"127.0.0.1:{port}", "--timeout-ms", "800"])
            == EXIT_ERROR
        )
    line = one_error_line(capsys.readouterr().err)
    assert "not done within 800 ms (default.api.timeout.ms)" in line and f"127.0.0.1:{port}" in line


def test_an_address_nothing_listens_at_is_reported_in_seconds_not_after_the_timeout(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Connection refused on every attempt: the command says so after UNREACHABLE_AFTER_MS (5 s), not
    after the default 60 s of default.api.timeout.ms."""
    with socket.socket() as s:  # bound, not listening: connections to it are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        started = time.monotonic()
        assert main(["transactions", "list", "--bootstrap-server", f"127.0.0.1:{port}"]) == EXIT_ERROR
        took = time.monotonic() - started
    line = one_error_line(capsys.readouterr().err)
    assert f"no bootstrap server of ['127.0.0.1:{port}'] took a connection" in line, line
    assert "ECONNREFUSED" in line and "Is Kafka running there" in line
    assert UNREACHABLE_AFTER_MS / 1000 <= took < 30  # the bound is 60 s; 30 leaves a loaded machine room


def test_a_missing_acl_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockCluster(
        num_brokers=1, sasl_mechanisms=["PLAIN"], users={"alice": "alice-pw"}, acls=[]
    ) as cluster:
        cluster.create_topic("orders", 1)
        held = cluster.plant_hanging_transaction("orders", 0)
        config = tmp_path / "alice.properties"
        config.write_text(
            f"bootstrap.servers={cluster.bootstrap_servers}\nsecurity.protocol=SASL_PLAINTEXT\n"
            "sasl.mechanism=PLAIN\nsasl.plain.username=alice\nsasl.plain.password=alice-pw\n"
        )
        base = ["--command-config", str(config), "--timeout-ms", "5000"]
        assert main(["transactions", "describe", *base, "--transactional-id", "app-1"]) == EXIT_ERROR
        line = one_error_line(capsys.readouterr().err)
        assert "(TRANSACTIONAL_ID_AUTHORIZATION_FAILED): grant Describe on TransactionalId 'app-1'" in line
        cluster.add_acl("User:alice", "topic", "orders", "Read")
        cluster.add_acl("User:alice", "transactional_id", "*", "Describe")
        abort = [
            "transactions",
            "abort",
            *base,
            "--topic",
            "orders",
            "--partition",
            "0",
            "--start-offset",
            "0",
        ]
        assert main([*abort, "--confirm"]) == EXIT_ERROR
        captured = capsys.readouterr()
        assert captured.out.startswith("plan: write an ABORT marker on orders-0")
        assert one_error_line(captured.err).endswith(
            "(CLUSTER_AUTHORIZATION_FAILED): grant Alter or ClusterAction on the Cluster (usually only"
            " brokers and super users have it)"
        )
        assert "alice-pw" not in captured.out + captured.err
        log = cluster.state.partition_log("orders", 0)
        assert log is not None and log.last_stable_offset == held.start_offset  # nothing written
