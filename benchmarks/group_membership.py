"""Group membership: our own classic-protocol member against kafka-python's consumer coordinator.

What it measures, for the decision of issue 28 ("keep kafka-python's coordinator behind the new fetch
path, or speak the group protocol ourselves") - each client in turn, in this process, against one
broker (a MockCluster in a child process by default, ``--bootstrap`` for a real one):

- ``poll_us``: CPU of the calling thread per membership poll of a member that is stable and has
  nothing to do - what every consumer poll pays for group membership (ours: ``GroupMember.poll``;
  kafka-python: ``ConsumerCoordinator.poll``, what ``KafkaConsumer.poll`` runs each time);
- ``idle_cpu_ms_per_s``: process CPU per second while a stable member heartbeats and is polled every
  100 ms (the background cost: heartbeat and IO threads);
- ``join_ms``: a new member's time from its creation (bootstrap included) to its first assignment
  (one member, fresh group);
- ``restart_stall_ms``: two members share 6 partitions; one dies (no LeaveGroup) and is restarted at
  once - the time until the group owns every partition again. Dynamic members wait for the dead
  one's session to run out (``--session-timeout-ms``; the Java and kafka-python default is 45 s);
  static members (``group_instance_id``) should not wait at all. Measured for the non-leader and for
  the leader dying.

Run: ``python benchmarks/group_membership.py [--bootstrap HOST:PORT] [--reps 5] [--json out.json]``.
Results of the runs made for issue 28 are in benchmarks/README.md ("Group membership").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka import KafkaConsumer

from tests._support.kafka_python_groups import close_consumer_abruptly, rescue_lost_join
from txnproducer._internal.group import GroupMember, GroupSettings, connection_config
from txnproducer._internal.perf_clusters import mock_cluster_process

TOPIC = "group-bench"
PARTITIONS = 6
HEARTBEAT_MS = 500


class _NoHooks:
    def on_revoke(self, partitions: Any) -> None:
        pass

    def on_assign(self, partitions: Any) -> None:
        pass

    def on_lost(self, partitions: Any) -> None:
        pass


class Member:
    """One member of either kind, polled by ``poll()``; ``owned()`` is its assignment."""

    def __init__(self, kind: str, bootstrap: str, group: str, session_ms: int,
                 instance: str | None) -> None:
        self.kind = kind
        if kind == "txnproducer":
            settings = GroupSettings(group_id=group, group_instance_id=instance,
                                     session_timeout_ms=session_ms, heartbeat_interval_ms=HEARTBEAT_MS,
                                     max_poll_interval_ms=300_000)
            self._member: Any = GroupMember(settings, _NoHooks(),
                                            connection=connection_config(bootstrap, client_id="bench"))
            self._member.subscribe([TOPIC])
        else:
            self._consumer = KafkaConsumer(
                bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance, client_id="bench",
                session_timeout_ms=session_ms, heartbeat_interval_ms=HEARTBEAT_MS, enable_auto_commit=False)
            self._consumer.subscribe([TOPIC])
            self._consumer.topics()  # metadata before the join, as the processor does

    def poll(self, timeout_s: float = 0.0) -> None:
        if self.kind == "txnproducer":
            self._member.poll(time.monotonic() + timeout_s)
        else:
            self._consumer._coordinator.poll(timeout_ms=int(timeout_s * 1000))
            rescue_lost_join(self._consumer)

    def owned(self) -> frozenset[Any]:
        if self.kind == "txnproducer":
            return frozenset(self._member.assignment())
        return frozenset(self._consumer.assignment())

    def die(self) -> None:
        """The process dies: no LeaveGroup, the sockets close."""
        if self.kind == "txnproducer":
            self._member.close(0, leave_group=False)
        else:
            close_consumer_abruptly(self._consumer)

    def close(self) -> None:
        if self.kind == "txnproducer":
            self._member.close(5)
        else:
            self._consumer.close(timeout_ms=5000)


@contextlib.contextmanager
def polled(member: Member) -> Iterator[None]:
    """Poll ``member`` every 50 ms on a thread (as an application's loop would)."""
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            member.poll(0.05)
            stop.wait(0.05)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


def wait_until(done: Callable[[], bool], bound_s: float, poll: Callable[[], None] | None = None) -> float:
    started = time.monotonic()
    while not done():
        if time.monotonic() - started > bound_s:
            raise RuntimeError(f"not done within {bound_s} s")
        if poll is not None:
            poll()
        else:
            time.sleep(0.005)
    return time.monotonic() - started


def measure_join_and_poll(kind: str, bootstrap: str, calls: int) -> dict[str, float]:
    started = time.monotonic()
    member = Member(kind, bootstrap, f"bench-{uuid.uuid4().hex[:8]}", 10_000, None)
    try:
        wait_until(lambda: len(member.owned()) == PARTITIONS, 60, lambda: member.poll(0.05))
        join_s = time.monotonic() - started
        for _ in range(200):  # warm up
            member.poll(0.0)
        cpu = time.thread_time()
        for _ in range(calls):
            member.poll(0.0)
        poll_us = (time.thread_time() - cpu) / calls * 1e6
        window = 5.0
        cpu = time.process_time()
        end = time.monotonic() + window
        while time.monotonic() < end:
            member.poll(0.0)
            time.sleep(0.1)
        idle = (time.process_time() - cpu) / window * 1000
        return {"join_ms": join_s * 1000, "poll_us": poll_us, "idle_cpu_ms_per_s": idle}
    finally:
        member.close()


def measure_restart(kind: str, bootstrap: str, session_ms: int, static: bool, dying: str) -> float:
    group = f"bench-{uuid.uuid4().hex[:8]}"
    first = Member(kind, bootstrap, group, session_ms, "m-1" if static else None)
    wait_until(lambda: len(first.owned()) == PARTITIONS, 60, lambda: first.poll(0.05))
    second = Member(kind, bootstrap, group, session_ms, "m-2" if static else None)
    with polled(first):
        wait_until(lambda: len(second.owned()) == PARTITIONS // 2 and len(first.owned()) == PARTITIONS // 2,
                   60, lambda: second.poll(0.05))
    leader, follower = first, second  # the first member to join leads
    survivor, dead = (leader, follower) if dying == "follower" else (follower, leader)
    instance = ("m-2" if dying == "follower" else "m-1") if static else None
    dead.die()
    started = time.monotonic()
    restarted = Member(kind, bootstrap, group, session_ms, instance)
    try:
        with polled(survivor):
            def whole() -> bool:
                return len(restarted.owned() | survivor.owned()) == PARTITIONS and bool(restarted.owned())
            wait_until(whole, session_ms / 1000 * 3 + 30, lambda: restarted.poll(0.05))
        return (time.monotonic() - started) * 1000
    finally:
        restarted.close()
        survivor.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="a running cluster (default: a MockCluster in a child process)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--session-timeout-ms", type=int, default=10_000)
    parser.add_argument("--clients", default="txnproducer,kafka-python")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    clients = args.clients.split(",")
    cluster = (contextlib.nullcontext(args.bootstrap) if args.bootstrap
               else mock_cluster_process(brokers=1, partitions=PARTITIONS, topics=[TOPIC]))
    results: dict[str, dict[str, list[float]]] = {c: {} for c in clients}
    with cluster as bootstrap:
        for rep in range(args.reps):
            for kind in clients:  # alternated: A B A B ...
                row = results[kind]
                for key, value in measure_join_and_poll(kind, bootstrap, args.calls).items():
                    row.setdefault(key, []).append(value)
                for static in (False, True):
                    for dying in ("follower", "leader"):
                        key = f"restart_stall_ms[{'static' if static else 'dynamic'},{dying} dies]"
                        row.setdefault(key, []).append(
                            measure_restart(kind, bootstrap, args.session_timeout_ms, static, dying))
                print(f"rep {rep + 1}: {kind} done", file=sys.stderr, flush=True)
    summary = {kind: {key: statistics.median(values) for key, values in row.items()}
               for kind, row in results.items()}
    print(json.dumps({"session_timeout_ms": args.session_timeout_ms, "medians": summary, "runs": results},
                     indent=2))
    if args.json:
        args.json.write_text(json.dumps({"medians": summary, "runs": results}, indent=2))


if __name__ == "__main__":
    main()
