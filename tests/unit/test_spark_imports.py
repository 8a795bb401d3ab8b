"""``txnproducer.spark``'s state readers, and the admin tools' Spark view on them, import without PySpark:
``txnproducer spark status`` runs on a machine that only watches the pipeline (``spark/__init__.py``)."""

from __future__ import annotations

import subprocess
import sys

# a fresh interpreter in which importing pyspark fails, as where it is not installed
_NO_PYSPARK = """
import sys
class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError("no pyspark here")
sys.meta_path.insert(0, _Refuse())
"""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _NO_PYSPARK + code], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_spark_view_and_the_state_readers_need_no_pyspark() -> None:
    done = run(
        "import txnproducer.admin.spark_view, txnproducer.spark.sink.state_topic\n"
        "import txnproducer.spark.sink.options\n"
        "from txnproducer.spark import pool_bound, SinkCommitError\n"
        "from txnproducer.admin.cli import spark_main\n"
        "print('ok')"
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_the_data_source_says_which_extra_it_needs() -> None:
    done = run("from txnproducer.spark import TxnKafkaDataSource")
    assert done.returncode == 1
    assert "txnproducer.spark needs PySpark 4.x: pip install 'txnproducer[spark]'" in done.stderr
