"""One chaos run on a real 3-node KRaft cluster: producer processes, a pipeline, kill -9, SIGSTOP, a checker.

Why a module apart from ``run.py``: the phases are the CI tier's (chaos, calm, judgement) and so are the
workload, the pipeline and the checker, but the faults are signals to processes (``broker_faults.py``) and
the producers are processes of their own (``producer_process.py``), so that they too can be killed -9;
what they were told comes back through their journals (``tests/_support/txn_journal.py``).

1. chaos - ``producers`` producer processes and a consume-transform-produce group of ``processors``
   instances (threads of this process) run while the scheduler kills, restarts, freezes and thaws brokers
   and kills producer processes, for ``seconds``;
2. calm - every node runs again and the cluster has healed; each producer process runs a few more
   transactions, which must not fail, and exits; the group drains what was committed to its input;
3. judgement - the journals are replayed into one ledger, read_committed readers read every topic, and
   the checker counts every anomaly kind. The result also counts transactions, faults per kind and target,
   and the controller's kill-to-fence times.

Settings for the bounds: a killed or frozen broker is fenced after ``broker.session.timeout.ms`` (9 s) and
its partitions move then, so the producers' bounds are well above that (``PRODUCER_SETTINGS``).
"""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import attrs

from tests._support.chaos_workload import EosGroup
from tests._support.eos_pipeline import ProcessorThreads
from tests._support.kafka_cluster import KafkaCluster
from tests._support.readers import read_all
from tests._support.txn_checker import Report, check
from tests._support.txn_journal import replay
from tests._support.txn_ledger import Ledger
from tests.chaos.broker_faults import FAULT_KINDS, BrokerFault, BrokerFaultScheduler
from tests.chaos.producer_process import ProducerProcess
from tests.chaos.run import EOS_OUT, GROUP, IN, OUT, TOPICS, hanging_partitions

__all__ = ["BrokerChaosResult", "BrokerChaosSettings", "create_topics", "run_broker_chaos"]

READ_WAIT_S = 120.0
# Bounds above the cluster's own failover time (fencing after 9 s, a new leader within about a second).
PRODUCER_SETTINGS: dict[str, Any] = {
    "request_timeout_ms": 15000,
    "delivery_timeout_ms": 45000,
    "max_block_ms": 30000,
    "transaction_timeout_ms": 60000,
    "metadata_max_age_ms": 5000,
    "socket_connection_setup_timeout_ms": 5000,
}
# The broker's group.min.session.timeout.ms is 6 s: a session timeout above it, heartbeats well below.
CONSUMER: dict[str, Any] = {
    "session_timeout_ms": 10000,
    "heartbeat_interval_ms": 1000,
    "max_poll_interval_ms": 60000,
    "request_timeout_ms": 30000,
    "metadata_max_age_ms": 5000,
    "retry_backoff_ms": 100,
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 1000,
    "fetch_max_wait_ms": 100,
}
# BROKER_CHAOS_GROUP_PROTOCOL=consumer: the pipeline in a KIP-848 group, paced by the cluster as the classic
# settings above pace it (a heartbeat every second, a dead member dropped after 10 s): CLUSTER_SETTINGS
CONSUMER_PROTOCOL_CLUSTER = {"group.consumer.heartbeat.interval.ms": "1000",
                             "group.consumer.min.heartbeat.interval.ms": "1000",
                             "group.consumer.session.timeout.ms": "10000",
                             "group.consumer.min.session.timeout.ms": "10000"}


def consumer_settings(group_protocol: str) -> dict[str, Any]:
    """The pipeline's consumer settings for ``group_protocol`` ("classic" or "consumer"; the consumer
    protocol's pace is the cluster's, :data:`CONSUMER_PROTOCOL_CLUSTER`)."""
    if group_protocol == "classic":
        return dict(CONSUMER)
    kept = {k: v for k, v in CONSUMER.items() if k not in ("session_timeout_ms", "heartbeat_interval_ms")}
    return {**kept, "group_protocol": group_protocol}


def _env(name: str, default: str) -> str:
    value = os.environ.get(name)
    return default if value in (None, "") else value


@attrs.frozen
class BrokerChaosSettings:
    """What a run does; :meth:`from_env` reads the BROKER_CHAOS_* variables."""

    seed: int
    seconds: float = 300.0
    producers: int = 4
    processors: int = 2
    kinds: tuple[str, ...] = FAULT_KINDS
    slack_s: float = 2.0
    calm_transactions: int = 5
    group_protocol: str = "classic"  # the pipeline's group protocol

    @classmethod
    def from_env(cls) -> BrokerChaosSettings:
        """BROKER_CHAOS_SEED (default: random), BROKER_CHAOS_SECONDS (300), BROKER_CHAOS_PRODUCERS (4),
        BROKER_CHAOS_PROCESSORS (2), BROKER_CHAOS_FAULTS (comma-separated kinds; default all),
        BROKER_CHAOS_SLACK_S (2.0), BROKER_CHAOS_GROUP_PROTOCOL (classic, or consumer: the pipeline in a
        KIP-848 group; CHAOS_GROUP_PROTOCOL, the MockCluster tier's switch, when it is not set)."""
        kinds = _env("BROKER_CHAOS_FAULTS", ",".join(FAULT_KINDS))
        return cls(seed=int(_env("BROKER_CHAOS_SEED", str(random.SystemRandom().randrange(2**32)))),
                   seconds=float(_env("BROKER_CHAOS_SECONDS", "300")),
                   producers=int(_env("BROKER_CHAOS_PRODUCERS", "4")),
                   processors=int(_env("BROKER_CHAOS_PROCESSORS", "2")),
                   kinds=tuple(k for k in kinds.split(",") if k),
                   slack_s=float(_env("BROKER_CHAOS_SLACK_S", "2.0")),
                   group_protocol=_env("BROKER_CHAOS_GROUP_PROTOCOL",
                                       _env("CHAOS_GROUP_PROTOCOL", "classic")))

    @property
    def cluster_settings(self) -> dict[str, str]:
        """The server properties the run needs on every node (the consumer protocol's pace)."""
        return dict(CONSUMER_PROTOCOL_CLUSTER) if self.group_protocol == "consumer" else {}

    def describe(self) -> str:
        return (f"BROKER_CHAOS_SEED={self.seed} BROKER_CHAOS_SECONDS={self.seconds:g} "
                f"BROKER_CHAOS_PRODUCERS={self.producers} BROKER_CHAOS_PROCESSORS={self.processors} "
                f"BROKER_CHAOS_GROUP_PROTOCOL={self.group_protocol} "
                f"BROKER_CHAOS_FAULTS={','.join(self.kinds)}")


@attrs.define
class BrokerChaosResult:
    settings: BrokerChaosSettings
    report: Report
    ledger: Ledger
    faults: list[BrokerFault]
    fault_counts: Counter[str]
    fence_s: dict[str, list[float]]  # fault kind -> kill/stop-to-fence seconds (the controller's log)
    notes: list[str]
    eos: dict[str, int]
    producer_starts: int
    seconds: float
    problems: list[str] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        return self.report.ok and not self.problems

    def summary(self) -> str:
        t = self.ledger.counts()
        faults = ", ".join(f"{kind} {n}" for kind, n in sorted(self.fault_counts.items())) or "none"
        fences = "; ".join(
            f"{kind}: {len(v)} fenced, median {statistics.median(v):.1f}s ({min(v):.1f}-{max(v):.1f})"
            for kind, v in sorted(self.fence_s.items()) if v) or "none fenced"
        errors = Counter(f"{event.call}: {event.error.split('(', 1)[0]}" for event in self.ledger.errors)
        seen = ", ".join(f"{name} {n}" for name, n in errors.most_common()) or "none"
        rare = [f"  {e.producer}#{e.txn} {e.call}: {e.error[:300]}" for e in self.ledger.errors
                if errors[f"{e.call}: {e.error.split('(', 1)[0]}"] <= 3]
        return (f"broker chaos seed={self.settings.seed} group protocol {self.settings.group_protocol}: "
                f"{t['total']} producer transactions "
                f"({t['committed']} committed, {t['aborted']} aborted, {t['unknown']} unknown) in "
                f"{self.producer_starts} producer processes; {self.eos['committed']} pipeline commits, "
                f"{self.eos['aborted']} aborts, {self.eos['restarts']} restarts; in {self.seconds:.0f}s\n"
                f"faults: {faults}\nkill/stop to fence (controller log): {fences}\n"
                f"{self.report.format()}\nerrors seen: {seen}" + "".join(f"\n{line}" for line in rare))

    def failure_text(self) -> str:
        lines = [f"broker chaos run failed - reproduce with: {self.settings.describe()}", self.summary(),
                 *self.problems, "faults:",
                 *(f"  {f.at_s:7.1f}s {f.kind} {f.target} ({f.why})" for f in self.faults), "notes:",
                 *(f"  {n}" for n in self.notes)]
        return "\n".join(lines)


def create_topics(cluster: KafkaCluster, topics: dict[str, int]) -> None:
    """Create ``topics`` (name -> partitions) with the cluster's replication (3, min ISR 2)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=60000)
    try:
        admin.create_topics([NewTopic(t, num_partitions=n, replication_factor=min(3, cluster.size))
                             for t, n in topics.items()])
    finally:
        admin.close()
    cluster.wait_for(lambda: cluster.healthy(list(topics)), 120, f"{sorted(topics)} in sync")


def run_broker_chaos(settings: BrokerChaosSettings, cluster: KafkaCluster,
                     workdir: Path) -> BrokerChaosResult:
    """The three phases on a started cluster (see the module docstring)."""
    started = time.monotonic()
    rng = random.Random(settings.seed)
    create_topics(cluster, TOPICS)
    ledger = Ledger()
    problems: list[str] = []
    deadline = started + settings.seconds + 600
    topics = {OUT: (TOPICS[OUT], 0.75), IN: (TOPICS[IN], 0.25)}
    producers = [ProducerProcess(f"w{i}", f"chaos-w{i}", cluster.bootstrap, workdir, topics,
                                 PRODUCER_SETTINGS, settings.calm_transactions, deadline,
                                 random.Random(rng.random()))
                 for i in range(settings.producers)]
    group = _eos_group(cluster.bootstrap, ledger, random.Random(rng.random()), settings.processors,
                       consumer_settings(settings.group_protocol))
    eos_ids = [f"{GROUP}-{name}" for name in group.names]
    scheduler = BrokerFaultScheduler(
        cluster, random.Random(rng.random()), producers, [p.transactional_id for p in producers] + eos_ids,
        [(t, p) for t in (OUT, IN) for p in range(TOPICS[t])], settings.kinds, list(TOPICS), groups=[GROUP])

    # chaos
    group.start()
    for producer in producers:
        producer.start()
    scheduler.start()
    scheduler.join(settings.seconds)  # the run's length (it returns early only if the scheduler died)
    scheduler.stop(timeout=300)
    if scheduler.is_alive():
        problems.append("the fault scheduler did not stop within 300s")
    problems += [f"the fault scheduler failed: {exc!r}" for exc in scheduler.errors]

    # calm
    scheduler.calm_down()
    for producer in producers:
        if not producer.alive:
            producer.start()
        producer.calm()
    for producer in producers:
        code = producer.wait(deadline - time.monotonic())
        if code != 0:
            problems.append(f"producer {producer.name} ended with {code}:\n{producer.output_tail()}")
            if code is None:
                producer.kill()
    for producer in producers:
        problems += replay(producer.journal, ledger, producer.name, producer.kills)
    inputs = read_all(cluster.bootstrap, IN, TOPICS[IN], "read_committed", READ_WAIT_S)
    ends = {p: records[-1].offset + 1 for p, records in inputs.items() if records}
    if group.names and not group.wait_drained(ends, IN, READ_WAIT_S):
        problems.append(f"the pipeline did not commit up to {ends} within {READ_WAIT_S}s\n{group.describe()}")
    group.stop(timeout=30)

    # judgement
    seen = {t: read_all(cluster.bootstrap, t, TOPICS[t], "read_committed", READ_WAIT_S) for t in (OUT, IN)}
    output = read_all(cluster.bootstrap, EOS_OUT, TOPICS[EOS_OUT], "read_committed", READ_WAIT_S) \
        if group.names else None
    report = check(ledger, seen, settings.slack_s, eos_input=inputs, eos_output=output,
                   eos_transactional_ids=eos_ids, hanging=hanging_partitions(cluster.bootstrap, TOPICS))
    eos = {"committed": group.committed, "aborted": group.aborted, "restarts": group.restarts}
    return BrokerChaosResult(settings, report, ledger, scheduler.faults, scheduler.counts(),
                             _fence_times(cluster, scheduler.faults), scheduler.notes, eos,
                             sum(p.starts for p in producers), time.monotonic() - started, problems)


def _fence_times(cluster: KafkaCluster, faults: list[BrokerFault]) -> dict[str, list[float]]:
    """Per broker fault kind: seconds from the signal to the controller fencing the node (a short SIGSTOP
    is not fenced at all, and is left out)."""
    out: dict[str, list[float]] = {}
    for fault in faults:
        if fault.node is None:
            continue
        fenced = cluster.fenced_at(fault.node, fault.wall, fault.until)
        if fenced is not None:
            out.setdefault(fault.kind, []).append(fenced - fault.wall)
    return out


def _eos_group(bootstrap: str, ledger: Ledger, rng: random.Random, processors: int,
               consumer: dict[str, Any]) -> EosGroup:
    threads = ProcessorThreads(bootstrap, IN, EOS_OUT, GROUP, consumer, dict(PRODUCER_SETTINGS), READ_WAIT_S)
    lock = threading.Lock()

    def overrides() -> dict[str, Any]:
        with lock:  # supervisors restart instances on their own threads
            return {"max_records_per_txn": rng.randint(5, 50), "max_txn_time_ms": rng.randint(50, 300),
                    "operation_timeout_ms": 30000, "close_timeout_ms": 10000}

    return EosGroup(threads, [f"p{i}" for i in range(processors)], ledger, overrides)
