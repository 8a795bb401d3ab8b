"""``txnproducer spark status --checkpoint-dir`` (txnproducer/admin/spark_source_view.py): a streaming
query's Kafka input from its checkpoint's offset and commit logs, against MockCluster's last stable
offsets. The checkpoints here are written in Spark's own format (``v1``, the batch metadata line,
one line per source), as Spark writes them for its Kafka source and for ``txnkafka`` alike; the
Spark tier checks the view on a checkpoint a real query wrote (tests/spark/test_spark_source.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._support.source_input import LAYOUT, write_layout
from txnproducer.admin.cli import EXIT_ERROR, spark_main
from txnproducer.testing import MockCluster


def checkpoint(root: Path, batches: dict[int, list[Any]], committed: list[int]) -> Path:
    """A checkpoint with ``offsets/<n>`` for each batch (one line per source) and ``commits/<n>``."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, sources in batches.items():
        lines = ["v1", json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}})]
        lines += [json.dumps(s) for s in sources]
        (root / "offsets" / str(batch)).write_text("\n".join(lines))
    for batch in committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


def status(cluster: MockCluster, directory: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = spark_main(
        [
            "status",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--checkpoint-dir",
            str(directory),
            "--json",
            "--timeout-ms",
            "10000",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result: dict[str, Any] = json.loads(captured.out)
    return result


def test_lag_and_a_planned_micro_batch_against_the_last_stable_offsets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MockCluster(num_brokers=1) as cluster:
        cluster.create_topic("in", 2)
        write_layout(cluster.bootstrap_servers, "in")  # partition 0 ends at 13; partition 1 is empty
        files_source = {"logOffset": 3}  # another source of the same query: not Kafka, left out
        ckpt = checkpoint(
            tmp_path / "ckpt",
            {
                0: [{"in": {"0": 4, "1": 0}}, files_source],
                1: [{"in": {"0": 9, "1": 0}}, files_source],
            },
            committed=[0],
        )
        found = status(cluster, ckpt, capsys)
        source = found["source"]
        assert (source["committed_batch"], source["planned_batch"]) == (0, 1)
        rows = {(p["partition"]["topic"], p["partition"]["partition"]): p for p in source["partitions"]}
        assert rows[("in", 0)]["committed"] == 4 and rows[("in", 0)]["planned"] == 9
        assert rows[("in", 0)]["last_stable"] == LAYOUT["end"] and rows[("in", 1)]["last_stable"] == 0
        assert "9 offset(s) behind" in source["verdict"] and "micro-batch 1 is planned" in source["verdict"]
        assert found["sink"] is None, "the query's checkpoint names no txnkafka sink state"
        (ckpt / "commits" / "1").write_text('v1\n{"nextBatchWatermarkMs":0}')
        (ckpt / "offsets" / "2").write_text("\n".join(["v1", "{}", json.dumps({"in": {"0": 13, "1": 0}})]))
        (ckpt / "commits" / "2").write_text('v1\n{"nextBatchWatermarkMs":0}')
        assert status(cluster, ckpt, capsys)["source"]["verdict"].startswith("caught up: micro-batch 2")
        code = spark_main(
            ["status", "--bootstrap-server", cluster.bootstrap_servers, "--checkpoint-dir", str(ckpt)]
        )
        text = capsys.readouterr().out
        assert code == 0 and "LastStableOffset" in text and "input: caught up" in text


def test_a_deleted_input_topic_and_a_directory_that_is_no_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MockCluster(num_brokers=1) as cluster:
        ckpt = checkpoint(tmp_path / "ckpt", {0: [{"gone": {"0": 5}}]}, committed=[0])
        assert "partition(s) gone-0 no longer exist" in status(cluster, ckpt, capsys)["source"]["verdict"]
        empty = tmp_path / "empty"
        empty.mkdir()
        assert (
            spark_main(
                ["status", "--bootstrap-server", cluster.bootstrap_servers, "--checkpoint-dir", str(empty)]
            )
            == EXIT_ERROR
        )
        assert "holds no offsets/ log" in capsys.readouterr().err
        assert spark_main(["status", "--bootstrap-server", cluster.bootstrap_servers]) == EXIT_ERROR
        assert "give --prefix or --checkpoint-location" in capsys.readouterr().err
