"""A real Apache Kafka for the broker tier: KRaft nodes started from an unpacked distribution.

Why in ``tests/_support``: the broker tier's fixture (``tests/broker/conftest.py``), and the
scenarios that need brokers of their own (security, several nodes, faults), start Kafka the same
way: ``kafka-storage.sh format`` into a temporary directory, ``kafka-server-start.sh`` in a new
process session, listeners on 127.0.0.1 only (JMX too), and a readiness check that waits until the
broker answers ApiVersions and lists itself in Metadata, bounded by ``KAFKA_START_TIMEOUT_S``.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import struct
import subprocess
import time
import uuid
from pathlib import Path

__all__ = ["BROKER_START_TIMEOUT_S", "KafkaHomeBroker", "api_versions_ok", "free_port", "metadata_has_broker",
           "random_cluster_id"]

BROKER_START_TIMEOUT_S = float(os.environ.get("KAFKA_START_TIMEOUT_S", "120"))


def feature_args() -> list[str]:
    """``KAFKA_TRANSACTION_VERSION=1`` formats the broker with Transaction Version 1 (pre-KIP-890),
    so the tier can check both protocol paths against the real thing; unset, Kafka's default (2)."""
    version = os.environ.get("KAFKA_TRANSACTION_VERSION")
    return ["--feature", f"transaction.version={int(version)}"] if version else []


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (what random-uuid prints).

    Never one starting with ``-`` (1 in 64 would): ``kafka-storage.sh format -t -abc`` reads it as
    an option and fails; Kafka's own ``Uuid.randomUuid`` draws again in that case too."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def api_versions_ok(host: str, port: int, timeout_s: float) -> bool:
    """True when the broker answers an ApiVersions v0 request without error.

    A bare TCP accept is not enough: the socket server opens before the broker has caught up with
    the metadata log, and requests made in that window fail.
    """
    # request header v1: api_key=18, api_version=0, correlation_id=1, client_id="ready-probe"
    client_id = b"ready-probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.settimeout(timeout_s)
            s.sendall(struct.pack(">i", len(body)) + body)
            header = _recv_exact(s, 4)
            (size,) = struct.unpack(">i", header)
            payload = _recv_exact(s, size)
    except OSError:
        return False
    # response: correlation_id (int32), error_code (int16), ...
    correlation_id, error_code = struct.unpack(">ih", payload[:6])
    return correlation_id == 1 and error_code == 0


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by broker")
        buf += chunk
    return buf


def metadata_has_broker(bootstrap: str, timeout_s: float) -> bool:
    """True when a Metadata request lists at least one broker (the broker has registered)."""
    from kafka.admin import KafkaAdminClient

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap, request_timeout_ms=int(timeout_s * 1000), client_id="ready-probe"
        )
    except Exception:
        return False
    try:
        cluster = admin.describe_cluster()
        return bool(cluster.get("brokers"))
    except Exception:
        return False
    finally:
        admin.close()


class KafkaHomeBroker:
    """One KRaft node (broker + controller) run from an unpacked Kafka distribution.

    ``start()`` formats, launches and waits. A cluster of several nodes (``kafka_cluster.py``) uses
    the hooks apart: ``adjust_properties`` (node id, quorum voters, replication), ``format_args``
    (a static quorum formats without ``--standalone``), ``format_storage(cluster_id)`` with one id
    for every node, ``launch()`` without waiting (a quorum starts only when most of its voters run),
    ``wait_ready()`` and ``is_ready()``, and ``heap_opts``.
    """

    # KAFKA_HEAP_OPTS unless the environment sets it; several nodes on one machine want less each.
    heap_opts = "-Xmx512M -Xms256M"

    def __init__(self, kafka_home: Path, workdir: Path) -> None:
        self.kafka_home = kafka_home
        self.workdir = workdir
        self.port = free_port()
        self.controller_port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None
        self._stdout_path = workdir / "server.out"

    def properties(self) -> str:
        data = self.workdir / "data"
        lines = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # Fewer internal partitions: creating the default 50 of each costs seconds and buys nothing
            # on one node.
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
            "auto.create.topics.enable": "true",
            # the transaction-timeout test waits for the coordinator's abort: check every second, not 10 s
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        }
        lines = self.adjust_properties(lines)
        return "".join(f"{k}={v}\n" for k, v in lines.items())

    def adjust_properties(self, lines: dict[str, str]) -> dict[str, str]:
        """Hook: the final server.properties (a mapping, in order); this node's as it is."""
        return lines

    def format_args(self) -> list[str]:
        """Hook: how ``kafka-storage.sh format`` makes the quorum; one node is its own (dynamic) quorum."""
        return ["--standalone"]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("KAFKA_HEAP_OPTS", self.heap_opts)
        # kafka-run-class.sh's default JMX options open an RMI port on every interface
        env.setdefault("KAFKA_JMX_OPTS", "-Djava.rmi.server.hostname=127.0.0.1")
        env["LOG_DIR"] = str(self.workdir / "logs")
        return env

    def start(self) -> None:
        started = time.monotonic()
        self.format_storage()
        self.launch()
        self.wait_ready()
        self.startup_seconds = time.monotonic() - started

    def format_storage(self, cluster_id: str | None = None) -> None:
        """Write server.properties and format the log directory (once, before the first launch)."""
        props = self.workdir / "server.properties"
        props.write_text(self.properties())
        fmt = subprocess.run(
            [str(self.kafka_home / "bin" / "kafka-storage.sh"), "format", *self.format_args(),
             "-t", cluster_id or random_cluster_id(), "-c", str(props), *feature_args()],
            env=self._env(), capture_output=True, timeout=BROKER_START_TIMEOUT_S, check=False,
        )  # fmt: skip
        if fmt.returncode != 0:
            raise RuntimeError(
                f"kafka-storage.sh format failed: {fmt.stderr.decode(errors='replace')[-2000:]}"
            )

    def launch(self) -> None:
        """Start the (formatted) node in a new process session, without waiting for it; the output of
        every launch is appended to ``server.out``."""
        props = self.workdir / "server.properties"
        with open(self._stdout_path, "ab") as out:
            self.process = subprocess.Popen(
                [str(self.kafka_home / "bin" / "kafka-server-start.sh"), str(props)],
                env=self._env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def is_ready(self) -> bool:
        """Hook: the node answers (ApiVersions) and the cluster lists a broker."""
        return api_versions_ok("127.0.0.1", self.port, 1.0) and metadata_has_broker(self.bootstrap, 5.0)

    def wait_ready(self, timeout_s: float = BROKER_START_TIMEOUT_S) -> None:
        """Until :meth:`is_ready`, bounded by ``timeout_s``; the node is stopped if it never is."""
        assert self.process is not None, "launch() first"
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"Kafka exited with code {self.process.returncode} during startup:\n{self._tail()}"
                )
            if self.is_ready():
                break
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"Kafka did not answer within {timeout_s:.0f}s:\n{self._tail()}"
                )
            # Readiness polling of an external process: there is no event to wait on.
            time.sleep(0.25)

    def _tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self._stdout_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no output)"

    def stop(self) -> None:
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        # The start script execs java in the new session we created; signal that group only.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
