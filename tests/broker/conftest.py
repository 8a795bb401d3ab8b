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

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._support.kafka_home import (
    BROKER_START_TIMEOUT_S,
    KafkaHomeBroker,
    api_versions_ok,
    free_port,
    metadata_has_broker,
)
from tests._support.secrets_scan import debug_everywhere  # noqa: F401  (a fixture for the secrets scans)

_HERE = Path(__file__).parent
KAFKA_DOCKER_IMAGE = os.environ.get("KAFKA_DOCKER_IMAGE", "apache/kafka:4.1.0")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.broker)


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

    port = free_port()
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
        while not (api_versions_ok(host, port, 1.0) and metadata_has_broker(bootstrap, 5.0)):
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
