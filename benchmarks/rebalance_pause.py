"""Rebalance pauses of TransactionalProcessor: the classic group protocol against the consumer protocol
(KIP-848), issue 41.

The scenario (the issue's): 12 input partitions fed at a steady rate (2,000 inputs/s), processors
committing at 500 inputs or 100 ms. Two processors run; a third joins; one leaves gracefully
(``stop(leave_group=True)``); one is killed (``simulate_crash``: no commit, no leave). Then the same
with one *slow* member (its transform takes 1.5 s per poll): a member joins, then leaves. For each
change at time T, from every processor's ``on_commit`` (which partitions each commit moved, and when):

- ``kept_pause_s``: the longest time a partition that did NOT change owner went without a committed
  transaction advancing it, over [T - 1 s, T + settle] (the steady state is one commit per 100 ms);
  for the slow scenario, over the partitions of the members that are not slow;
- ``moved_resume_s``: the time from T until the last of the partitions that changed owner was
  advanced by a commit of its new owner (the whole window when one was not); for the slow scenario,
  of the partitions taken by members that are not slow (the slow one, behind on its input, may not
  advance every partition it owns within the window at all).

Variants: ``classic-static`` (the processor's default: group instance id = transactional id),
``classic-dynamic``, ``consumer`` (``group_protocol="consumer"``, revoked transactions committed first),
``consumer-abort`` (``commit_on_revocation=False``). Each in turn, alternated over ``--rounds``.

Run: ``python benchmarks/rebalance_pause.py --kafka-home /path/to/kafka_2.13-4.1.0`` (a node of its own
whose consumer protocol heartbeats every 500 ms - ``--heartbeat-ms`` - with a 6 s session, and the
classic members heartbeating every 500 ms with a 6 s session: the same pace for both), ``--bootstrap``
for a running cluster, or nothing for an in-process MockCluster (a quick look). Results are in
benchmarks/README.md ("Rebalance pauses").
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from txnproducer.eos import OutputRecord, TransactionalProcessor

PARTITIONS = 12
RATE = 2000  # inputs per second
SESSION_MS = 6000
#: a killed member's open transaction holds its partitions' offsets (UNSTABLE_OFFSET_COMMIT for the new
#: owner, KIP-447) until the coordinator aborts it after this long
TXN_TIMEOUT_MS = 10_000
VARIANTS = ("classic-static", "classic-dynamic", "consumer", "consumer-abort")


class Commits:
    """Every processor's commits: (time, processor, partitions advanced)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[float, str, frozenset[int]]] = []
        self.last: dict[int, int] = {}

    def callback(self, name: str) -> Any:
        def on_commit(offsets: dict[Any, Any]) -> None:
            now = time.monotonic()
            with self.lock:
                moved = frozenset(tp.partition for tp, o in offsets.items()
                                  if o.offset > self.last.get(tp.partition, -1))
                for tp, o in offsets.items():
                    self.last[tp.partition] = max(self.last.get(tp.partition, -1), o.offset)
                if moved:
                    self.events.append((now, name, moved))
        return on_commit

    def owners(self, before: float | None = None, after: float | None = None) -> dict[int, str]:
        """Each partition's last committer before ``before``, or first committer after ``after``."""
        with self.lock:
            events = list(self.events)
        owners: dict[int, str] = {}
        if before is not None:
            for t, name, parts in events:
                if t < before:
                    owners.update(dict.fromkeys(parts, name))
        else:
            assert after is not None
            for t, name, parts in events:
                if t > after:
                    for p in parts:
                        owners.setdefault(p, name)
        return owners

    def measure(self, change_at: float, settle_until: float, after_owners: dict[int, str],
                kept_of: set[str] | None = None) -> dict[str, Any]:
        """The change at ``change_at``, over the window up to ``settle_until``; ``after_owners``: each
        partition's owner at the end (the processors' assignments: a partition a slow member took may
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


def processor(variant: str, bootstrap: str, group: str, name: str, in_topic: str, out_topic: str,
              commits: Commits, slow: bool) -> TransactionalProcessor:
    consumer: dict[str, Any] = {"bootstrap_servers": bootstrap, "group_id": group,
                                "max_poll_interval_ms": 30000, "fetch_max_wait_ms": 50,
                                "retry_backoff_ms": 50}
    extra: dict[str, Any] = {}
    if variant.startswith("classic"):
        consumer.update(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500)
        if variant == "classic-dynamic":
            extra["group_instance_id"] = False
    else:
        consumer["group_protocol"] = "consumer"
        extra["commit_on_revocation"] = variant == "consumer"

    def transform(records: list[Any]) -> list[OutputRecord]:
        if slow:
            time.sleep(1.5)  # a slow member: 1.5 s per poll
        return [OutputRecord(out_topic, value=r.value, partition=r.partition) for r in records]

    return TransactionalProcessor(in_topic, consumer_config=consumer,
                                  producer_config={"bootstrap_servers": bootstrap, "linger_ms": 2,
                                                   "transaction_timeout_ms": TXN_TIMEOUT_MS},
                                  instance_name=name, transform_batch=transform, max_records_per_txn=500,
                                  max_txn_time_ms=TXN_MS, poll_timeout_ms=50,
                                  on_commit=commits.callback(name), **extra)


class Fleet:
    def __init__(self, variant: str, bootstrap: str, in_topic: str, out_topic: str) -> None:
        self.variant, self.bootstrap, self.in_topic, self.out_topic = variant, bootstrap, in_topic, out_topic
        self.group = f"pause-{variant}-{uuid.uuid4().hex[:6]}"
        self.commits = Commits()
        self.procs: dict[str, TransactionalProcessor] = {}
        self.threads: dict[str, threading.Thread] = {}

    def start(self, name: str, slow: bool = False) -> None:
        proc = processor(self.variant, self.bootstrap, self.group, name, self.in_topic, self.out_topic,
                         self.commits, slow)
        self.procs[name] = proc
        thread = threading.Thread(target=proc.run, daemon=True, name=name)
        self.threads[name] = thread
        thread.start()

    def settled(self, members: set[str], window_s: float = 1.0, bound_s: float = 60.0) -> None:
        """Until every partition was advanced by one of ``members`` in the last ``window_s``."""
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
        """Each partition's owner now, by the processors' own assignments."""
        return {tp.partition: name for name, proc in self.procs.items() if not proc.closed
                for tp in proc.assignment()}

    def measure(self, change_at: float, kept_of: set[str] | None = None) -> dict[str, Any]:
        return self.commits.measure(change_at, time.monotonic(), self.owners_now(), kept_of)

    def running(self, members: set[str], window_s: float = 5.0, bound_s: float = 60.0) -> None:
        """Until each of ``members`` committed within ``window_s`` and every partition was committed since
        the fleet started (a slow member, behind on its input, need not advance all of its partitions in
        every window)."""
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

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.stop(timeout=30, leave_group=True)


def topics(bootstrap: str) -> tuple[str, str]:
    names = (f"pause-in-{uuid.uuid4().hex[:6]}", f"pause-out-{uuid.uuid4().hex[:6]}")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1) for t in names])
    admin.close()
    return names


def run_variant(variant: str, bootstrap: str, settle_s: float, kill_settle_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    in_topic, out_topic = topics(bootstrap)
    feeder = Feeder(bootstrap, in_topic)
    fleet = Fleet(variant, bootstrap, in_topic, out_topic)
    try:
        fleet.start("p1")
        fleet.start("p2")
        fleet.settled({"p1", "p2"})
        time.sleep(2)
        t = time.monotonic()
        fleet.start("p3")
        time.sleep(settle_s)
        out["join"] = fleet.measure(t)
        fleet.settled({"p1", "p2", "p3"})
        t = time.monotonic()
        fleet.procs["p1"].stop(timeout=30, leave_group=True)
        time.sleep(settle_s)
        out["leave"] = fleet.measure(t)
        fleet.settled({"p2", "p3"})
        fleet.procs["p2"].simulate_crash("before_commit")
        fleet.threads["p2"].join(30)
        t = time.monotonic()
        time.sleep(kill_settle_s)
        out["kill"] = fleet.measure(t)
    finally:
        fleet.stop_all()
        feeder.stop()
    in_topic, out_topic = topics(bootstrap)
    feeder = Feeder(bootstrap, in_topic)
    slow = Fleet(variant, bootstrap, in_topic, out_topic)
    try:
        slow.start("s1", slow=True)
        slow.start("s2")
        slow.running({"s1", "s2"})
        time.sleep(2)
        t = time.monotonic()
        slow.start("s3")
        time.sleep(settle_s + 3)
        out["slow_join"] = slow.measure(t, kept_of={"s2", "s3"})
        t = time.monotonic()
        slow.procs["s3"].stop(timeout=30, leave_group=True)
        time.sleep(settle_s + 3)
        out["slow_leave"] = slow.measure(t, kept_of={"s2"})
    finally:
        slow.stop_all()
        feeder.stop()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka-home", help="start a Kafka node of its own from this distribution")
    parser.add_argument("--bootstrap", help="a running cluster")
    parser.add_argument("--heartbeat-ms", type=int, default=500,
                        help="the consumer protocol's heartbeat interval")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--settle-s", type=float, default=6.0)
    parser.add_argument("--max-txn-ms", type=int, default=100,
                        help="max_txn_time_ms (the issue's 100; the processor's default is 1000)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the Kafka node on the way out
    global TXN_MS
    TXN_MS = args.max_txn_ms
    variants = args.variants.split(",")
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    with cluster(args) as bootstrap:
        for round_ in range(args.rounds):
            for variant in variants:
                kill_settle = (SESSION_MS + TXN_TIMEOUT_MS) / 1000 + args.settle_s
                result = run_variant(variant, bootstrap, args.settle_s, kill_settle)
                results[variant].append(result)
                print(json.dumps({"round": round_, "variant": variant, **result}), flush=True)
    changes = ("join", "leave", "kill", "slow_join", "slow_leave")
    print("\n| variant | " + " | ".join(changes) + " |")
    print("|---|" + "---|" * len(changes))
    for variant, runs in results.items():
        cells = []
        for change in changes:
            pause = statistics.median(r[change]["kept_pause_s"] for r in runs)
            resume = statistics.median(r[change]["moved_resume_s"] for r in runs)
            cells.append(f"{pause:.2f} / {resume:.2f}")
        print(f"| {variant} | " + " | ".join(cells) + " |")
    print("\n(kept partitions' longest pause / moved partitions' time to resume, seconds, median of rounds)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
