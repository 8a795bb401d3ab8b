"""CPU per phase of a transaction, per thread, with little distortion: where each microsecond goes.

    python benchmarks/phase_profile.py --bootstrap HOST:PORT [--scenario S1] [--num-records N]
    taskset -c 1 python benchmarks/phase_profile.py --bootstrap HOST:PORT --batch-size 65536

Why not cProfile (``profile_txnproducer.py``): it charges every Python call, so it inflates the
Sender's many small calls several times over and hides the system calls' share; its numbers are
shares, not microseconds. Here only a fixed list of phases is timed: each is wrapped in one
``time.thread_time_ns()`` pair (the thread's own CPU clock, about 0.3 us a pair; the total with and
without the wrappers is printed, so the cost of measuring is visible). Phases nest, so the
"inclusive" column of a phase contains the phases listed under it.

The workload is ``txnproducer.perf.run_workload`` (the loop every client runs in ``compare.py``),
after a warm-up of the same shape in the same process. Pin the client to one CPU and the broker to
another (``taskset``) for numbers that repeat.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _clients import Initialized  # noqa: E402

from txnproducer._internal import accel  # noqa: E402
from txnproducer.perf import TxnProducerClient, create_topic, run_workload  # noqa: E402

SCENARIOS = {"S1": (1000, 500_000), "S2": (1, 3_000), "S3": (10, 10_000)}

# (label, module, class, method): the Sender thread's phases, outermost first
SENDER_PHASES = [
    ("loop iteration (Sender.run_once)", "txnproducer._internal.sender", "Sender", "run_once"),
    ("  coordinator requests (EndTxn, ...)", "txnproducer._internal.sender", "Sender",
     "_maybe_send_transactional_request"),
    ("  produce: ready + drain + send", "txnproducer._internal.sender", "Sender", "_send_produce_data"),
    ("    accumulator.ready_and_drain (close batches)", "txnproducer._internal.batching.accumulator",
     "RecordAccumulator", "ready_and_drain"),
    ("    accumulator.ready (an older tree's)", "txnproducer._internal.batching.accumulator",
     "RecordAccumulator", "ready"),
    ("    accumulator.drain (an older tree's)", "txnproducer._internal.batching.accumulator",
     "RecordAccumulator", "drain"),
    ("    build and send a Produce request", "txnproducer._internal.sender", "Sender", "_send_produce"),
    ("  network poll", "txnproducer._internal.network.client", "NetworkClient", "poll"),
    ("    epoll_wait (selectors)", "selectors", "EpollSelector", "select"),
    ("    epoll_wait (network/poller.py)", "txnproducer._internal.network.poller", "Poller", "poll"),
    ("    read and handle answers", "txnproducer._internal.network.connection", "DirectConnection", "_read"),
    ("      Produce answer: complete batches", "txnproducer._internal.produce_outcomes", "ProduceOutcomes",
     "on_response"),
    ("      coordinator answer (EndTxn, ...)", "txnproducer._internal.txn.handler", "TxnRequestHandler",
     "handle_response"),
    ("  frame a request (every request, inside the above)", "txnproducer._internal.protocol.framing",
     "RequestFramer", "frame"),
    ("  write to the socket (every request, inside the above)", "txnproducer._internal.network.connection",
     "DirectConnection", "_flush"),
    ("  next coordinator request (TM, under its lock)", "txnproducer._internal.txn.manager",
     "TransactionManager", "next_request"),
    ("  complete an answer's batches (TM sequences, futures, memory)",
     "txnproducer._internal.produce_outcomes", "ProduceOutcomes", "complete_all"),
]
APP_PHASES = [
    ("begin_transaction()", "txnproducer.producer", "TransactionalProducer", "begin_transaction"),
    ("commit_transaction()", "txnproducer.producer", "TransactionalProducer", "commit_transaction"),
    ("accumulator.append (compiled: new batches only)", "txnproducer._internal.batching.accumulator",
     "RecordAccumulator", "append"),
    ("wake the Sender", "txnproducer._internal.network.client", "NetworkClient", "wakeup"),
]


class PhaseClock:
    """Thread CPU nanoseconds and calls per phase, per thread that ran it."""

    def __init__(self) -> None:
        self.ns: collections.Counter[tuple[str, str]] = collections.Counter()
        self.own_ns: collections.Counter[tuple[str, str]] = collections.Counter()  # minus nested phases
        self.calls: collections.Counter[tuple[str, str]] = collections.Counter()
        self._nested = threading.local()
        self._undo: list[Callable[[], None]] = []

    def wrap(self, thread: str, label: str, module: str, cls: str, method: str) -> None:
        try:  # a phase of another tree's code (compare an older commit's: its modules differ)
            owner = getattr(importlib.import_module(module), cls)
            original = owner.__dict__[method]
        except (ImportError, AttributeError, KeyError):
            return
        clock = time.thread_time_ns
        key = (thread, label)
        ns, own_ns, calls, nested = self.ns, self.own_ns, self.calls, self._nested

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            outer = getattr(nested, "ns", 0)
            nested.ns = 0
            start = clock()
            try:
                return original(*args, **kwargs)
            finally:
                spent = clock() - start
                ns[key] += spent
                own_ns[key] += spent - nested.ns
                calls[key] += 1
                nested.ns = outer + spent

        setattr(owner, method, timed)
        self._undo.append(lambda: setattr(owner, method, original))

    def reset(self) -> None:
        self.ns.clear()
        self.own_ns.clear()
        self.calls.clear()

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


def measure(bootstrap: str, per_txn: int, n: int, batch_size: int, timed: bool) -> tuple[Any, PhaseClock]:
    clock = PhaseClock()
    if timed:
        for label, module, cls, method in SENDER_PHASES:
            clock.wrap("Sender", label, module, cls, method)
        for label, module, cls, method in APP_PHASES:
            clock.wrap("application", label, module, cls, method)
    topic = f"phases-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 3)
    client = TxnProducerClient(bootstrap_servers=bootstrap, transactional_id=f"phases-{uuid.uuid4().hex[:8]}",
                               linger_ms=5, batch_size=batch_size)
    try:
        client.init()
        client.prepare(topic)
        workload = Initialized(client)
        run_workload(workload, topic, max(n // 5, per_txn), 100, records_per_txn=per_txn)  # warm-up
        clock.reset()
        result = run_workload(workload, topic, n, 100, records_per_txn=per_txn)
    finally:
        client.close()
        clock.restore()
    return result, clock


class _Probe:
    def noop(self) -> None:
        pass


def wrapper_cost_us() -> float:
    """Thread CPU that one timed call adds to the phase around it (the clock pair and the wrapper):
    a no-op timed the way the phases are, against the same no-op untimed."""
    bare = _Probe.noop
    clock = PhaseClock()
    clock.wrap("probe", "noop", __name__, "_Probe", "noop")
    try:
        probe = _Probe()
        n = 20_000
        start = time.thread_time_ns()
        for _ in range(n):
            probe.noop()
        wrapped = time.thread_time_ns() - start
    finally:
        clock.restore()
    start = time.thread_time_ns()
    for _ in range(n):
        bare(probe)
    return (wrapped - (time.thread_time_ns() - start)) / n / 1000


def report(result: Any, clock: PhaseClock, untimed: Any) -> str:
    txns = result.transactions
    records = result.records
    sender_us = (result.cpu_s - result.app_cpu_s) * 1e6
    lines = [
        f"{records} records in {txns} transactions; hot path {accel.PATH}",
        f"CPU per record, us: all {result.cpu_s / records * 1e6:.3f}  application thread "
        f"{result.app_cpu_s / records * 1e6:.3f}  Sender {sender_us / records:.3f}  (timed run)",
        f"                    all {untimed.cpu_s / untimed.records * 1e6:.3f}  application thread "
        f"{untimed.app_cpu_s / untimed.records * 1e6:.3f}  Sender "
        f"{(untimed.cpu_s - untimed.app_cpu_s) / untimed.records * 1e6:.3f}  (same run without the "
        "wrappers)",
        f"Sender CPU per transaction {sender_us / txns:.0f} us; application thread "
        f"{result.app_cpu_s * 1e6 / txns:.0f} us",
        f"each timed call adds about {wrapper_cost_us():.1f} us to the phases that contain it",
        "",
        f"{'phase':<56} {'calls/txn':>9} {'us/call':>8} {'us/txn':>8} {'us/record':>9} {'own us/txn':>10}",
        "(us: inclusive of the phases called inside it; own: without them)",
    ]
    for thread, phases in (("Sender", SENDER_PHASES), ("application", APP_PHASES)):
        lines.append(f"{thread} thread")
        for label, *_ in phases:
            key = (thread, label)
            calls = clock.calls.get(key, 0)
            if not calls:
                continue
            ns = clock.ns[key]
            own = clock.own_ns[key]
            lines.append(f"  {label:<54} {calls / txns:9.2f} {ns / calls / 1000:8.1f} "
                         f"{ns / txns / 1000:8.1f} {ns / records / 1000:9.3f} {own / txns / 1000:10.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True, help="a real Kafka that allows transactions")
    parser.add_argument("--scenario", choices=tuple(SCENARIOS), default="S1")
    parser.add_argument("--num-records", type=int)
    parser.add_argument("--batch-size", type=int, default=262144)
    args = parser.parse_args(argv)
    per_txn, default_n = SCENARIOS[args.scenario]
    n = args.num_records or default_n
    untimed, _ = measure(args.bootstrap, per_txn, n, args.batch_size, timed=False)
    result, clock = measure(args.bootstrap, per_txn, n, args.batch_size, timed=True)
    print(report(result, clock, untimed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
