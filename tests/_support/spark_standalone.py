"""A Spark standalone cluster for tests: a master and workers from pyspark's own ``spark-class``.

Why: on ``local[*]`` the executors are threads of the driver's JVM and share its disk, which hides
exactly what breaks on a real cluster (the sink's old commit log on the driver's disk). Here each
worker is its own process tree with its own ``SPARK_WORKER_DIR`` (where executors run and keep
their files), ``SPARK_LOCAL_DIRS`` and ``TMPDIR``, none of them a path the driver uses; executors
are separate JVMs the test can kill. What they share with the driver is what a real cluster's
nodes share: the installed software (this virtualenv) and the network (Kafka, the driver).

Every daemon is started as its own session leader and stopped by killing that session, so a
worker's executors go with it. Sizes are small (1 core, ``--memory`` 1g per worker, 256 MiB daemon
heaps) because the machines that run this tier are small.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from tests._support.spark_runner import TEST_JVM_OPTIONS, kill_session

__all__ = ["StandaloneCluster", "spark_home"]

START_TIMEOUT_S = float(os.environ.get("SPARK_CLUSTER_START_TIMEOUT_S", "180"))


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StandaloneCluster:
    """``workers`` workers of one core each under ``workdir`` (module docstring)."""

    def __init__(self, workdir: Path, workers: int = 2, memory: str = "1g") -> None:
        self.workdir = workdir
        self.workers = workers
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m",
                   SPARK_NO_DAEMONIZE="1", JAVA_TOOL_OPTIONS=TEST_JVM_OPTIONS, **extra)
        return env

    def _start(self, name: str, args: list[str], env: dict[str, str], cwd: Path) -> None:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=env, cwd=str(cwd),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self._procs.append(proc)

    def start(self) -> StandaloneCluster:
        master_dir = self.workdir / "master"
        master_dir.mkdir(parents=True)
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(self.ui_port)],
                    self._env(SPARK_LOG_DIR=str(master_dir)), master_dir)
        for i in range(self.workers):
            root = self.workdir / f"worker-{i}"
            dirs = {d: root / d for d in ("work", "local", "tmp")}
            for d in dirs.values():
                d.mkdir(parents=True)
            env = self._env(SPARK_WORKER_DIR=str(dirs["work"]), SPARK_LOCAL_DIRS=str(dirs["local"]),
                            TMPDIR=str(dirs["tmp"]), SPARK_LOG_DIR=str(root))
            self._start(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", self.master_url,
                                        "--host", "127.0.0.1", "--cores", "1", "--memory", self.memory,
                                        "--work-dir", str(dirs["work"]), "--webui-port", str(free_port())],
                        env, root)
        self._wait_for_workers()
        return self

    def state(self) -> dict[str, object]:
        """The master's view (its web UI's ``/json``)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as response:
            data: dict[str, object] = json.loads(response.read())
            return data

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with contextlib.suppress(OSError, ValueError):
                if self.state().get("aliveworkers") == self.workers:
                    return
            dead = [p.args for p in self._procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                logs = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in self.workdir.glob("*.log"))
                self.stop()
                raise RuntimeError(f"the standalone cluster did not start (exited: {dead}):\n{logs}")
            time.sleep(0.5)  # the master has no push notification for registrations

    def executor_dirs(self) -> list[Path]:
        """Every executor's working directory (``<worker>/work/<app>/<executor id>``)."""
        return sorted(p for p in self.workdir.glob("worker-*/work/app-*/*") if p.is_dir())

    def stop(self) -> None:
        for proc in reversed(self._procs):
            kill_session(proc.pid)
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self._procs.clear()

    def remove(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

