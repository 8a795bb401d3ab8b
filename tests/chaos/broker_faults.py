"""The real-broker chaos tier's faults: kill -9 and restart, SIGSTOP and SIGCONT, producers killed -9.

Why apart from ``scheduler.py`` (MockCluster's faults): on a real cluster a fault is a signal to a process,
and what it does is up to Kafka - the controller fences a silent broker after ``broker.session.timeout.ms``,
moves its partitions and coordinators, and a node that comes back catches up and takes its preferred
leaderships back. The workload and the checker (``tests/_support``) see only the effects, as on MockCluster.

Episodes, drawn from ``random.Random(seed)``, one at a time:

- ``kill_broker``: kill -9 a node, keep it down 2-15 s, restart it on its log directory;
- ``pause_broker``: SIGSTOP a node for 3-20 s (a grey failure: its connections stay open, nothing answers;
  under ``broker.session.timeout.ms`` it is not even fenced), then SIGCONT;
- ``pause_coordinator``: SIGSTOP the transaction coordinator of one of the workload's transactional ids
  or the pipeline group's coordinator for 10-20 s - past the 9 s session timeout, so the controller
  fences it while it is frozen and its coordinators move - then SIGCONT (its late answers come then);
- ``kill_producer``: kill -9 a producer process (mid-transaction, mid-commit, wherever it is) and start a
  new one with the same transactional id, which fences what the dead one left open.

A broker fault targets, first, the coordinator of one of the workload's transactional ids or the leader of
one of its partitions (each 40 %), else any node; during a broker fault a producer process may be killed
too (30 %). Before each broker fault the cluster must have healed (every node a live broker, every replica
in sync), so one node at a time is ever missing and ``min.insync.replicas=2`` holds throughout.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from tests._support.kafka_cluster import KafkaCluster
from tests.chaos.producer_process import ProducerProcess

__all__ = ["FAULT_KINDS", "BrokerFault", "BrokerFaultScheduler"]

FAULT_KINDS = ("kill_broker", "pause_broker", "pause_coordinator", "kill_producer")


@attrs.frozen
class BrokerFault:
    """One fault: seconds into the run, its kind, the node (or producer) and why that one."""

    at_s: float
    kind: str
    target: str
    why: str = ""
    wall: float = 0.0  # time.time() of the signal, to find the controller's reaction in its log
    until: float = 0.0  # time.time() when it was undone (restart or SIGCONT)
    node: int | None = None


class BrokerFaultScheduler(threading.Thread):
    """Draws episodes until :meth:`stop`; :meth:`calm_down` then brings every node back."""

    def __init__(self, cluster: KafkaCluster, rng: Any, producers: Sequence[ProducerProcess],
                 transactional_ids: Sequence[str], partitions: Sequence[tuple[str, int]],
                 kinds: Sequence[str], topics: Sequence[str], heal_timeout_s: float = 180.0,
                 groups: Sequence[str] = ()) -> None:
        super().__init__(name="broker-faults", daemon=True)
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {FAULT_KINDS}")
        self.cluster = cluster
        self.rng = rng
        self.producers = list(producers)
        self.transactional_ids = list(transactional_ids)
        self.groups = list(groups)
        self.partitions = list(partitions)
        self.kinds = list(kinds)
        self.topics = list(topics)
        self.heal_timeout_s = heal_timeout_s
        self.faults: list[BrokerFault] = []
        self.notes: list[str] = []  # what else happened (restart times, heal waits)
        self.errors: list[BaseException] = []
        self._halt = threading.Event()
        self._started_at = time.monotonic()
        self._makers: dict[str, Callable[[], None]] = {
            "kill_broker": self._kill_broker,
            "pause_broker": self._pause_broker,
            "pause_coordinator": self._pause_coordinator,
            "kill_producer": self._kill_producer,
        }
        assert set(self._makers) == set(FAULT_KINDS)

    def stop(self, timeout: float = 120.0) -> None:
        self._halt.set()
        self.join(timeout)

    def run(self) -> None:
        try:
            while not self._halt.is_set():
                self._makers[self.rng.choice(self.kinds)]()
                self._halt.wait(self.rng.uniform(1.0, 5.0))
        except BaseException as exc:  # reported by the test: a scheduler that died stops making faults
            self.errors.append(exc)

    def counts(self) -> Counter[str]:
        """Faults per kind, and broker faults per kind of target (``kill_broker:coordinator`` ...)."""
        out: Counter[str] = Counter(f.kind for f in self.faults)
        out.update(f"{f.kind}:{f.why.split(' ')[0]}" for f in self.faults if f.node is not None)
        return out

    def _log(self, kind: str, target: str, why: str = "", wall: float | None = None,
             node: int | None = None) -> None:
        """A fault made at ``wall`` (time.time(); default now) and undone now."""
        now = time.time()
        at_s = time.monotonic() - self._started_at - (now - (wall or now))
        self.faults.append(BrokerFault(at_s, kind, target, why, wall or now, now, node))

    def _note(self, text: str) -> None:
        self.notes.append(f"{time.monotonic() - self._started_at:7.1f}s {text}")

    # -- the faults ----------------------------------------------------------------------------------------

    def _heal(self) -> None:
        waited = self.cluster.wait_for(lambda: self.cluster.healthy(self.topics), self.heal_timeout_s,
                                       "every node live and every replica in sync")
        if waited > 1.0:
            self._note(f"cluster healed after {waited:.1f}s")

    def _choose_target(self) -> tuple[int, str]:
        """A node to hit: a coordinator or a leader of the workload first."""
        how = self.rng.random()
        node = self.rng.choice(sorted(self.cluster.nodes))
        try:
            if how < 0.4:
                tid = self.rng.choice(self.transactional_ids)
                return self.cluster.coordinator(tid), f"coordinator of {tid}"
            if how < 0.8:
                topic, partition = self.rng.choice(self.partitions)
                return self.cluster.leader(topic, partition), f"leader of {topic}-{partition}"
        except ConnectionError as exc:  # e.g. a pipeline instance that has not initialized yet
            self._note(f"no target found ({exc}); a random node instead")
        return node, "random node"

    def _hold(self, seconds: float) -> None:
        """Keep a broker fault for ``seconds`` (less if stopped); now and then kill a producer meanwhile."""
        if self.producers and "kill_producer" in self.kinds and self.rng.random() < 0.3:
            before = self.rng.uniform(0.0, seconds)
            if self._halt.wait(before):
                return
            self._kill_producer()
            seconds -= before
        self._halt.wait(max(0.0, seconds))

    def _kill_broker(self) -> None:
        self._heal()
        node, why = self._choose_target()
        wall = self.cluster.kill(node)
        held = self.rng.uniform(2.0, 15.0)
        self._hold(held)
        self._log("kill_broker", f"node {node}, down {held:.1f}s", why, wall, node)
        took = self.cluster.restart(node)
        self._note(f"node {node} restarted, live again in {took:.1f}s")

    def _pause_broker(self) -> None:
        self._heal()
        node, why = self._choose_target()
        wall = self.cluster.pause(node)
        held = self.rng.uniform(3.0, 20.0)
        self._hold(held)
        self.cluster.resume(node)
        self._log("pause_broker", f"node {node} for {held:.1f}s", why, wall, node)

    def _pause_coordinator(self) -> None:
        self._heal()
        node, why = self._choose_coordinator()
        wall = self.cluster.pause(node)
        held = self.rng.uniform(10.0, 20.0)
        self._hold(held)
        self.cluster.resume(node)
        self._log("pause_coordinator", f"node {node} for {held:.1f}s", why, wall, node)

    def _choose_coordinator(self) -> tuple[int, str]:
        """The coordinator of a transactional id of the workload, or of the pipeline's group."""
        groups = self.groups if self.rng.random() < 0.3 else []
        try:
            if groups:
                group = self.rng.choice(groups)
                return self.cluster.coordinator(group, key_type=0), f"coordinator of group {group}"
            tid = self.rng.choice(self.transactional_ids)
            return self.cluster.coordinator(tid), f"coordinator of {tid}"
        except ConnectionError as exc:
            self._note(f"no coordinator found ({exc}); a random node instead")
            return self.rng.choice(sorted(self.cluster.nodes)), "random node"

    def _kill_producer(self) -> None:
        alive = [p for p in self.producers if p.alive]
        if not alive:
            return
        producer = self.rng.choice(alive)
        producer.kill()
        self._log("kill_producer", producer.name)
        self._halt.wait(self.rng.uniform(0.0, 2.0))
        producer.start()

    def calm_down(self) -> None:
        """Every node running again, the cluster healed."""
        for node in self.cluster.nodes.values():
            if node.state == "paused":
                self.cluster.resume(node.node_id)
            elif node.state == "killed":
                self.cluster.restart(node.node_id)
        self._heal()
