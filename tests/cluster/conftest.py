"""The cluster tier: the txnkafka sink on a Spark standalone cluster (marker ``spark_cluster``).

A cluster of a master, two workers and their executors takes about 2 minutes and 3 GiB per scenario,
so ``make test`` (CI) runs it in a pytest run of its own, the MockCluster scenario only; run every
scenario with ``.venv/bin/pytest -m spark_cluster`` (add ``KAFKA_HOME=...`` for the real-broker
variant in tests/broker). Needs Java 17 and the ``[spark]`` extra; the Spark
Connect scenario also needs ``pip install 'txnproducer[spark-connect]'``.
"""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
if shutil.which("java") is None:
    pytest.skip("no java on PATH (Spark needs a JVM)", allow_module_level=True)
