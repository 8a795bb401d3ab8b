"""Real-broker test tier: a session-wide Apache Kafka, found or started in one of three ways.

In order of preference:

1. ``KAFKA_BOOTSTRAP_SERVERS`` names a running cluster: use it as is (it must allow transactions,
   i.e. have ``transaction.state.log.replication.factor`` <= its broker count).
2. ``KAFKA_HOME`` points at an unpacked Kafka (>= 3.9, KRaft): format a fresh single-node
   broker+controller in a temporary directory, start it on free 127.0.0.1 ports, stop it at the end.
3. A Docker engine answers: start the ``apache/kafka`` image with testcontainers.

Otherwise every test here is skipped with a one-line reason, so ``make test`` stays green on a
machine without Kafka. Every test in this directory carries the ``broker`` marker automatically
(``pytest -m "not broker"`` leaves the tier out; ``pytest -m broker`` runs only it).
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
BROKER_START_TIMEOUT_S = float(os.environ.get("KAFKA_START_TIMEOUT_S", "120"))
KAFKA_DOCKER_IMAGE = os.environ.get("KAFKA_DOCKER_IMAGE", "apache/kafka:4.1.0")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.broker)


# --- helpers ---------------------------------------------------------------------------------------


def _feature_args() -> list[str]:
    """``KAFKA_TRANSACTION_VERSION=1`` formats the broker with Transaction Version 1 (pre-KIP-890),
    so the tier can check both protocol paths against the real thing; unset, Kafka's default (2)."""
    version = os.environ.get("KAFKA_TRANSACTION_VERSION")
    return ["--feature", f"transaction.version={int(version)}"] if version else []


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (what random-uuid prints)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _api_versions_ok(host: str, port: int, timeout_s: float) -> bool:
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


def _metadata_has_broker(bootstrap: str, timeout_s: float) -> bool:
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
        self.port = _free_port()
        self.controller_port = _free_port()
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
        return "".join(f"{k}={v}\n" for k, v in lines.items())

    def start(self) -> None:
        started = time.monotonic()
        props = self.workdir / "server.properties"
        props.write_text(self.properties())
        env = dict(os.environ)
        env.setdefault("KAFKA_HEAP_OPTS", "-Xmx512M -Xms256M")
        env["LOG_DIR"] = str(self.workdir / "logs")
        bin_dir = self.kafka_home / "bin"
        fmt = subprocess.run(
            [str(bin_dir / "kafka-storage.sh"), "format", "--standalone", "-t", _random_cluster_id(),
             "-c", str(props), *_feature_args()],
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
            if _api_versions_ok("127.0.0.1", self.port, 1.0) and _metadata_has_broker(self.bootstrap, 5.0):
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


def _docker_available() -> str | None:
    """None when testcontainers can reach a Docker engine, else the reason why not."""
    try:
        import docker  # type: ignore[import-untyped]
        import testcontainers.core.container  # noqa: F401
    except ImportError as exc:
        return f"testcontainers/docker not installed ({exc.name})"
    try:
        docker.from_env().ping()
    except Exception as exc:
        return f"no Docker engine ({type(exc).__name__})"
    return None


def _docker_kafka() -> Iterator[str]:
    """Run the official apache/kafka image (KRaft, single node) on a free host port.

    The image's defaults already use replication factor 1 for the internal topics; only the
    listeners change, so that the advertised address is the one the host reaches.
    """
    from testcontainers.core.container import DockerContainer

    port = _free_port()
    container = DockerContainer(KAFKA_DOCKER_IMAGE).with_bind_ports(port, port)
    env = {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENERS": f"PLAINTEXT://0.0.0.0:{port},CONTROLLER://localhost:9093",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    }
    for key, value in env.items():
        container.with_env(key, value)
    try:
        host = container.get_container_host_ip()  # the Docker host as seen from here
    except Exception:
        host = "localhost"
    container.with_env("KAFKA_ADVERTISED_LISTENERS", f"PLAINTEXT://{host}:{port}")
    with container:
        deadline = time.monotonic() + BROKER_START_TIMEOUT_S
        bootstrap = f"{host}:{port}"
        while not (_api_versions_ok(host, port, 1.0) and _metadata_has_broker(bootstrap, 5.0)):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"apache/kafka container did not answer within {BROKER_START_TIMEOUT_S:.0f}s"
                )
            time.sleep(0.25)  # readiness polling of an external process
        yield bootstrap


# --- the fixture ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap servers of a real Kafka broker that allows transactions (see the module doc)."""
    env_servers = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if env_servers:
        yield env_servers
        return

    kafka_home = os.environ.get("KAFKA_HOME")
    if kafka_home:
        home = Path(kafka_home)
        if not (home / "bin" / "kafka-server-start.sh").exists():
            pytest.skip(f"KAFKA_HOME={kafka_home} has no bin/kafka-server-start.sh")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            pytest.skip("KAFKA_HOME is set but no java on PATH (or JAVA_HOME)")
        workdir = Path(tempfile.mkdtemp(prefix="txnproducer-kafka-"))
        broker = KafkaHomeBroker(home, workdir)
        try:
            broker.start()
            yield broker.bootstrap
        finally:
            broker.stop()
            shutil.rmtree(workdir, ignore_errors=True)
        return

    reason = _docker_available()
    if reason is None:
        yield from _docker_kafka()
        return

    pytest.skip(f"no real Kafka: set KAFKA_BOOTSTRAP_SERVERS or KAFKA_HOME, or run Docker ({reason})")
