"""The Java client as a reference column in ``compare.py`` (``--clients ...,java``).

Why: the issue's targets were set against the Java client's numbers on another machine. Run in
the same rounds, on the same broker and CPUs, it shows what the JVM client does here, so a ratio
against kafka-python can be read against what the reference itself reaches.

``TxnBench.java`` and ``PipelineBench.java`` (``java/`` next to this file) are compiled once per
``compare.py`` run against the Kafka client jars of a distribution (``<kafka home>/libs``, or
``--java-classpath``); nothing of Kafka's is in this repository. ``TxnBench`` runs S1-S3 with the
loop of ``txnproducer.perf.run_workload``, ``PipelineBench`` S4 (a KafkaConsumer +
``KafkaProducer.sendOffsetsToTransaction`` loop) and S5 (a read_committed read); both print the
same JSON keys as the Python clients.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["JAVA_CLIENT", "JAVA_WARMUP_S", "PIPELINE_SOURCE", "REBALANCE_SOURCE", "STREAM_SOURCE",
           "JavaUnavailable", "compile_bench", "java_classpath", "java_command", "java_versions",
           "kafka_clients_version", "pipeline_command", "rebalance_member_command", "stream_command"]

JAVA_CLIENT = "java"
JAVA_WARMUP_S = 3.0  # untimed seconds of the scenario's loop before a Java run is measured
SOURCE = Path(__file__).resolve().parent / "java" / "TxnBench.java"
#: S4/S5's Java loops; it uses TxnBench's helpers, so the two are compiled together
PIPELINE_SOURCE = Path(__file__).resolve().parent / "java" / "PipelineBench.java"
STREAM_SOURCE = Path(__file__).resolve().parent / "java" / "TxnStream.java"  # failover.py's stream
#: rebalance_pause.py's member: KIP-848 consumer + transactional producer
REBALANCE_SOURCE = Path(__file__).resolve().parent / "java" / "RebalanceMember.java"
_CLIENTS_JAR = re.compile(r"kafka-clients-(\d[\w.\-]*)\.jar$")


class JavaUnavailable(Exception):
    """The Java reference client cannot run here; the message says what is missing."""


def _jars(classpath: str) -> list[str]:
    """The jar files a JVM would load from ``classpath``: ``dir/*`` is every jar in ``dir`` (the
    only wildcard Java expands); other entries count only if the file exists."""
    jars: list[str] = []
    for entry in classpath.split(os.pathsep):
        if entry.endswith("*") and os.path.basename(entry) == "*":
            jars.extend(sorted(glob.glob(os.path.join(os.path.dirname(entry), "*.jar"))))
        elif entry.endswith(".jar") and os.path.isfile(entry):
            jars.append(entry)
    return jars


def java_classpath(explicit: str | None, kafka_home: str | None) -> str:
    """The class path with Kafka's client jars: ``explicit``, else ``<kafka_home>/libs/*``."""
    if explicit:
        classpath = explicit
    elif kafka_home:
        classpath = str(Path(kafka_home) / "libs" / "*")
    else:
        raise JavaUnavailable("the java client needs Kafka's client jars: give --kafka-home (or set "
                              "$KAFKA_HOME) to an unpacked Kafka distribution, or --java-classpath")
    if kafka_clients_version(classpath) is None:
        raise JavaUnavailable(f"no kafka-clients-*.jar on the class path {classpath!r} (a folder "
                              "of jars is given as DIR/*)")
    return classpath


def compile_bench(classpath: str, out_dir: Path, *sources: Path) -> Path:
    """Compile ``sources`` (TxnBench.java and PipelineBench.java by default) into ``out_dir``;
    returns the directory to add to the class path."""
    sources = sources or (SOURCE, PIPELINE_SOURCE)
    names = ", ".join(source.name for source in sources)
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None:
        raise JavaUnavailable("the java client needs a JDK (javac and java on PATH)")
    try:
        proc = subprocess.run([javac, "-cp", classpath, "-d", str(out_dir), *map(str, sources)],
                              capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise JavaUnavailable(f"javac could not compile {names}: {exc}") from exc
    if proc.returncode != 0:
        raise JavaUnavailable(f"javac failed on {names}: {proc.stderr.strip()[-1500:]}")
    return out_dir


def java_command(classpath: str, classes: Path, bootstrap: str, topic: str, records_per_txn: int,
                 num_records: int, max_seconds: float, record_size: int,
                 warmup_seconds: float = 0.0, batch_size: int | None = None, warmup_transactions: int = 0,
                 spread: int | None = None) -> list[str]:
    """One S1-S3 or S6 run of the Java client, after ``warmup_seconds`` of the same loop untimed and at
    least ``warmup_transactions`` transactions (``batch_size``: its ``batch.size``; None keeps the client's
    default; ``spread``: record i of a transaction to partition i % spread, None the partitioner's choice).

    The JVM runs with its defaults, as a user would start it; note that its garbage collector
    then depends on the CPUs it may use (Serial on one CPU, G1 on two or more)."""
    return ["java", "-cp", os.pathsep.join([str(classes), classpath]), "TxnBench", bootstrap, topic,
            str(records_per_txn), str(num_records), str(max_seconds), str(record_size),
            str(warmup_seconds), "-" if batch_size is None else str(batch_size), str(warmup_transactions),
            str(spread or 0)]


def pipeline_command(classpath: str, classes: Path, mode: str, bootstrap: str, input_topic: str,
                     output_topic: str, num_records: int, max_seconds: float, record_size: int,
                     partitions: int, warmup_seconds: float) -> list[str]:
    """One S4 (``mode="ctp"``) or S5 (``"read"``) run of the Java client (``PipelineBench.java``), after
    ``warmup_seconds`` of the same loop untimed; the JVM with its defaults."""
    return ["java", "-cp", os.pathsep.join([str(classes), classpath]), "PipelineBench", mode, bootstrap,
            input_topic, output_topic, str(num_records), str(max_seconds), str(record_size), str(partitions),
            str(warmup_seconds)]


def stream_command(classpath: str, classes: Path, bootstrap: str, topic: str, transactional_id: str,
                   records_per_txn: int, interval_ms: float) -> list[str]:
    """The Java client's failover stream (``TxnStream.java``), with the JVM's defaults."""
    return ["java", "-cp", os.pathsep.join([str(classes), classpath]), "TxnStream", bootstrap, topic,
            transactional_id, str(records_per_txn), str(int(interval_ms))]


def rebalance_member_command(classpath: str, classes: Path, bootstrap: str, group: str, name: str,
                             input_topic: str, output_topic: str, slow: bool, max_txn_ms: int) -> list[str]:
    """One member of ``rebalance_pause.py``'s group (``RebalanceMember.java``), with the JVM's defaults."""
    return ["java", "-cp", os.pathsep.join([str(classes), classpath]), "RebalanceMember", bootstrap, group,
            name, input_topic, output_topic, "1" if slow else "0", str(max_txn_ms)]


def kafka_clients_version(classpath: str) -> str | None:
    """The version in the name of the first kafka-clients jar on ``classpath``."""
    for jar in _jars(classpath):
        match = _CLIENTS_JAR.search(os.path.basename(jar))
        if match:
            return match.group(1)
    return None


def java_versions(classpath: str) -> dict[str, Any]:
    """The JVM's and kafka-clients' versions, for the report."""
    out: dict[str, Any] = {"kafka-clients (java)": kafka_clients_version(classpath)}
    try:
        proc = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60, check=False)
        first = (proc.stderr or proc.stdout).strip().splitlines()
        out["java"] = first[0] if first else "unknown"
    except (OSError, subprocess.SubprocessError) as exc:
        out["java"] = f"unavailable ({exc})"
    return out
