"""A Spark Connect server (pyspark's ``sbin/start-connect-server.sh``) and a client application.

Why both: with Spark Connect the *server* is the driver - the sink's ``commit`` runs in a Python
worker the server starts - while the application is a thin gRPC client. "The driver is killed"
therefore means the server is killed; the client sees its query fail. :class:`ConnectDriver`
presents the pair as one driver to the cluster scenario (tests/_support/spark_cluster_scenario.py):
it is killed when the server is, and it is restarted as a new server and a new client.

The server runs in the foreground (``--wait``) as its own session leader, with
``TXNKAFKA_SPARK_CRASH_SESSION`` set to that session, so the sink's fault hook can SIGKILL it;
its executors run on the standalone cluster.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

from tests._support.spark_runner import SparkApp, kill_session, spark_env
from tests._support.spark_standalone import free_port, spark_home

__all__ = ["ConnectDriver"]

SERVER_START_TIMEOUT_S = 240.0


class ConnectDriver:
    """A Connect server on ``master`` and the client ``app`` connected to it."""

    def __init__(self, app: Path, bootstrap: str, args: list[str], crash_at: str | None, *, master: str,
                 workdir: Path, task_faults: str = "") -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.crash_at = crash_at
        self.port = free_port()
        env = spark_env(crash_at, SPARK_LOG_DIR=str(workdir), SPARK_PID_DIR=str(workdir))
        confs = {
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
            "spark.executor.memory": "512m", "spark.executor.cores": "1", "spark.cores.max": "2",
            "spark.executor.extraJavaOptions": "-Djava.io.tmpdir=.",
            "spark.executorEnv.TXNKAFKA_SPARK_TASK_FAULT": task_faults,
        }
        command = [str(spark_home() / "sbin" / "start-connect-server.sh"), "--wait", "--master", master]
        for key, value in confs.items():
            command += ["--conf", f"{key}={value}"]
        self._server_log = open(workdir / "server.log", "w+")  # noqa: SIM115 - closed in stop()
        # the session leader exports its own pid as the session the fault hook may kill
        self.server = subprocess.Popen(
            ["sh", "-c", 'export TXNKAFKA_SPARK_CRASH_SESSION=$$; exec "$0" "$@"', *command],
            env=env, cwd=str(workdir), start_new_session=True, stdout=self._server_log,
            stderr=subprocess.STDOUT)
        self._wait_for_server()
        self.client = SparkApp(app, bootstrap, "--remote", f"sc://127.0.0.1:{self.port}", *args,
                               env=spark_env(None), log=workdir / "client.log")

    def _wait_for_server(self) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                pass
            if self.server.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the Spark Connect server did not start:\n{self._server_text()[-4000:]}")
            time.sleep(0.5)  # the server opens its port when ready; nothing else tells

    def _server_text(self) -> str:
        self._server_log.flush()
        self._server_log.seek(0)
        return self._server_log.read()

    def poll(self) -> int | None:
        """-9 once the fault hook killed the server; else the client's exit status."""
        if self.server.poll() == -signal.SIGKILL:
            return -signal.SIGKILL
        return self.client.poll()

    def wait(self, timeout_s: float) -> int:
        code = self.client.wait(timeout_s)
        self.stop()
        return code

    def stderr(self) -> str:
        return self._server_text() + "\n--- client\n" + self.client.stderr()

    def stop(self) -> None:
        if hasattr(self, "client"):
            self.client.stop()
        kill_session(self.server.pid)
        if self.server.poll() is None:
            self.server.kill()
        self.server.wait()
