"""One local SparkSession for a test module, in the test's own process, with the txnkafka source and
sink registered: what the source's Spark tiers share (tests/spark, tests/broker).

Why in-process and per module: the source's tests read and stream without killing a driver, so
one JVM per module - started once, a second or two per query after it - keeps them from adding
minutes to the suite; the sink's driver-killing scenarios run their applications in subprocesses
instead (spark_runner.py). Its Python workers run this interpreter, its JVM the tests' JVM options.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests._support.spark_runner import TEST_JVM_OPTIONS

__all__ = ["local_session"]

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def local_session(name: str) -> Iterator[Any]:
    """A ``local[2]`` session named ``name`` (stopped, and the environment put back, at the end)."""
    from pyspark.sql import SparkSession

    from txnproducer.spark import register

    saved = dict(os.environ)
    os.environ.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                      SPARK_LOCAL_IP="127.0.0.1", JAVA_TOOL_OPTIONS=TEST_JVM_OPTIONS,
                      PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    session = (SparkSession.builder.master("local[2]").appName(name)
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()
        os.environ.clear()
        os.environ.update(saved)
