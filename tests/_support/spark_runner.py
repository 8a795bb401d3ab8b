"""Run a PySpark application in its own process session, and kill whatever of it is left.

Why a process of its own: the sink's fault hook (``TXNKAFKA_SPARK_CRASH_AT``) SIGKILLs the driver
at a chosen step, as a machine failure would; the test survives it and restarts the application
from its checkpoint. A session leader lets the runner find and kill the JVM and Python workers the
application started, so nothing outlives the test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from txnproducer.spark._faults import _session_members

__all__ = ["run_spark_app"]

ROOT = Path(__file__).resolve().parents[2]


def run_spark_app(app: Path, bootstrap: str, *args: str, crash_at: str | None = None,
                  timeout_s: float = 300.0) -> subprocess.CompletedProcess[str]:
    """Run ``app --bootstrap <bootstrap> <args>``; with ``crash_at`` expect it to be SIGKILLed there,
    else to exit 0 (the assertion shows the end of its stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("TXNKAFKA_SPARK_CRASH_AT", None)
    if crash_at:
        env["TXNKAFKA_SPARK_CRASH_AT"] = crash_at
    proc = subprocess.Popen([sys.executable, str(app), "--bootstrap", bootstrap, *args],
                            env=env, cwd=str(ROOT), start_new_session=True, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    finally:
        for pid in _session_members(proc.pid):  # whatever of that application is left
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    expected = -signal.SIGKILL if crash_at else 0
    assert result.returncode == expected, f"rc {result.returncode}, wanted {expected}:\n{err[-4000:]}"
    return result
