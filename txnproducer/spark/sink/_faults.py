"""Fault injection for the sink's tests: kill the driver, fail a task or kill an executor at a named point.

Why this exists: the exactly-once claims are about a driver that dies at the worst moments
(before the decision is written, after it and before every commit completed) and about task
attempts that die with their transaction open. The faithful simulation is SIGKILL exactly there:

* :func:`crash_point` (driver): SIGKILL every process of the application - driver JVM, Python
  driver, Python workers. Does nothing unless ``TXNKAFKA_SPARK_CRASH_AT=<point>:<batch id>`` is
  set *and* ``TXNKAFKA_SPARK_CRASH_SESSION`` names the current session id (the test runs the
  application as a session leader, so nothing outside it can be hit). ``<point>:<batch
  id>@<prefix>`` strikes only the query whose transactional id prefix that is (an application may
  run two streaming queries into the sink, each counting its own batches).
* :func:`task_fault` (executor): ``TXNKAFKA_SPARK_TASK_FAULT=fail@<batch>:<partition>,kill@...``
  (an executor environment variable, ``spark.executorEnv.*``) makes the first attempt of that
  task, once its first rows are acknowledged in its open transaction, raise (``fail``) or SIGKILL
  its executor's JVM (``kill``). Pipelines between a Spark source and the writer buffer whole
  partitions, so a fault raised by a source or a UDF strikes before the writer has sent anything;
  this one strikes mid-transaction by construction.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

__all__ = ["crash_point", "task_fault"]


def _session_members(sid: int) -> list[int]:
    pids: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            pids.append(int(name))
    return pids


def crash_point(point: str, batch_id: int, prefix: str = "") -> None:
    """SIGKILL the application if the environment asks for a crash at ``point`` of ``batch_id``
    (of the query with transactional id ``prefix``, when the request names one)."""
    wanted = os.environ.get("TXNKAFKA_SPARK_CRASH_AT")
    session = os.environ.get("TXNKAFKA_SPARK_CRASH_SESSION")
    if not wanted or not session or wanted not in (f"{point}:{batch_id}", f"{point}:{batch_id}@{prefix}"):
        return
    sid = int(session)
    if os.getsid(0) != sid or sid <= 1:
        return
    me = os.getpid()
    for pid in _session_members(sid):
        if pid != me:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    os.kill(me, signal.SIGKILL)


def _executor_jvm() -> int | None:
    """The pid of the executor JVM this Python worker runs under (an ancestor), if any."""
    pid = os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"CoarseGrainedExecutorBackend" in f.read():
                    return pid
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return None
    return None


def task_fault(batch: int, partition: int, attempt: int) -> Callable[[Any], None] | None:
    """The fault the environment asks for at this task attempt (called with the producer once
    the first rows are sent), or None."""
    spec = os.environ.get("TXNKAFKA_SPARK_TASK_FAULT")
    if not spec or attempt != 0:
        return None
    for item in spec.split(","):
        kind, _, where = item.strip().partition("@")
        if where == f"{batch}:{partition}" and kind in ("fail", "kill"):
            return lambda producer: _strike(kind, producer, batch, partition)
    return None


def _strike(kind: str, producer: Any, batch: int, partition: int) -> None:
    producer.flush()  # the rows so far are in Kafka, in the open transaction
    jvm = _executor_jvm() if kind == "kill" else None
    if jvm is not None:
        os.kill(jvm, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)  # what the JVM's death does to its workers anyway
    raise RuntimeError(f"injected {kind} of batch {batch} partition {partition}, first attempt, mid-write")
