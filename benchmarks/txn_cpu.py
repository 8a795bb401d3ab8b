"""Client CPU per *transaction* of small transactions: the quick loop for work on the per-transaction path.

    python benchmarks/txn_cpu.py [--shape 1|10|10x6] [--aio] [--transactions N] [--warmup-transactions N]
    taskset -c 1 python benchmarks/txn_cpu.py --bootstrap HOST:PORT --shape 10x6

Why beside ``compare.py``: that one runs every client against a real broker, each run its own subprocess,
and takes minutes; this one runs only ours, on the path the process runs (``TXNPRODUCER_PURE_PYTHON=1`` for
the pure-Python one), and prints in seconds what a change to begin/send/commit costs per transaction
(``txn_instructions.py`` counts the instructions of the same loop, which the machine's noise does not move).
Without ``--bootstrap`` the broker is a standalone MockCluster in another process (its CPU is not
counted). Shapes: ``1`` one record per transaction, ``10`` ten records (one partition: the sticky
partitioner's), ``10x6`` ten records over six partitions (explicit partitions ``i % 6``). Each
transaction is ``begin``, the sends, ``commit``; the CPU is the whole process's (``time.process_time``:
the application thread, the Sender thread, everything) and the application thread's alone, over the
measured transactions after ``--warmup-transactions`` untimed ones. ``--aio`` runs the same loop on
``AsyncTransactionalProducer`` (``await send``, ``await commit_transaction``). Compare two trees with
alternated runs::

    for i in 1 2 3 4 5; do for t in /tmp/a /tmp/b; do PYTHONPATH=$t python benchmarks/txn_cpu.py; done; done

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a source tree: after PYTHONPATH's entries, so that
    # compare.py --tree (PYTHONPATH=another tree) runs that tree's txnproducer with this harness
    sys.path.insert(1 + len([p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]), str(ROOT))

from txnproducer import TransactionalProducer  # noqa: E402
from txnproducer._internal import accel  # noqa: E402
from txnproducer.perf import create_topic, mock_cluster_process  # noqa: E402

SHAPES = {"1": (1, None), "10": (10, None), "10x6": (10, 6)}
PARTITIONS = 6
VALUE = b"x" * 100


def partitions_of(shape: str) -> list[int | None]:
    """The partition argument of each send of one transaction (None: the partitioner's choice)."""
    records, spread = SHAPES[shape]
    return [None if spread is None else i % spread for i in range(records)]


def run_sync(bootstrap: str, topic: str, shape: str, warmup: int, transactions: int,
             linger_ms: int = 5) -> dict[str, Any]:
    producer = TransactionalProducer(bootstrap_servers=bootstrap, linger_ms=linger_ms,
                                     transactional_id=f"txn-cpu-{uuid.uuid4().hex[:8]}")
    parts = partitions_of(shape)
    latencies: list[float] = []
    try:
        producer.init_transactions()
        producer.partitions_for(topic)
        send, begin, commit = producer.send, producer.begin_transaction, producer.commit_transaction
        for _ in range(warmup):
            begin()
            for p in parts:
                send(topic, VALUE, None, p)
            commit()
        cpu0, app0, wall0, times0 = time.process_time(), time.thread_time(), time.perf_counter(), os.times()
        for _ in range(transactions):
            begin()
            for p in parts:
                send(topic, VALUE, None, p)
            started = time.perf_counter()
            commit()
            latencies.append(time.perf_counter() - started)
        cpu, app, wall = time.process_time() - cpu0, time.thread_time() - app0, time.perf_counter() - wall0
        system = os.times().system - times0.system
    finally:
        producer.close()
    return summary(cpu, app, wall, latencies, transactions, system)


def run_aio(bootstrap: str, topic: str, shape: str, warmup: int, transactions: int,
            linger_ms: int = 5) -> dict[str, Any]:
    from txnproducer.aio import AsyncTransactionalProducer

    parts = partitions_of(shape)

    async def main() -> dict[str, Any]:
        producer = AsyncTransactionalProducer(bootstrap_servers=bootstrap, linger_ms=linger_ms,
                                              transactional_id=f"txn-cpu-aio-{uuid.uuid4().hex[:8]}")
        latencies: list[float] = []
        try:
            await producer.init_transactions()
            await producer.partitions_for(topic)
            send = producer.send

            async def one(timed: bool) -> None:
                async with producer.transaction():  # its end commits (the commit is timed)
                    for p in parts:
                        await send(topic, VALUE, None, p)
                    started = time.perf_counter()
                if timed:
                    latencies.append(time.perf_counter() - started)

            for _ in range(warmup):
                await one(False)
            cpu0, app0, times0 = time.process_time(), time.thread_time(), os.times()
            wall0 = time.perf_counter()
            for _ in range(transactions):
                await one(True)
            cpu, app = time.process_time() - cpu0, time.thread_time() - app0
            wall = time.perf_counter() - wall0
            system = os.times().system - times0.system
        finally:
            await producer.close()
        return summary(cpu, app, wall, latencies, transactions, system)

    return asyncio.run(main())


def summary(cpu: float, app: float, wall: float, latencies: list[float], transactions: int,
            system: float) -> dict[str, Any]:
    return {"cpu_us_per_txn": round(cpu / transactions * 1e6, 1),
            "kernel_cpu_us_per_txn": round(system / transactions * 1e6, 1),
            "app_cpu_us_per_txn": round(app / transactions * 1e6, 1),
            "other_threads_cpu_us_per_txn": round((cpu - app) / transactions * 1e6, 1),
            "commit_p50_ms": round(statistics.median(latencies) * 1000, 3),
            "transactions_per_s": round(transactions / wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="a running Kafka; default: a standalone MockCluster subprocess")
    parser.add_argument("--shape", choices=tuple(SHAPES), default="1")
    parser.add_argument("--aio", action="store_true", help="AsyncTransactionalProducer, not the sync one")
    parser.add_argument("--transactions", type=int, default=3000)
    parser.add_argument("--warmup-transactions", type=int, default=500)
    parser.add_argument("--linger-ms", type=int, default=5,
                        help="linger_ms (txn_instructions.py raises it: valgrind is ~50x slower)")
    args = parser.parse_args()
    run = run_aio if args.aio else run_sync
    topic = f"txn-cpu-{uuid.uuid4().hex[:8]}"
    if args.bootstrap:
        create_topic(args.bootstrap, topic, PARTITIONS)
        result = run(args.bootstrap, topic, args.shape, args.warmup_transactions, args.transactions,
                     args.linger_ms)
    else:
        with mock_cluster_process(partitions=PARTITIONS, topics=[topic]) as bootstrap:
            result = run(bootstrap, topic, args.shape, args.warmup_transactions, args.transactions,
                         args.linger_ms)
    print(json.dumps({"shape": args.shape, "aio": args.aio, "hot_path": accel.PATH, **result}))


if __name__ == "__main__":
    main()
