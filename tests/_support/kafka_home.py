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
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (what random-uuid prints)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


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
    """One KRaft node (broker + controller) run from an unpacked Kafka distribution."""

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
        return "".join(f"{k}={v}\n" for k, v in self.property_map().items())

    def property_map(self) -> dict[str, str]:
        """server.properties as a mapping, so that a variant (a secured broker) can change a few."""
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
        return lines

    def format_args(self) -> list[str]:
        """Extra ``kafka-storage.sh format`` arguments (a secured broker adds its SCRAM users here)."""
        return []

    def start(self) -> None:
        started = time.monotonic()
        props = self.workdir / "server.properties"
        props.write_text(self.properties())
        env = dict(os.environ)
        env.setdefault("KAFKA_HEAP_OPTS", "-Xmx512M -Xms256M")
        # kafka-run-class.sh's default JMX options open an RMI port on every interface
        env.setdefault("KAFKA_JMX_OPTS", "-Djava.rmi.server.hostname=127.0.0.1")
        env["LOG_DIR"] = str(self.workdir / "logs")
        bin_dir = self.kafka_home / "bin"
        fmt = subprocess.run(
            [str(bin_dir / "kafka-storage.sh"), "format", "--standalone", "-t", random_cluster_id(),
             "-c", str(props), *feature_args(), *self.format_args()],
            env=env, capture_output=True, timeout=BROKER_START_TIMEOUT_S, check=False,
        )  # fmt: skip
        if fmt.returncode != 0:
            raise RuntimeError(
                f"kafka-storage.sh format failed: {fmt.stderr.decode(errors='replace')[-2000:]}"
            )
        with open(self._stdout_path, "wb") as out:
            self.process = subprocess.Popen(
                [str(bin_dir / "kafka-server-start.sh"), str(props)],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + BROKER_START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"Kafka exited with code {self.process.returncode} during startup:\n{self._tail()}"
                )
            if api_versions_ok("127.0.0.1", self.port, 1.0) and metadata_has_broker(self.bootstrap, 5.0):
                break
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"Kafka did not answer within {BROKER_START_TIMEOUT_S:.0f}s:\n{self._tail()}"
                )
            # Readiness polling of an external process: there is no event to wait on.
            time.sleep(0.25)
        self.startup_seconds = time.monotonic() - started

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


