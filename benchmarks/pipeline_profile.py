"""Where each microsecond per input goes in consume-transform-produce (compare.py's S4), per thread.

    python benchmarks/pipeline_profile.py --bootstrap HOST:PORT [--loop processor|records|loop] [--inputs N]
    taskset -c 1 python benchmarks/pipeline_profile.py --bootstrap HOST:PORT

The same phase timing as ``phase_profile.py`` (one ``time.thread_time_ns()`` pair around each listed
function, charged to the thread that ran it, "own" without the timed phases called inside it), for the
three ways of ours through S4: ``processor`` (``TransactionalProcessor`` with ``transform_columns``),
``records`` (the processor with ``transform_batch``: a ConsumerRecord and an OutputRecord per input) and
``loop`` (the producer guide's own loop on ``TransactionalConsumer.poll_batch``). Each thread's total CPU
comes from ``/proc/self/task`` (Linux), read before the clients close; the same run without the wrappers
is made first, so the cost of measuring shows. The input is written once (``--inputs`` records of 100
bytes in 6 partitions, 1,000-record transactions) and read by each run in a fresh group.
"""

from __future__ import annotations

import argparse
import collections
import functools
import importlib
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for path in (HERE.parent, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from _pipelines import write_input  # noqa: E402
from phase_profile import SENDER_PHASES  # noqa: E402

from txnproducer.perf import create_topic  # noqa: E402

PARTITIONS = 6
# (label, module, owner, function): the polling thread's phases (the Sender's are phase_profile's)
POLLING_PHASES = [
    ("poll (consumer: fetch, decode, group)", "txnproducer.consumer", "TransactionalConsumer", "_poll"),
    ("  the group member's poll", "txnproducer._internal.group.classic.member", "GroupMember", "poll"),
    ("  hand records out (take, positions)", "txnproducer._internal.fetch.fetcher", "Fetcher", "collect"),
    ("    decode (compiled)", "txnproducer._internal.fetch.completed_fetch", "CompletedFetch", "_decode"),
    ("    send the next Fetch", "txnproducer._internal.fetch.fetcher", "Fetcher", "send_fetches"),
    ("  network poll (the consumer's)", "txnproducer._internal.network.client", "NetworkClient", "poll"),
    (
        "    read Fetch answers (recv_into)",
        "txnproducer._internal.network.connection",
        "DirectConnection",
        "_read",
    ),
    ("    the Fetch answer: partitions", "txnproducer._internal.fetch.fetcher", "Fetcher", "_answered"),
    ("transform (user code + outputs)", "txnproducer.eos.processor", None, "apply_transform"),
    ("send the outputs (producer.send)", "txnproducer.eos.processor", None, "send_outputs"),
    (
        "  accumulator.append (a new batch)",
        "txnproducer._internal.batching.accumulator",
        "RecordAccumulator",
        "append",
    ),
    ("  wake the Sender", "txnproducer._internal.network.client", "NetworkClient", "wakeup"),
    ("begin_transaction()", "txnproducer.producer", "TransactionalProducer", "begin_transaction"),
    (
        "send_offsets_to_transaction()",
        "txnproducer.producer",
        "TransactionalProducer",
        "send_offsets_to_transaction",
    ),
    ("commit_transaction()", "txnproducer.producer", "TransactionalProducer", "commit_transaction"),
    ("group_metadata()", "txnproducer.consumer", "TransactionalConsumer", "group_metadata"),
    ("position()", "txnproducer.consumer", "TransactionalConsumer", "position"),
]


def _thread_kind() -> str:
    name = threading.current_thread().name
    if name.startswith("txnproducer-sender"):
        return "Sender"
    if name.startswith("txnproducer-group"):
        return "group member"
    return "polling" if threading.current_thread() is threading.main_thread() else "other"


class Phases:
    """Thread CPU per phase, charged to the kind of thread that ran it."""

    def __init__(self) -> None:
        self.ns: collections.Counter[tuple[str, str]] = collections.Counter()
        self.own: collections.Counter[tuple[str, str]] = collections.Counter()
        self.calls: collections.Counter[tuple[str, str]] = collections.Counter()
        self._nested = threading.local()
        self._undo: list[Callable[[], None]] = []

    def wrap(self, labels: dict[str, str], module: str, owner: str | None, name: str) -> None:
        """Time ``module.owner.name``, once, under ``labels[thread kind]`` (another kind: the first)."""
        target: Any = importlib.import_module(module)
        if owner is not None:
            target = getattr(target, owner)
        original = target.__dict__[name] if owner is not None else getattr(target, name)
        clock, nested = time.thread_time_ns, self._nested
        ns, own, calls = self.ns, self.own, self.calls
        fallback = next(iter(labels.values()))

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            kind = _thread_kind()
            key = (kind, labels.get(kind, fallback))
            outer = getattr(nested, "ns", 0)
            nested.ns = 0
            start = clock()
            try:
                return original(*args, **kwargs)
            finally:
                spent = clock() - start
                ns[key] += spent
                own[key] += spent - nested.ns
                calls[key] += 1
                nested.ns = outer + spent

        setattr(target, name, timed)
        self._undo.append(lambda: setattr(target, name, original))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


def thread_cpu() -> dict[str, float]:
    """CPU seconds so far of each live thread of this process, by kind (Linux /proc)."""
    names = {t.native_id: t for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out: collections.Counter[str] = collections.Counter()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        thread = names.get(int(tid))
        if thread is None:
            kind = "other"
        elif thread is threading.main_thread():
            kind = "polling"
        elif thread.name.startswith("txnproducer-sender"):
            kind = "Sender"
        elif thread.name.startswith("txnproducer-group"):
            kind = "group member"
        else:
            kind = "other"
        out[kind] += (int(fields[11]) + int(fields[12])) / tick
    return dict(out)


def run(kind: str, bootstrap: str, topic: str, inputs: int) -> tuple[float, dict[str, float], float, int]:
    """One S4 run; (elapsed s, CPU s per thread kind, process CPU s, transactions)."""
    from txnproducer import AbortableError, TopicPartition, TransactionalConsumer, TransactionalProducer
    from txnproducer.eos import OutputBatch, OutputRecord, TransactionalProcessor

    out = f"profile-out-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, out, PARTITIONS)
    group = f"profile-{kind}-{uuid.uuid4().hex[:8]}"
    marks: dict[str, Any] = {}

    def start() -> None:
        if "t0" not in marks:
            marks["t0"], marks["cpu0"], marks["threads0"] = (
                time.perf_counter(),
                time.process_time(),
                thread_cpu(),
            )

    def end() -> None:
        marks["t1"], marks["cpu1"], marks["threads1"] = time.perf_counter(), time.process_time(), thread_cpu()

    if kind == "loop":
        consumer = TransactionalConsumer(
            bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest"
        )
        producer = TransactionalProducer(bootstrap_servers=bootstrap, transactional_id=group, linger_ms=5)
        done = transactions = 0
        try:
            producer.init_transactions()
            consumer.subscribe([topic])
            while done < inputs:
                batches = consumer.poll_batch(timeout=1.0, max_records=1000)
                if not batches:
                    continue
                start()
                producer.begin_transaction()
                try:
                    for batch in batches:
                        for value in batch.values:
                            producer.send(out, value.upper())
                    polled = {TopicPartition(b.topic, b.partition) for b in batches}
                    producer.send_offsets_to_transaction(
                        {tp: consumer.position(tp) for tp in polled}, consumer.group_metadata()
                    )
                    producer.commit_transaction()
                except AbortableError:
                    producer.abort_transaction()
                    consumer.seek_to_committed()
                    continue
                done += sum(len(b) for b in batches)
                transactions += 1
            end()
        finally:
            consumer.close(10, leave_group=True)
            producer.close(10)
    else:
        stop = threading.Event()
        processor: Any = None

        class Timed(TransactionalConsumer):
            def _poll(self, *args: Any, **kwargs: Any) -> Any:
                got = super()._poll(*args, **kwargs)
                if got:
                    start()
                return got

        def on_commit(_offsets: Any) -> None:
            if processor.metrics()["records_in"] >= inputs:
                end()
                stop.set()

        transform: dict[str, Any] = (
            {"transform_columns": lambda b: OutputBatch(out, [v.upper() for v in b.values])}
            if kind == "processor"
            else {"transform_batch": lambda rs: [OutputRecord(out, r.value.upper()) for r in rs]}
        )
        processor = TransactionalProcessor(
            topic,
            consumer_config={"bootstrap_servers": bootstrap, "group_id": group},
            producer_config={"bootstrap_servers": bootstrap, "linger_ms": 5},
            instance_name="profile",
            max_records_per_txn=1000,
            on_commit=on_commit,
            consumer_factory=Timed,
            **transform,
        )
        try:
            processor.run(stop_event=stop)
            transactions = processor.metrics()["transactions_committed"]
        finally:
            processor.stop(leave_group=True)
    threads = {k: marks["threads1"].get(k, 0.0) - marks["threads0"].get(k, 0.0) for k in marks["threads1"]}
    return marks["t1"] - marks["t0"], threads, marks["cpu1"] - marks["cpu0"], transactions


def report(kind: str, inputs: int, untimed: tuple[Any, ...], timed: tuple[Any, ...], phases: Phases) -> str:
    elapsed, threads, cpu, txns = timed
    u_elapsed, u_threads, u_cpu, _ = untimed
    per = 1e6 / inputs
    lines = [
        f"{kind}: {inputs} inputs, {txns} transactions",
        f"  without the wrappers: {u_cpu * per:.3f} us of CPU per input "
        f"({inputs / u_elapsed:,.0f} inputs/s); "
        + ", ".join(f"{k} {v * per:.3f}" for k, v in sorted(u_threads.items(), key=lambda kv: -kv[1])),
        f"  with them:            {cpu * per:.3f} us ({inputs / elapsed:,.0f} inputs/s); "
        + ", ".join(f"{k} {v * per:.3f}" for k, v in sorted(threads.items(), key=lambda kv: -kv[1])),
        "",
        f"  {'phase':<52} {'thread':<13} {'calls/txn':>9} {'us/input':>9} {'own':>7}",
    ]
    phase_list = [(label, "polling") for label, *_ in POLLING_PHASES] + [
        (label, "Sender") for label, *_ in SENDER_PHASES
    ]
    for label, thread in phase_list:
        key = (thread, label)
        calls = phases.calls.get(key, 0)
        if not calls:
            continue
        lines.append(
            f"  {label:<52} {thread:<13} {calls / max(txns, 1):9.2f} {phases.ns[key] / 1000 / inputs:9.3f} "
            f"{phases.own[key] / 1000 / inputs:7.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True, help="a real Kafka that allows transactions")
    parser.add_argument(
        "--loop",
        choices=("processor", "records", "loop"),
        action="append",
        help="which of ours (repeatable; default all three)",
    )
    parser.add_argument("--inputs", type=int, default=200_000)
    args = parser.parse_args(argv)
    topic = f"profile-in-{uuid.uuid4().hex[:8]}"
    create_topic(args.bootstrap, topic, PARTITIONS)
    inputs = write_input(args.bootstrap, topic, PARTITIONS, args.inputs, 100)
    for kind in args.loop or ["processor", "records", "loop"]:
        untimed = run(kind, args.bootstrap, topic, inputs)
        phases = Phases()
        functions: dict[tuple[str, str | None, str], dict[str, str]] = {}
        for thread, listed in (("polling", POLLING_PHASES), ("Sender", SENDER_PHASES)):
            for label, module, owner, name in listed:
                functions.setdefault((module, owner, name), {})[thread] = label
        for (module, owner, name), labels in functions.items():
            phases.wrap(labels, module, owner, name)
        try:
            timed = run(kind, args.bootstrap, topic, inputs)
        finally:
            phases.restore()
        print(report(kind, inputs, untimed, timed, phases), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
