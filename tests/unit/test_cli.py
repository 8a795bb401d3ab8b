"""The ``txnproducer`` command line: what each sub-command does and returns."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from txnproducer import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("command", "module"),
    [("mock-cluster", "txnproducer.testing.standalone"), ("perf", "txnproducer.perf")],
)
def test_delegating_commands_forward_every_argument(
    monkeypatch: pytest.MonkeyPatch, command: str, module: str
) -> None:
    received: list[list[str]] = []
    fake = types.ModuleType(module)

    def fake_main(argv: list[str]) -> int:
        received.append(argv)
        return 3

    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module, fake)
    argv = ["--brokers", "3", "--port", "9092", "--transaction-version", "2", "--help"]
    assert cli.main([command, *argv]) == 3  # the delegate's exit code is the command's
    assert received == [argv]


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["frobnicate"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_demo_rejects_unknown_transaction_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["demo", "--transaction-version", "3"])
    assert "--transaction-version" in capsys.readouterr().err


def test_python_dash_m_runs_the_cli() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "txnproducer", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    for command in ("demo", "mock-cluster", "perf"):
        assert command in proc.stdout


def test_demo_result_judges_visibility() -> None:
    expected = [f"committed-{i}" for i in range(13)]
    assert cli.DemoResult("t", list(reversed(expected))).ok
    assert not cli.DemoResult("t", [*expected, "aborted-0"]).ok
    assert not cli.DemoResult("t", expected[:-1]).ok


@pytest.mark.parametrize("transaction_version", [1, 2])
def test_demo_against_embedded_mock_cluster_shows_only_committed_records(
    monkeypatch: pytest.MonkeyPatch, transaction_version: int
) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    out = io.StringIO()
    result = cli.run_demo(transaction_version=transaction_version, out=out)
    assert sorted(result.values) == sorted(f"committed-{i}" for i in range(13))
    text = out.getvalue()
    assert f"transaction.version={transaction_version}" in text
    assert "sees 13 records" in text


def test_example_script_runs_against_the_mock_cluster() -> None:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "a read_committed consumer sees 13 records" in proc.stdout
