"""Rebalance pauses of exactly-once pipelines: our TransactionalProcessor under the classic group protocol and
the consumer protocol (KIP-848), against confluent-kafka's and the Java client's KIP-848 loops, issue 41.

The scenario (the issue's): 12 input partitions fed at a steady rate (2,000 inputs/s), members committing at
500 inputs or 100 ms. Two members run; a third joins; one leaves gracefully; one is killed (``SIGKILL``: no
commit, no leave). Then the same with one *slow* member (1.5 s per poll): a member joins, then leaves. For
each change at time T:

- ``kept_pause_s``: the longest time a partition that did NOT change owner went without committed output,
  over [T - 1 s, T + settle] (the steady state is a commit per 100 ms); for the slow scenario, over the
  partitions of the members that are not slow;
- ``steady_s``: the longest such gap of any partition over 2 s before the first change, when nothing
  changes: the noise floor (commit cadence, the monitor's polling, the machine's load);
- ``moved_resume_s``: the time from T until the last of the partitions that changed owner had committed
  output from its new owner (the whole window when one had none); for the slow scenario, of the
  partitions taken by members that are not slow (the slow one, behind on its input, may not advance every
  partition it owns within the window at all).

One measurement for every client: each member is a process of its own (``_rebalance_member.py`` for ours
and confluent-kafka's, ``java/RebalanceMember.java`` for the Java client's) that writes every input's value
prefixed by its name to the same partition of an output topic; this script's *monitor*, one read_committed
reader of the whole output topic, records when each partition's committed output becomes visible and
whose it is. So "committed output" is what a downstream read_committed reader sees, the same reader for
every client. Members report their assignment as JSON lines on stdout (a partition's owner after a change
is its member's own assignment: a slow member may not have committed a partition it took within the
window); T is when the driver closes a member's stdin (leave) or kills it, or when a joining member says
it is about to join (after its interpreter or JVM started). CPU per input is each member's whole process
(``wait4``'s rusage) over the inputs its transactions committed.

Variants: ``classic-static`` (the processor's default: group instance id = transactional id),
``classic-dynamic``, ``consumer`` (``group_protocol="consumer"``, revoked transactions committed first),
``consumer-abort`` (``commit_on_revocation=False``), ``confluent`` (confluent-kafka 2.16, librdkafka's
``group.protocol=consumer``) and ``java`` (kafka-clients of ``--kafka-home``, ``group.protocol=consumer``).
The peers commit the open transaction when partitions are revoked and abort it when they are lost. Each
variant in turn, alternated over ``--rounds``.

Run: ``python benchmarks/rebalance_pause.py --kafka-home /path/to/kafka_2.13-4.1.0`` (a node of its own
whose consumer protocol heartbeats every 500 ms - ``--heartbeat-ms`` - with a 6 s session, and the
classic members heartbeating every 500 ms with a 6 s session: the same pace for both), ``--bootstrap``
for a running cluster (``--java-classpath`` or ``$KAFKA_HOME`` for the Java member), or nothing for an
in-process MockCluster (a quick look; its consumer-protocol coordinator is ours, so the peers' numbers
there say little). Results are in benchmarks/README.md ("Rebalance pauses").
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
for _path in (HERE.parent, HERE):
    if str(_path) not in sys.path:  # run as a script from a source tree
        sys.path.insert(0, str(_path))

import _java  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

PARTITIONS = 12
RATE = 2000  # inputs per second
SESSION_MS = 6000
#: a killed member's open transaction holds its partitions' offsets (UNSTABLE_OFFSET_COMMIT for the new
#: owner, KIP-447) until the coordinator aborts it after this long
TXN_TIMEOUT_MS = 10_000
OUR_VARIANTS = ("classic-static", "classic-dynamic", "consumer", "consumer-abort")
VARIANTS = (*OUR_VARIANTS, "confluent", "java")
CHANGES = ("join", "leave", "kill", "slow_join", "slow_leave")
MEMBER = HERE / "_rebalance_member.py"
HEARTBEAT_S = 0.5  # --heartbeat-ms
SLOW_S = 1.5  # the slow member's time per batch (_rebalance_member.SLOW_S)


class Commits:
    """Committed output as the monitor saw it: (time, member, partitions that showed new output)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[float, str, frozenset[int]]] = []

    def add(self, t: float, name: str, parts: frozenset[int]) -> None:
        with self.lock:
            self.events.append((t, name, parts))

    def owners(self, before: float) -> dict[int, str]:
        """Each partition's member of the last committed output before ``before``."""
        with self.lock:
            events = list(self.events)
        owners: dict[int, str] = {}
        for t, name, parts in events:
            if t < before:
                owners.update(dict.fromkeys(parts, name))
        return owners

    def longest_gap(self, start: float, end: float) -> float:
        """The longest time any partition went without committed output over [start, end]: the steady
        state's noise floor (commit cadence, the monitor's polling, the machine's load)."""
        with self.lock:
            events = [e for e in self.events if start <= e[0] <= end]
        gap = 0.0
        for p in range(PARTITIONS):
            times = [start] + [t for t, _, parts in events if p in parts] + [end]
            gap = max(gap, max(b - a for a, b in itertools.pairwise(times)))
        return round(gap, 3)

    def measure(self, change_at: float, settle_until: float, after_owners: dict[int, str],
                kept_of: set[str] | None = None) -> dict[str, Any]:
        """The change at ``change_at``, over the window up to ``settle_until``; ``after_owners``: each
        partition's owner at the end (the members' assignments: a partition a slow member took may
        not have been committed by it yet)."""
        before = self.owners(before=change_at)
        with self.lock:
            events = [e for e in self.events if change_at - 1.0 <= e[0] <= settle_until]
        kept = {p for p in range(PARTITIONS)
                if before.get(p) is not None and before.get(p) == after_owners.get(p)
                and (kept_of is None or before[p] in kept_of)}
        # moved: another owner after the change, or none yet (not advanced at all since: not resumed)
        moved = {p for p in range(PARTITIONS) if before.get(p) != after_owners.get(p)}
        pause = 0.0
        for p in kept:
            times = [change_at - 1.0] + [t for t, _, parts in events if p in parts] + [settle_until]
            pause = max(pause, max(b - a for a, b in itertools.pairwise(times)))
        resume = 0.0
        for p in moved:
            if kept_of is not None and after_owners.get(p) not in kept_of:
                continue  # taken by the slow member (or by nobody yet): its own pace, not a pause
            firsts = [t for t, name, parts in events
                      if t > change_at and p in parts and name == after_owners.get(p)]
            resume = max(resume, (min(firsts) - change_at) if firsts else settle_until - change_at)
        return {"kept_pause_s": round(pause, 3), "moved_resume_s": round(resume, 3), "kept": len(kept),
                "moved": len(moved)}


class Monitor:
    """One read_committed reader of the whole output topic: when each partition's committed output became
    visible, and whose it was (the member name before the value's first ``:``)."""

    def __init__(self, bootstrap: str, topic: str, commits: Commits) -> None:
        self._consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                       enable_auto_commit=False, fetch_max_wait_ms=20,
                                       max_poll_records=100_000)
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        self._consumer.assign(tps)
        self._consumer.seek_to_beginning(*tps)
        self._commits = commits
        #: (time, partition, first offset, last offset, members) per partition and poll, for --trace-dir
        self.trace: list[tuple[float, int, int, int, list[str]]] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="monitor")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            batches = self._consumer.poll(timeout_ms=50)
            now = time.monotonic()
            seen: dict[str, set[int]] = {}
            for tp, records in batches.items():
                for r in records:
                    seen.setdefault(r.value.split(b":", 1)[0].decode(), set()).add(tp.partition)
                if self.trace is not None:
                    self.trace.append((now, tp.partition, records[0].offset, records[-1].offset,
                                       sorted({r.value.split(b":", 1)[0].decode() for r in records})))
            for name, parts in seen.items():
                self._commits.add(now, name, frozenset(parts))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


class Feeder:
    def __init__(self, bootstrap: str, topic: str) -> None:
        self._producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
        self._topic = topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        sent = 0
        started = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - started) * RATE)
            while sent < due:
                self._producer.send(self._topic, value=str(sent).encode(), partition=sent % PARTITIONS)
                sent += 1
            self._stop.wait(0.005)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._producer.close(10)


TXN_MS = 100  # max_txn_time_ms (--max-txn-ms)


class Member:
    """One member process and what it reported (its events, read from its stdout on a thread)."""

    def __init__(self, name: str, command: list[str], log: Path) -> None:
        self.name = name
        self.assigned: set[int] = set()
        self.inputs = 0
        self.cpu_s: float | None = None
        self.failures: list[str] = []
        self.events: list[dict[str, Any]] = []  # every event it reported (--trace-dir)
        self.ready = threading.Event()
        self.ready_at = 0.0
        self._log = log.open("wb")
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True,
                                        name=f"{name}-events")
        self._reader.start()

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a library's own line on stdout
            self.events.append(event)
            ev = event.get("ev")
            if ev == "ready":
                self.ready_at = event["t"] / 1e9
                self.ready.set()
            elif ev == "assigned":
                self.assigned = set(event["partitions"])
            elif ev == "commit":
                self.inputs += event.get("inputs", 0)
            elif ev == "fail":
                self.failures.append(event.get("error", ""))

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    def _reap(self, bound_s: float) -> None:
        """Wait for the process (``wait4``: its CPU time too), killing it after ``bound_s``."""
        deadline = time.monotonic() + bound_s
        while self.proc.returncode is None:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.cpu_s = usage.ru_utime + usage.ru_stime
                break
            if time.monotonic() > deadline:
                self.proc.kill()
                deadline = float("inf")
            time.sleep(0.02)  # polling a child's exit
        self._reader.join(5)
        self._log.close()

    def leave(self, bound_s: float = 30.0) -> None:
        """A graceful stop: close stdin; the member commits, leaves its group and exits."""
        if not self.alive:
            return
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        self._reap(bound_s)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self._reap(10.0)


def member_command(variant: str, bootstrap: str, group: str, name: str, in_topic: str, out_topic: str,
                   slow: bool, java: tuple[str, Path] | None) -> list[str]:
    if variant == "java":
        assert java is not None
        return _java.rebalance_member_command(java[0], java[1], bootstrap, group, name, in_topic, out_topic,
                                              slow, TXN_MS)
    return [sys.executable, str(MEMBER), "--variant", variant, "--bootstrap", bootstrap, "--group", group,
            "--name", name, "--input", in_topic, "--output", out_topic, "--max-txn-ms", str(TXN_MS)] + (
        ["--slow"] if slow else [])


class Fleet:
    def __init__(self, variant: str, bootstrap: str, in_topic: str, out_topic: str, log_dir: Path,
                 java: tuple[str, Path] | None, trace: bool = False) -> None:
        self.variant, self.bootstrap, self.in_topic, self.out_topic = variant, bootstrap, in_topic, out_topic
        self.group = f"pause-{variant}-{uuid.uuid4().hex[:6]}"
        self.log_dir, self.java = log_dir, java
        self.commits = Commits()
        self.monitor = Monitor(bootstrap, out_topic, self.commits)
        if trace:
            self.monitor.trace = []
        self.changes: list[tuple[str, float]] = []
        self.members: dict[str, Member] = {}

    def start(self, name: str, slow: bool = False) -> Member:
        command = member_command(self.variant, self.bootstrap, self.group, name, self.in_topic,
                                 self.out_topic, slow, self.java)
        member = Member(name, command, self.log_dir / f"{self.group}-{name}.log")
        self.members[name] = member
        if not member.ready.wait(60):
            raise RuntimeError(f"{self.variant}: member {name} did not start (see {self.log_dir})")
        return member

    def settled(self, members: set[str], window_s: float = 1.0, bound_s: float = 60.0) -> None:
        """Until every partition had committed output of one of ``members`` in the last ``window_s``."""
        deadline = time.monotonic() + bound_s
        while time.monotonic() < deadline:
            now = time.monotonic()
            with self.commits.lock:
                recent = {p for t, name, parts in self.commits.events
                          if t > now - window_s and name in members for p in parts}
            if recent == set(range(PARTITIONS)):
                return
            time.sleep(0.1)  # a measurement's pace: looking at commits, not synchronising with them
        raise RuntimeError(f"{self.variant}: the group did not settle on {sorted(members)}")

    def owners_now(self) -> dict[int, str]:
        """Each partition's owner now, by the members' own assignments."""
        return {p: name for name, member in self.members.items() if member.alive for p in member.assigned}

    def measure(self, change: str, change_at: float, kept_of: set[str] | None = None) -> dict[str, Any]:
        self.changes.append((change, change_at))
        return self.commits.measure(change_at, time.monotonic(), self.owners_now(), kept_of)

    def running(self, members: set[str], window_s: float = 5.0, bound_s: float = 60.0) -> None:
        """Until each of ``members`` had committed output within ``window_s`` and every partition had
        some since the fleet started (a slow member, behind on its input, need not advance all of its
        partitions in every window)."""
        deadline = time.monotonic() + bound_s
        while time.monotonic() < deadline:
            now = time.monotonic()
            with self.commits.lock:
                recent = {name for t, name, _ in self.commits.events if t > now - window_s}
                ever = {p for _, _, parts in self.commits.events for p in parts}
            if members <= recent and ever == set(range(PARTITIONS)):
                return
            time.sleep(0.1)  # a measurement's pace: looking at commits, not synchronising with them
        raise RuntimeError(f"{self.variant}: the group did not run on {sorted(members)}")

    def stop_all(self) -> dict[str, Any]:
        """Stop every member (gracefully), then the monitor; the members' CPU, inputs and failures."""
        for member in self.members.values():
            member.leave()
        self.monitor.stop()
        cpu = sum(m.cpu_s or 0.0 for m in self.members.values())
        inputs = sum(m.inputs for m in self.members.values())
        if self.monitor.trace is not None:
            trace = {"variant": self.variant, "changes": self.changes, "output": self.monitor.trace,
                     "members": {name: m.events for name, m in self.members.items()}}
            (self.log_dir / f"{self.group}.trace.json").write_text(json.dumps(trace))
        return {"cpu_s": round(cpu, 3), "inputs": inputs,
                "failures": [f"{m.name}: {f}" for m in self.members.values() for f in m.failures][:20]}


def topics(bootstrap: str) -> tuple[str, str]:
    names = (f"pause-in-{uuid.uuid4().hex[:6]}", f"pause-out-{uuid.uuid4().hex[:6]}")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in names])
    admin.close()
    return names


def run_variant(variant: str, bootstrap: str, settle_s: float, kill_settle_s: float, log_dir: Path,
                java: tuple[str, Path] | None, rng: random.Random, trace: bool = False) -> dict[str, Any]:
    """One round of ``variant``. Each change comes a random while (``rng``: the same draws for every
    variant of a round) after the group settled: the members' heartbeats and, in the slow scenario, the
    slow member's 1.5 s batches are phase-locked to when it settled, and a change at a fixed offset from
    them would measure one phase only (the moved partitions' resume time depends on it)."""
    out: dict[str, Any] = {}
    beat = rng.uniform  # beat(0, HEARTBEAT_S): within one heartbeat interval; (0, SLOW_S): one slow batch
    in_topic, out_topic = topics(bootstrap)
    feeder = Feeder(bootstrap, in_topic)
    fleet = Fleet(variant, bootstrap, in_topic, out_topic, log_dir, java, trace)
    try:
        fleet.start("p1")
        fleet.start("p2")
        fleet.settled({"p1", "p2"})
        time.sleep(3)
        out["steady_s"] = fleet.commits.longest_gap(time.monotonic() - 2.0, time.monotonic())
        time.sleep(beat(0, HEARTBEAT_S))
        t = fleet.start("p3").ready_at
        time.sleep(settle_s)
        out["join"] = fleet.measure("join", t)
        fleet.settled({"p1", "p2", "p3"})
        time.sleep(beat(0, HEARTBEAT_S))
        t = time.monotonic()
        fleet.members["p1"].leave()
        time.sleep(max(0.0, t + settle_s - time.monotonic()))
        out["leave"] = fleet.measure("leave", t)
        fleet.settled({"p2", "p3"})
        time.sleep(beat(0, HEARTBEAT_S))
        t = time.monotonic()
        fleet.members["p2"].kill()
        time.sleep(max(0.0, t + kill_settle_s - time.monotonic()))
        out["kill"] = fleet.measure("kill", t)
    finally:
        first = fleet.stop_all()
        feeder.stop()
    in_topic, out_topic = topics(bootstrap)
    feeder = Feeder(bootstrap, in_topic)
    slow = Fleet(variant, bootstrap, in_topic, out_topic, log_dir, java, trace)
    try:
        slow.start("s1", slow=True)
        slow.start("s2")
        slow.running({"s1", "s2"})
        time.sleep(2 + beat(0, SLOW_S))
        t = slow.start("s3").ready_at
        time.sleep(settle_s + 3)
        out["slow_join"] = slow.measure("slow_join", t, kept_of={"s2", "s3"})
        time.sleep(beat(0, SLOW_S))
        t = time.monotonic()
        slow.members["s3"].leave()
        time.sleep(max(0.0, t + settle_s + 3 - time.monotonic()))
        out["slow_leave"] = slow.measure("slow_leave", t, kept_of={"s2"})
    finally:
        second = slow.stop_all()
        feeder.stop()
    out["cpu_s"] = first["cpu_s"] + second["cpu_s"]
    out["inputs"] = first["inputs"] + second["inputs"]
    out["cpu_us_per_input"] = round(out["cpu_s"] / max(out["inputs"], 1) * 1e6, 1)
    out["failures"] = first["failures"] + second["failures"]
    return out


@contextmanager
def cluster(args: argparse.Namespace) -> Iterator[str]:
    if args.bootstrap:
        yield args.bootstrap
        return
    if args.kafka_home:
        from tests._support.kip848_broker import Kip848KafkaHomeBroker

        workdir = Path(tempfile.mkdtemp(prefix="txnproducer-pause-"))
        node = Kip848KafkaHomeBroker(Path(args.kafka_home), workdir, heartbeat_ms=args.heartbeat_ms,
                                     session_ms=SESSION_MS)
        try:
            node.start()
            yield node.bootstrap
        finally:
            node.stop()
            shutil.rmtree(workdir, ignore_errors=True)
        return
    from txnproducer.testing import MockCluster

    config = {"group.consumer.heartbeat.interval.ms": args.heartbeat_ms,
              "group.consumer.session.timeout.ms": SESSION_MS}
    with MockCluster(num_brokers=1, consumer_group_config=config) as mock:
        yield mock.bootstrap_servers


def java_member(args: argparse.Namespace, variants: list[str], build_dir: Path) -> tuple[str, Path] | None:
    """The Java member's class path and compiled classes, if ``java`` is among ``variants``."""
    if "java" not in variants:
        return None
    classpath = _java.java_classpath(args.java_classpath, args.kafka_home or os.environ.get("KAFKA_HOME"))
    return classpath, _java.compile_bench(classpath, build_dir, _java.REBALANCE_SOURCE)


def cell(runs: list[dict[str, Any]], change: str, key: str) -> str:
    values = [r[change][key] for r in runs]
    median = statistics.median(values)
    if len(values) == 1:
        return f"{median:.2f}"
    return f"{median:.2f} ({min(values):.2f}-{max(values):.2f})"


def table(results: dict[str, list[dict[str, Any]]]) -> str:
    lines = ["| variant | steady | " + " | ".join(CHANGES) + " | CPU us/input |",
             "|---|" + "---|" * (len(CHANGES) + 2)]
    for variant, runs in results.items():
        if not runs:
            continue
        cells = [f"{cell(runs, c, 'kept_pause_s')} / {cell(runs, c, 'moved_resume_s')}" for c in CHANGES]
        cpu = statistics.median(r["cpu_us_per_input"] for r in runs)
        steady = statistics.median(r.get("steady_s", 0.0) for r in runs)
        lines.append(f"| {variant} | {steady:.2f} | " + " | ".join(cells) + f" | {cpu:.0f} |")
    lines.append("\n(steady: the longest gap with no change, median; per change: kept partitions' longest "
                 "pause / moved partitions' time to resume, seconds: median (range) of the rounds; CPU: the "
                 "members' processes per committed input, median)")
    return "\n".join(lines)


def verdict(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The issue's criterion, on the kept partitions' median pauses: ours KIP-848 <= confluent's and
    Java's in every change, <= our classic (static and dynamic) in the healthy changes, and at most half
    of our classic's pause with a slow member."""
    def med(variant: str, change: str) -> float | None:
        runs = results.get(variant) or []
        return statistics.median(r[change]["kept_pause_s"] for r in runs) if runs else None

    out: list[str] = []
    for change in CHANGES:
        ours = med("consumer", change)
        if ours is None:
            return out
        for peer in ("confluent", "java"):
            theirs = med(peer, change)
            if theirs is not None:
                out.append(f"{change}: consumer {ours:.2f} <= {peer} {theirs:.2f}: {ours <= theirs}")
        for classic in ("classic-static", "classic-dynamic"):
            theirs = med(classic, change)
            if theirs is None:
                continue
            if change.startswith("slow"):
                half = theirs / 2
                out.append(f"{change}: consumer {ours:.2f} <= half {classic} {half:.2f}: {ours <= half}")
            else:
                out.append(f"{change}: consumer {ours:.2f} <= {classic} {theirs:.2f}: {ours <= theirs}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", help="start a Kafka node of its own from this distribution")
    parser.add_argument("--bootstrap", help="a running cluster")
    parser.add_argument("--java-classpath",
                        help="the Java member's client jars (default: <kafka home>/libs/*)")
    parser.add_argument("--heartbeat-ms", type=int, default=500,
                        help="the consumer protocol's heartbeat interval")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--settle-s", type=float, default=6.0)
    parser.add_argument("--max-txn-ms", type=int, default=100,
                        help="the members' transaction age (the issue's 100; the processor's default: 1000)")
    parser.add_argument("--log-dir", type=Path, help="the members' stderr (default: a temporary directory)")
    parser.add_argument("--trace", action="store_true",
                        help="also write each fleet's output times and member events to the log directory")
    parser.add_argument("--seed", type=int, default=0,
                        help="the changes' random delays (the same for every variant of a round)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the Kafka node on the way out
    global TXN_MS, HEARTBEAT_S
    TXN_MS = args.max_txn_ms
    HEARTBEAT_S = args.heartbeat_ms / 1000
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {', '.join(VARIANTS)}")
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="rebalance-pause-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"members' logs: {log_dir}", flush=True)
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="rebalance-pause-java-") as build:
        java = java_member(args, variants, Path(build))
        with cluster(args) as bootstrap:
            for round_ in range(args.rounds):
                for variant in variants:
                    kill_settle = (SESSION_MS + TXN_TIMEOUT_MS) / 1000 + args.settle_s
                    load = os.getloadavg()[0]
                    rng = random.Random(f"{args.seed}-{round_}")
                    result = run_variant(variant, bootstrap, args.settle_s, kill_settle, log_dir, java, rng,
                                         args.trace)
                    result["load_avg_1m"] = round((load + os.getloadavg()[0]) / 2, 2)
                    results[variant].append(result)
                    print(json.dumps({"round": round_, "variant": variant, **result}), flush=True)
                    if args.json:
                        args.json.write_text(json.dumps(results, indent=2))
    print("\n" + table(results))
    print("\n".join(["", *verdict(results)]))


if __name__ == "__main__":
    main()
