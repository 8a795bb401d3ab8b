"""Fault injection for the sink's tests: kill the whole Spark application at a named point.

Why this exists: the exactly-once claims are about a driver that dies at the worst moments
(before the commit log entry is written, after it and before every commit completed). The
faithful simulation is to SIGKILL every process of the application - driver JVM, Python driver,
Python workers - exactly there. The sink calls :func:`crash_point` at those moments; it does
nothing unless ``TXNKAFKA_SPARK_CRASH_AT=<point>:<batch id>`` is set *and*
``TXNKAFKA_SPARK_CRASH_SESSION`` names the current session id (the test runs the application as
a session leader, so nothing outside it can be hit).
"""

from __future__ import annotations

import contextlib
import os
import signal

__all__ = ["crash_point"]


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


def crash_point(point: str, batch_id: int) -> None:
    """SIGKILL the application if the environment asks for a crash at ``point`` of ``batch_id``."""
    wanted = os.environ.get("TXNKAFKA_SPARK_CRASH_AT")
    session = os.environ.get("TXNKAFKA_SPARK_CRASH_SESSION")
    if not wanted or not session or wanted != f"{point}:{batch_id}":
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
