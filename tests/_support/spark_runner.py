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
import tempfile
from pathlib import Path

from txnproducer.spark.sink._faults import _session_members

__all__ = ["TEST_JVM_OPTIONS", "SparkApp", "run_spark_app", "spark_env"]

ROOT = Path(__file__).resolve().parents[2]

#: Options for every JVM a test starts (drivers, a standalone cluster's daemons and executors): a
#: test's JVM lives a minute, so the optimising JIT compiler and the parallel collector's threads
#: cost CPU that never pays back; the client compiler alone and the serial collector cut a Spark
#: scenario's time by about a fifth on two CPUs (64 -> 55 and 65 -> 40 s, alternated, 2026-11-27).
#: Nor is the bytecode of Spark's jars verified as each of its thousands of classes loads (the
#: JVM's own classes never are): that cut the CPU of a sink restart scenario - two driver JVMs
#: and their Python workers - by 15 % (50.3, 47.4 -> 42.7, 39.6 CPU-s, alternated, 2026-12-07). The
#: jars are pyspark's wheel's, not code under test. (The option is a diagnostic one; should a later
#: JDK drop it, IgnoreUnrecognizedVMOptions lets the JVM start and verify.)
TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:+UnlockDiagnosticVMOptions"
                    " -XX:-BytecodeVerificationRemote -XX:+IgnoreUnrecognizedVMOptions")


def spark_env(crash_at: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a Spark process of the tests: this interpreter as Spark's Python."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               JAVA_TOOL_OPTIONS=TEST_JVM_OPTIONS, **extra)
    env.pop("TXNKAFKA_SPARK_CRASH_AT", None)
    if crash_at:
        env["TXNKAFKA_SPARK_CRASH_AT"] = crash_at
    return env


def kill_session(pid: int) -> None:
    """SIGKILL every process of the session ``pid`` leads (the JVM, Python workers)."""
    for member in _session_members(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


class SparkApp:
    """``app --bootstrap <bootstrap> <args>`` running in its own session; stderr goes to ``log``
    (a streaming application writes more than a pipe holds while nobody reads it), a temporary
    file unless given."""

    def __init__(self, app: Path, bootstrap: str, *args: str, crash_at: str | None = None,
                 env: dict[str, str] | None = None, log: Path | None = None) -> None:
        self.crash_at = crash_at
        self._err = open(log, "w+") if log else tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
        self.proc = subprocess.Popen([sys.executable, str(app), "--bootstrap", bootstrap, *args],
                                     env=env or spark_env(crash_at), cwd=str(ROOT), start_new_session=True,
                                     text=True, stdout=subprocess.DEVNULL, stderr=self._err)

    def poll(self) -> int | None:
        return self.proc.poll()

    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read()

    def wait(self, timeout_s: float) -> int:
        """Wait for the exit (killing the session on timeout); check it is the one expected."""
        try:
            self.proc.wait(timeout=timeout_s)
        finally:
            self.stop()
        expected = -signal.SIGKILL if self.crash_at else 0
        assert self.proc.returncode == expected, (
            f"rc {self.proc.returncode}, wanted {expected}:\n{self.stderr()[-4000:]}")
        return self.proc.returncode

    def stop(self) -> None:
        """Kill whatever of the application is left (the log stays readable)."""
        kill_session(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._err.flush()


def run_spark_app(app: Path, bootstrap: str, *args: str, crash_at: str | None = None,
                  timeout_s: float = 300.0) -> subprocess.CompletedProcess[str]:
    """Run ``app --bootstrap <bootstrap> <args>``; with ``crash_at`` expect it to be SIGKILLed there,
    else to exit 0 (the assertion shows the end of its stderr)."""
    running = SparkApp(app, bootstrap, *args, crash_at=crash_at)
    running.wait(timeout_s)
    return subprocess.CompletedProcess(running.proc.args, running.proc.returncode, "", running.stderr())
