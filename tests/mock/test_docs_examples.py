"""Every Python example of README.md and docs/ runs, page by page, against a fresh MockCluster.

How the examples are found and run, and how one opts out, is in ``tests/_support/doc_examples.py``.
Each page runs in a process of its own (``python -m tests._support.doc_examples PAGE``) so that what
an example sets up - environment, working directory, threads, an event loop, a SparkSession and its
JVM - cannot reach another page or test; the process's session is killed afterwards, so nothing it
started outlives the test. A failure shows the page's traceback, which points at the Markdown line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests._support.doc_examples import ROOT, blocks, pages
from tests._support.spark_runner import kill_session, spark_env
from txnproducer.testing import MockCluster

#: a page's bound; one with PySpark starts a JVM and runs Spark jobs
BOUND_S, SPARK_BOUND_S = 120, 300


def _runnable(page: Path) -> bool:
    return any(block.skip_reason is None for block in blocks(page))


def _uses_spark(page: Path) -> bool:
    return any("pyspark" in block.code for block in blocks(page) if block.skip_reason is None)


def _params() -> list[object]:
    params: list[object] = []
    for page in pages():
        if not _runnable(page):
            continue
        spark = _uses_spark(page)
        bound = SPARK_BOUND_S if spark else BOUND_S
        marks = [pytest.mark.timeout(bound + 30)] + ([pytest.mark.slow] if spark else [])
        params.append(pytest.param(page, bound, id=str(page.relative_to(ROOT)), marks=marks))
    return params


@pytest.mark.parametrize(("page", "bound_s"), _params())
def test_examples_run(page: Path, bound_s: int, tmp_path: Path) -> None:
    with MockCluster() as cluster:
        env = spark_env(
            KAFKA_BOOTSTRAP_SERVERS=cluster.bootstrap_servers,
            PYSPARK_SUBMIT_ARGS="--master local[2] --conf spark.ui.enabled=false pyspark-shell",
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests._support.doc_examples", str(page)], cwd=tmp_path, env=env,
            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            output, _ = proc.communicate(timeout=bound_s)
        except subprocess.TimeoutExpired:
            kill_session(proc.pid)
            output, _ = proc.communicate()
            pytest.fail(f"{page.name}'s examples did not finish within {bound_s} s:\n{output[-6000:]}")
        finally:
            kill_session(proc.pid)  # a JVM or worker an example started
    assert proc.returncode == 0, f"{page.name}'s examples failed:\n{output[-8000:]}"
    assert "example(s) passed" in output
