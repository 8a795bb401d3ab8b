"""What TLS and SASL cost our producer, measured in pairs: one process, one producer per listener,
taking turns in blocks of transactions.

Why: ``compare.py`` runs every client in a fresh process, one after another, and on a 2-CPU VM single
runs differ by up to 40 %, so the ratio of two listeners' medians wanders (S1 over SASL_SSL came out
between 0.68x and 1.06x of plaintext in the rounds of one run). Here the producers share the process,
the broker and the broker's JIT state, and take turns in short blocks, so a slow spell of the machine
hits every listener alike; the ratio reported is the median over blocks of (the first listener's time
per transaction / this listener's), with the whole run's ratio beside it. The broker's own CPU per
transaction (``/proc``, when it runs here) tells whether a listener's cost is ours or the broker's.

    python benchmarks/listener_pairs.py --kafka-home /path/to/kafka_2.13-4.1.0 \\
        [--records-per-txn 1000] [--blocks 40] [--block-txns 25] [--broker-cpus 0 --client-cpus 1]

One Kafka node with PLAINTEXT, SASL_SSL (SCRAM-SHA-512) and mutual-TLS listeners (``_secured.py``),
100-byte values, linger 5 ms, a 3-partition topic per listener. Client CPU is the whole process's (every
producer's Sender thread, the idle ones' polls included: a few us per transaction).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import attrs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (ROOT, HERE):  # run as a script from a source tree; _secured and compare are siblings
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from txnproducer import TransactionalProducer  # noqa: E402
from txnproducer.perf import create_topic  # noqa: E402

RECORD_SIZE = 100
PARTITIONS = 3


@attrs.define
class Listener:
    """One listener's producer and what its blocks measured."""

    name: str
    producer: TransactionalProducer
    topic: str
    block_seconds: list[float] = attrs.field(factory=list)  # wall time per transaction, per block
    transactions: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    broker_cpu_s: float | None = None  # None: the broker's CPU was not read


def run_block(listener: Listener, transactions: int, records_per_txn: int, payload: bytes) -> None:
    producer, topic, send = listener.producer, listener.topic, listener.producer.send
    for _ in range(transactions):
        producer.begin_transaction()
        for _ in range(records_per_txn):
            send(topic, payload)
        producer.commit_transaction()


def measure(targets: Mapping[str, tuple[str, Mapping[str, Any]]], records_per_txn: int, blocks: int,
            block_txns: int, warmup_txns: int,
            broker_cpu: Callable[[], float] | None = None) -> list[Listener]:
    """``targets``: listener name -> (bootstrap servers, the producer's security settings), the first
    one the reference. Every listener runs ``warmup_txns`` transactions, then ``blocks`` rounds in
    which each runs ``block_txns`` in turn."""
    payload = os.urandom(RECORD_SIZE)
    listeners: list[Listener] = []
    try:
        for name, (bootstrap, settings) in targets.items():
            topic = f"pairs-{name.lower()}-{uuid.uuid4().hex[:8]}"
            create_topic(bootstrap, topic, PARTITIONS, **settings)
            producer = TransactionalProducer(bootstrap_servers=bootstrap, linger_ms=5,
                                             transactional_id=f"pairs-{uuid.uuid4().hex[:12]}", **settings)
            listeners.append(Listener(name, producer, topic))
            producer.init_transactions()
            producer.partitions_for(topic)
        for listener in listeners:
            run_block(listener, warmup_txns, records_per_txn, payload)
        for _ in range(blocks):
            for listener in listeners:
                broker_before = broker_cpu() if broker_cpu else None
                cpu, start = time.process_time(), time.monotonic()
                run_block(listener, block_txns, records_per_txn, payload)
                wall = time.monotonic() - start
                listener.cpu_s += time.process_time() - cpu
                if broker_cpu is not None and broker_before is not None:
                    listener.broker_cpu_s = (listener.broker_cpu_s or 0.0) + broker_cpu() - broker_before
                listener.wall_s += wall
                listener.transactions += block_txns
                listener.block_seconds.append(wall / block_txns)
    finally:
        for listener in listeners:
            listener.producer.close()
    return listeners


def summary(listeners: list[Listener], records_per_txn: int) -> list[dict[str, Any]]:
    """Per listener: time and CPU per transaction, records/s, and its records/s against the first
    listener's (whole run, and the median and range of the blocks' paired ratios)."""
    reference = listeners[0]
    rows = []
    for listener in listeners:
        n = listener.transactions
        broker = listener.broker_cpu_s
        paired = [ref / own for ref, own in zip(reference.block_seconds, listener.block_seconds, strict=True)]
        rows.append({
            "listener": listener.name,
            "transactions": n,
            "records_per_s": n * records_per_txn / listener.wall_s,
            "wall_us_per_txn": listener.wall_s / n * 1e6,
            "client_cpu_us_per_txn": listener.cpu_s / n * 1e6,
            "broker_cpu_us_per_txn": None if broker is None else broker / n * 1e6,
            "ratio_whole_run": (reference.wall_s / reference.transactions) / (listener.wall_s / n),
            "ratio_median_of_blocks": statistics.median(paired),
            "ratio_range": [min(paired), max(paired)],
        })
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    reference = rows[0]["listener"]
    lines = [f"| listener | records/s | us per txn | client CPU us/txn | broker CPU us/txn | records/s vs "
             f"{reference}: whole run | median of blocks (range) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        broker = "-" if r["broker_cpu_us_per_txn"] is None else f"{r['broker_cpu_us_per_txn']:,.0f}"
        low, high = r["ratio_range"]
        lines.append(f"| {r['listener']} | {r['records_per_s']:,.0f} | {r['wall_us_per_txn']:,.0f} | "
                     f"{r['client_cpu_us_per_txn']:,.0f} | {broker} | {r['ratio_whole_run']:.3f}x | "
                     f"{r['ratio_median_of_blocks']:.3f}x ({low:.2f}-{high:.2f}) |")
    return "\n".join(lines)


def process_cpu(pid: int) -> Callable[[], float]:
    """The CPU seconds (user + system) of process ``pid`` so far, every thread of it."""
    tick = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / tick
    return read


@contextmanager
def secured_broker(kafka_home: str, broker_cpus: set[int] | None
                   ) -> Iterator[tuple[dict[str, tuple[str, dict[str, Any]]], int]]:
    """One node with the three listeners: ({listener: (bootstrap, settings)}, the broker's pid)."""
    from _secured import LISTENERS, secured_kafka
    from compare import pinned

    with ExitStack() as stack:
        with pinned(broker_cpus):
            bench = stack.enter_context(secured_kafka(kafka_home, ROOT))
        targets = {name: (bench.bootstrap_of(name), json.loads(bench.settings_file(name).read_text()))
                   for name in LISTENERS}
        yield targets, bench.broker_pid


def main(argv: list[str] | None = None) -> int:
    from compare import parse_cpus

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kafka-home", required=True, help="an Apache Kafka distribution (KRaft)")
    parser.add_argument("--records-per-txn", type=int, default=1000, help="1000: S1's shape; 1: S2's")
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--block-txns", type=int, default=25, help="transactions per listener per block")
    parser.add_argument("--warmup-txns", type=int, default=1000,
                        help="per listener, before the blocks (a fresh broker's JIT needs them)")
    parser.add_argument("--listeners", default="PLAINTEXT,SASL_SSL,MTLS", help="the first is the reference")
    parser.add_argument("--broker-cpus", help="CPUs for the broker, e.g. 0 (Linux)")
    parser.add_argument("--client-cpus", help="CPUs for this process, e.g. 1 (Linux)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.listeners.split(",") if n.strip()]
    with secured_broker(args.kafka_home, parse_cpus(args.broker_cpus)) as (targets, pid):
        unknown = sorted(set(names) - set(targets))
        if unknown:
            parser.error(f"unknown listener(s) {', '.join(unknown)}; there are {', '.join(targets)}")
        client_cpus = parse_cpus(args.client_cpus)
        if client_cpus:
            os.sched_setaffinity(0, client_cpus)  # before the producers start their threads
        listeners = measure({n: targets[n] for n in names}, args.records_per_txn, args.blocks,
                            args.block_txns, args.warmup_txns, process_cpu(pid))
    rows = summary(listeners, args.records_per_txn)
    print(f"{args.records_per_txn} record(s) of {RECORD_SIZE} bytes per transaction, {args.blocks} blocks of "
          f"{args.block_txns} transactions per listener after {args.warmup_txns} of warm-up"
          + (f"; broker on CPU {args.broker_cpus}" if args.broker_cpus else "")
          + (f", this process on CPU {args.client_cpus}" if args.client_cpus else "") + "\n")
    print(table(rows))
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


__all__ = ["Listener", "main", "measure", "process_cpu", "summary", "table"]

if __name__ == "__main__":
    sys.exit(main())
