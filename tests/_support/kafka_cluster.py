"""A KRaft cluster of several Apache Kafka nodes on 127.0.0.1, for faults a single broker cannot have.

Why in ``tests/_support``: the real-broker chaos tier (``tests/chaos/test_broker_chaos.py``) and the
failover benchmark (``benchmarks/failover.py``) both need a cluster whose brokers can be killed -9,
restarted, frozen (SIGSTOP) and thawed, and both need to ask it who leads a partition, who coordinates a
transactional id, whether it has healed, and when the controller fenced a broker. Nodes are started the
way ``kafka_home.py`` starts the broker tier's single node (a fresh temporary directory, 127.0.0.1 ports
only, bounded readiness), with its hooks:

- every node is broker and controller; the quorum is static (``controller.quorum.voters`` on the nodes'
  127.0.0.1 controller ports, so ``kafka-storage.sh format`` runs without ``--standalone``), formatted with
  one cluster id;
- replication factor 3 and ``min.insync.replicas`` 2 for every topic, the transaction log
  (``transaction.state.log.replication.factor=3``, ``transaction.state.log.min.isr=2``) and the offsets
  topic, so one node may be down or frozen and transactions go on;
- the controller moves leadership back to the preferred replicas soon after a node returns
  (``leader.imbalance.check.interval.seconds``), so coordinators and leaders are spread again for the
  next fault;
- the broker's own failure detection keeps Kafka's defaults (``broker.session.timeout.ms`` 9 s,
  heartbeats every 2 s): that is the fencing time clients are measured against.

Questions go to a node that is running (never to a frozen one, which would not answer) over a bare
protocol connection (``WireClient``), so they cost no client state and time out in seconds.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from tests._support.kafka_home import (
    BROKER_START_TIMEOUT_S,
    KafkaHomeBroker,
    api_versions_ok,
    random_cluster_id,
)
from txnproducer.testing.wire_client import WireClient

__all__ = ["INTERNAL_TOPICS", "ClusterNode", "KafkaCluster", "PartitionState", "kafka_home_or_skip_reason"]

INTERNAL_TOPICS = ("__transaction_state", "__consumer_offsets")
HEAP_OPTS = "-Xmx384M -Xms128M"  # three JVMs and the clients share a small machine
_QUERY_TIMEOUT_S = 5.0
# log4j's layout in the controller log: "[2026-11-24 12:44:27,123] INFO [QuorumController id=1] ..."
_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def kafka_home_or_skip_reason() -> tuple[Path | None, str]:
    """``($KAFKA_HOME, "")`` when a cluster can be started here, else ``(None, why not)`` in one line."""
    home = os.environ.get("KAFKA_HOME")
    if not home:
        return None, "needs KAFKA_HOME (an unpacked Apache Kafka >= 3.9) to start a 3-node KRaft cluster"
    if not (Path(home) / "bin" / "kafka-server-start.sh").exists():
        return None, f"KAFKA_HOME={home} has no bin/kafka-server-start.sh"
    if not (os.environ.get("JAVA_HOME") or _which("java")):
        return None, "KAFKA_HOME is set but no java on PATH (or JAVA_HOME)"
    return Path(home), ""


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


@attrs.frozen
class PartitionState:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class ClusterNode(KafkaHomeBroker):
    """One node of a :class:`KafkaCluster`: broker and controller, with the signals a test sends."""

    heap_opts = HEAP_OPTS

    def __init__(self, kafka_home: Path, workdir: Path, node_id: int, cluster: KafkaCluster) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        super().__init__(kafka_home, workdir)
        self.node_id = node_id
        self.cluster = cluster
        self.state = "new"  # running | killed | paused | stopped

    def adjust_properties(self, lines: dict[str, str]) -> dict[str, str]:
        lines.pop("controller.quorum.bootstrap.servers", None)
        lines.update(self.cluster.node_settings(self.node_id))
        return lines

    def format_args(self) -> list[str]:
        return []  # a static quorum: controller.quorum.voters names every voter

    def is_ready(self) -> bool:
        """It answers, and its own metadata lists it as a live (registered, unfenced) broker."""
        if not api_versions_ok("127.0.0.1", self.port, 1.0):
            return False
        try:
            brokers, _ = self.cluster.metadata((), via=self)
        except (OSError, ConnectionError):
            return False
        return self.node_id in brokers

    def signal_group(self, signum: int) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signum)

    @property
    def log_dir(self) -> Path:
        return self.workdir / "logs"


class KafkaCluster:
    """``size`` nodes (ids 1..size) in ``workdir``; see the module docstring.

    ``settings`` overrides or adds server properties on every node.
    """

    def __init__(self, kafka_home: Path, workdir: Path, size: int = 3,
                 settings: Mapping[str, str] | None = None) -> None:
        self.kafka_home = kafka_home
        self.workdir = workdir
        self.size = size
        self.extra = dict(settings or {})
        self.nodes = {i: ClusterNode(kafka_home, workdir / f"node-{i}", i, self) for i in range(1, size + 1)}
        self.events: list[tuple[float, str]] = []  # (time.time(), what was done), for reports

    # -- configuration ----------------------------------------------------------------------------------

    def node_settings(self, node_id: int) -> dict[str, str]:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())
        replication = str(min(3, self.size))
        min_isr = str(max(1, min(2, self.size - 1)))
        settings = {
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "default.replication.factor": replication,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": replication,
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": min_isr,
            "offsets.topic.num.partitions": "6",
            "transaction.state.log.num.partitions": "6",
            # leadership returns to the preferred replicas soon after a node is back
            "leader.imbalance.check.interval.seconds": "10",
            "leader.imbalance.per.broker.percentage": "0",
        }
        settings.update(self.extra)
        return settings

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    # -- life cycle ---------------------------------------------------------------------------------------

    def start(self, timeout_s: float = BROKER_START_TIMEOUT_S) -> None:
        """Format every node with one cluster id, launch them together (the quorum needs a majority),
        and wait until each lists every broker."""
        cluster_id = random_cluster_id()
        for node in self.nodes.values():
            node.format_storage(cluster_id)
        try:
            for node in self.nodes.values():
                node.launch()
                node.state = "running"
            deadline = time.monotonic() + timeout_s
            for node in self.nodes.values():
                node.wait_ready(max(1.0, deadline - time.monotonic()))
            self.wait_for(self._all_registered, deadline - time.monotonic(), "every broker to register")
        except BaseException:
            self.stop()
            raise
        self._note("cluster started")

    def stop(self, timeout_s: float = 30.0) -> None:
        """Thaw frozen nodes, SIGTERM every node at once, SIGKILL what is left after ``timeout_s``."""
        running = [n for n in self.nodes.values() if n.process is not None and n.process.poll() is None]
        for node in running:
            with contextlib.suppress(ProcessLookupError):
                if node.state == "paused":
                    node.signal_group(signal.SIGCONT)
                node.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for node in running:
            assert node.process is not None
            try:
                node.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    node.signal_group(signal.SIGKILL)
                node.process.wait(10)
            node.state = "stopped"

    def kill(self, node_id: int) -> float:
        """kill -9 the node (no controlled shutdown); returns the time.time() of the kill."""
        node = self.nodes[node_id]
        assert node.state == "running", f"node {node_id} is {node.state}"
        at = time.time()
        node.signal_group(signal.SIGKILL)
        assert node.process is not None
        node.process.wait(30)
        node.state = "killed"
        self._note(f"kill -9 node {node_id}", at)
        return at

    def restart(self, node_id: int, timeout_s: float = BROKER_START_TIMEOUT_S) -> float:
        """Start a killed node on its old log directory and wait until it is a live broker again;
        returns how long that took."""
        node = self.nodes[node_id]
        assert node.state == "killed", f"node {node_id} is {node.state}"
        started = time.monotonic()
        node.launch()
        node.state = "running"
        node.wait_ready(timeout_s)
        self._note(f"restarted node {node_id}")
        return time.monotonic() - started

    def pause(self, node_id: int) -> float:
        """SIGSTOP the node: its connections stay open, nothing answers (a grey failure); returns the
        time.time() of the signal."""
        return self._signal(node_id, signal.SIGSTOP, "running", "paused")

    def resume(self, node_id: int) -> float:
        """SIGCONT a paused node."""
        return self._signal(node_id, signal.SIGCONT, "paused", "running")

    def _signal(self, node_id: int, signum: signal.Signals, before: str, after: str) -> float:
        node = self.nodes[node_id]
        assert node.state == before, f"node {node_id} is {node.state}"
        at = time.time()
        node.signal_group(signum)
        node.state = after
        self._note(f"{signum.name} node {node_id}", at)
        return at

    def running(self) -> list[ClusterNode]:
        return [n for n in self.nodes.values() if n.state == "running"]

    def _note(self, text: str, at: float | None = None) -> None:
        self.events.append((time.time() if at is None else at, text))

    # -- questions ----------------------------------------------------------------------------------------

    def _ask(self, request: Any, via: ClusterNode | None = None) -> Any:
        """Send ``request`` to ``via`` or to the first running node that answers."""
        nodes = [via] if via is not None else self.running()
        last: BaseException | None = None
        for node in nodes:
            try:
                with WireClient("127.0.0.1", node.port, client_id="cluster-probe",
                                timeout=_QUERY_TIMEOUT_S) as wire:
                    return wire.send(request)
            except (OSError, ConnectionError) as exc:
                last = exc
        raise ConnectionError(f"no running node answered {type(request).__name__}: {last!r}")

    def metadata(self, topics: Iterable[str],
                 via: ClusterNode | None = None) -> tuple[set[int], dict[tuple[str, int], PartitionState]]:
        """(live broker ids, (topic, partition) -> leader/replicas/isr) as a running node sees them."""
        wanted = [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        request = MetadataRequest(version=12, topics=wanted, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False)
        response = self._ask(request, via)
        brokers = {b.node_id for b in response.brokers}
        partitions = {}
        for topic in response.topics:
            for p in topic.partitions:
                partitions[(topic.name, p.partition_index)] = PartitionState(
                    p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
        return brokers, partitions

    def leader(self, topic: str, partition: int) -> int:
        return self.metadata([topic])[1][(topic, partition)].leader

    def coordinator(self, transactional_id: str, timeout_s: float = 10.0, key_type: int = 1) -> int:
        """The broker coordinating ``transactional_id`` now (FindCoordinator, key type transaction; or
        ``key_type=0``: a consumer group's), asked again while the answer is COORDINATOR_NOT_AVAILABLE
        or LOAD_IN_PROGRESS (a coordinator moving), up to ``timeout_s``; ConnectionError after that."""
        request = FindCoordinatorRequest(version=4, key_type=key_type, coordinator_keys=[transactional_id])
        deadline = time.monotonic() + timeout_s
        while True:
            found = self._ask(request).coordinators[0]
            if found.error_code == 0:
                node_id: int = found.node_id
                return node_id
            if found.error_code not in (14, 15) or time.monotonic() > deadline:
                raise ConnectionError(f"FindCoordinator({transactional_id!r}) answered error "
                                      f"{found.error_code}")
            time.sleep(0.25)  # the coordinator is moving: ask again (no event to wait on)

    def _all_registered(self) -> bool:
        try:
            return len(self.metadata(())[0]) == self.size
        except ConnectionError:
            return False

    def healthy(self, topics: Sequence[str] = ()) -> bool:
        """Every node runs and is a live broker, and every partition of ``topics`` and of the internal
        topics has a leader and all its replicas in sync (so the next fault starts from a whole cluster)."""
        if len(self.running()) != self.size:
            return False
        try:
            brokers, partitions = self.metadata([*INTERNAL_TOPICS, *topics])
        except ConnectionError:
            return False
        known = {topic for topic, _ in partitions}
        return len(brokers) == self.size and set(topics) <= known and all(
            s.leader >= 0 and set(s.isr) == set(s.replicas) for s in partitions.values())

    def balanced(self, topics: Sequence[str] = ()) -> bool:
        """Healthy, and every partition is led by its preferred (first) replica."""
        if not self.healthy(topics):
            return False
        _, partitions = self.metadata([*INTERNAL_TOPICS, *topics])
        return all(s.leader == s.replicas[0] for s in partitions.values())

    def wait_for(self, condition: Any, timeout_s: float, what: str) -> float:
        """Poll ``condition()`` (a question to an external cluster: there is no event to wait on) until it
        holds; returns the seconds waited; raises TimeoutError naming ``what``."""
        started = time.monotonic()
        deadline = started + max(0.0, timeout_s)
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the cluster did not reach: {what} within {timeout_s:.0f}s")
            time.sleep(0.25)
        return time.monotonic() - started

    # -- what the controllers wrote ---------------------------------------------------------------------

    def controller_lines(self, pattern: str, since: float) -> list[tuple[float, int, str]]:
        """Lines of every node's controller.log matching ``pattern`` (a regex) written at or after
        ``since`` (time.time()); as (time, node id, line), oldest first."""
        regex = re.compile(pattern)
        found = []
        for node in self.nodes.values():
            for path in sorted(node.log_dir.glob("controller.log*")):
                with contextlib.suppress(OSError):
                    for line in path.read_text(errors="replace").splitlines():
                        match = _LOG_TIME.match(line)
                        if match is None or not regex.search(line):
                            continue
                        at = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
                        if at >= since - 0.001:
                            found.append((at, node.node_id, line))
        return sorted(found)

    def active_controller(self) -> int | None:
        """The node that last became the active controller (the highest epoch in the controller logs)."""
        lines = self.controller_lines(r"Becoming the active controller at epoch \d+", 0.0)
        best: tuple[int, int] | None = None
        for _, node_id, line in lines:
            match = re.search(r"at epoch (\d+)", line)
            if match and (best is None or int(match[1]) > best[0]):
                best = (int(match[1]), node_id)
        return None if best is None else best[1]

    def fenced_at(self, node_id: int, since: float, until: float | None = None) -> float | None:
        """When a controller fenced ``node_id`` ("Fencing broker N ... because its session has timed out")
        between ``since`` and ``until`` (time.time()), or None."""
        lines = self.controller_lines(rf"Fencing broker {node_id}\b", since)
        found = [at for at, _, _ in lines if until is None or at <= until]
        return found[0] if found else None
