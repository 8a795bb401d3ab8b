"""Where does txnproducer's time per record go? cProfile of the application thread and the Sender.

    python benchmarks/profile_txnproducer.py --scenario S1 [--bootstrap HOST:PORT] [--num-records N]

cProfile sees one thread only, so the Sender thread gets its own profiler (wrapped around
``Sender.run``); the application thread (``send()``, ``commit_transaction()``) is profiled around
the workload. Prints, per thread, the top functions by own time and by cumulative time, and a
breakdown in microseconds per record of the calls that matter. Without ``--bootstrap`` the broker
is a standalone MockCluster in another process, so its CPU is not in the profile. ``--timer cpu``
(the default) measures each thread's own CPU time (``time.thread_time``), so waiting for the
broker, for the GIL or for a busy machine's CPU does not count; ``--timer wall`` shows where
the threads *wait*. The profiler itself inflates every number: read them as shares.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _clients import Initialized  # noqa: E402

from txnproducer._internal import sender as sender_module  # noqa: E402
from txnproducer.perf import (  # noqa: E402
    TxnProducerClient,
    create_topic,
    mock_cluster_process,
    run_workload,
)

SCENARIOS = {"S1": (1000, 200_000), "S2": (1, 2_000), "S3": (10, 10_000)}

# (label, (file suffix, function name)) of the calls worth a line in the breakdown
APP_CALLS = [
    ("send() total", ("/txnproducer/producer.py", "send")),
    ("  serialize", ("producer.py", "_serialize")),
    ("  headers", ("producer.py", "_headers")),
    ("  partition choice", ("producer.py", "_partition")),
    ("  tm.add_partition", ("txn/produce_side.py", "add_partition")),
    ("  accumulator.append (compiled: new batches only)", ("batching/accumulator.py", "append")),
    ("    BatchEncoder.append (record encoding, pure)", ("protocol/record_batch.py", "append")),
    ("    RecordFuture() (made in Python)", ("batching/batch.py", "__init__")),
    ("begin_transaction()", ("producer.py", "begin_transaction")),
    ("commit_transaction()", ("producer.py", "commit_transaction")),
]
SENDER_CALLS = [
    ("run_once", ("sender.py", "run_once")),
    ("  network poll (select + responses)", ("network/client.py", "poll")),
    ("  _send_produce_data", ("sender.py", "_send_produce_data")),
    ("    accumulator.ready_and_drain", ("batching/accumulator.py", "ready_and_drain")),
    ("    accumulator.ready (an older tree's)", ("batching/accumulator.py", "ready")),
    ("    accumulator.drain (an older tree's)", ("batching/accumulator.py", "drain")),
    ("      batch build (BatchEncoder.build, pure)", ("protocol/record_batch.py", "build")),
    ("    _send_produce (request encode+send)", ("sender.py", "_send_produce")),
    ("  ProduceOutcomes.on_response", ("produce_outcomes.py", "on_response")),
    ("    batch.finish (futures, callbacks)", ("batching/batch.py", "finish")),
    ("  transactional requests", ("sender.py", "_maybe_send_transactional_request")),
    ("  expire_batches", ("produce_outcomes.py", "expire_batches")),
    ("  net.maintain", ("network/client.py", "maintain")),
]


def cumulative(stats: pstats.Stats, suffix: str, name: str) -> tuple[float, int]:
    """Cumulative seconds and primitive calls of every function ``name`` in a file ending ``suffix``."""
    total = 0.0
    calls = 0
    for (filename, _line, func), (cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if func == name and filename.endswith(suffix):
            total += ct
            calls += cc
    return total, calls


def breakdown(title: str, stats: pstats.Stats, rows: list[tuple[str, tuple[str, str]]], records: int) -> str:
    lines = [f"{title} (per record, microseconds; cumulative incl. callees)"]
    for label, (suffix, name) in rows:
        seconds, calls = cumulative(stats, suffix, name)
        if calls:
            per_record = seconds / records * 1e6
            lines.append(f"  {label:<44} {per_record:9.2f} us   ({calls} calls, {seconds:.3f} s)")
    return "\n".join(lines)


def top(stats: pstats.Stats, key: str, n: int) -> str:
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats(key).print_stats(n)
    text = out.getvalue()
    return text[text.find("   ncalls"):]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=tuple(SCENARIOS), default="S1")
    parser.add_argument("--bootstrap")
    parser.add_argument("--num-records", type=int)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", help="also write the report here")
    parser.add_argument("--timer", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--security-config",
                        help="JSON file of a secured listener's settings (as compare.py writes them, "
                             "benchmarks/_secured.py); with --bootstrap of that listener")
    args = parser.parse_args(argv)
    security = json.loads(Path(args.security_config).read_text()) if args.security_config else {}
    per_txn, default_n = SCENARIOS[args.scenario]
    n = args.num_records or default_n
    topic = f"profile-{uuid.uuid4().hex[:8]}"

    sender_profiles: list[cProfile.Profile] = []
    original_run = sender_module.Sender.run

    timer = time.thread_time if args.timer == "cpu" else time.perf_counter

    def profiled_run(self: Any) -> None:
        prof = cProfile.Profile(timer)
        sender_profiles.append(prof)
        prof.enable()
        try:
            original_run(self)
        finally:
            prof.disable()

    sender_module.Sender.run = profiled_run  # type: ignore[method-assign]

    def workload(bootstrap: str) -> tuple[Any, cProfile.Profile]:
        client = TxnProducerClient(bootstrap_servers=bootstrap,
                                   transactional_id=f"profile-{uuid.uuid4().hex[:8]}", linger_ms=5,
                                   **security)
        app = cProfile.Profile(timer)
        try:
            client.init()
            client.prepare(topic)
            app.enable()
            result = run_workload(Initialized(client), topic, n, 100, records_per_txn=per_txn)
            app.disable()
        finally:
            client.close()
        return result, app

    if args.bootstrap:
        create_topic(args.bootstrap, topic, 3, **security)
        result, app = workload(args.bootstrap)
    else:
        with mock_cluster_process(brokers=1, partitions=3, topics=[topic]) as servers:
            result, app = workload(servers)

    app_stats = pstats.Stats(app)
    sender_stats = pstats.Stats(sender_profiles[0])
    for extra in sender_profiles[1:]:
        sender_stats.add(extra)
    report = [
        f"scenario {args.scenario} (timer: {args.timer}): {result.summary()}",
        "(throughput under the profiler is lower than without it)",
        "",
        breakdown("application thread", app_stats, APP_CALLS, result.records),
        "",
        breakdown("Sender thread", sender_stats, SENDER_CALLS, result.records),
        "",
        "application thread, top by own time:",
        top(app_stats, "tottime", args.top),
        "Sender thread, top by own time:",
        top(sender_stats, "tottime", args.top),
        "Sender thread, top by cumulative time:",
        top(sender_stats, "cumulative", args.top),
    ]
    text = "\n".join(report)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
