"""``txnproducer perf``: a transactional producer benchmark in the spirit of kafka-producer-perf-test.

Why our own tool: users choose a client on records/s and on how long ``commit_transaction()``
blocks, and the Java tool cannot drive a Python client. The workload loop here is generic over a
tiny :class:`TxnClient` protocol so that ``benchmarks/compare.py`` runs *exactly the same loop*
over kafka-python and confluent-kafka; differences in the numbers are then the clients', not the
harness's.

By default the tool starts a MockCluster in a *separate process* (``txnproducer.testing.standalone``)
so that the broker's CPU time and memory do not count against the producer (peak RSS is this
process's ``ru_maxrss``), and stops it afterwards. ``--bootstrap`` points it at a real Kafka.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TextIO

from txnproducer._internal import accel
from txnproducer._internal.perf_clusters import create_topic, mock_cluster_process
from txnproducer._internal.perf_otel import OTEL_MODES, PerfTelemetry

__all__ = [
    "PerfResult",
    "TxnClient",
    "TxnProducerClient",
    "add_arguments",
    "create_topic",
    "latency_summary",
    "main",
    "mock_cluster_process",
    "peak_rss_bytes",
    "percentile",
    "run",
    "run_workload",
]

PROGRESS_INTERVAL_S = 1.0


# --- statistics --------------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of already sorted values, linearly interpolated.

    Linear interpolation between closest ranks is numpy's default, so the numbers can be checked
    with any spreadsheet; it is NaN for no values (a run with no transactions has no latency).
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within 0..100, got {q!r}")
    n = len(sorted_values)
    if n == 0:
        return math.nan
    if n == 1:
        return float(sorted_values[0])
    rank = (n - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, n - 1)
    fraction = rank - low
    return float(sorted_values[low]) + (float(sorted_values[high]) - float(sorted_values[low])) * fraction


def latency_summary(values_ms: Sequence[float]) -> dict[str, float]:
    """count, mean, p50, p95, p99 and max of latencies in milliseconds (NaN when empty)."""
    ordered = sorted(values_ms)
    n = len(ordered)
    return {
        "count": float(n),
        "mean": sum(ordered) / n if n else math.nan,
        "p50": percentile(ordered, 50),
        "p95": percentile(ordered, 95),
        "p99": percentile(ordered, 99),
        "max": float(ordered[-1]) if n else math.nan,
    }


def peak_rss_bytes() -> int:
    """Peak resident set size of this process image so far, in bytes.

    On Linux this is ``VmHWM`` from ``/proc/self/status``, not ``getrusage().ru_maxrss``: Linux
    carries ``ru_maxrss`` across ``fork`` + ``exec``, so a benchmark child would report its parent's
    peak whenever that is larger. Elsewhere ``ru_maxrss`` (KiB on Linux/BSD, bytes on macOS).
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


# --- the workload --------------------------------------------------------------------------------------


class TxnClient(Protocol):
    """The few calls the workload makes; one adapter per client library.

    ``send`` is the library's own call (a bound method or the like), not an adapter method: the
    loop calls it once per record, as an application's loop would, so what is measured per
    record is the client's work and not an extra Python frame of ours (about 0.05 us per record,
    which is 5 % of what the compiled path costs). ``queue_full`` names the exceptions with which
    a library says its local queue is full (confluent-kafka's BufferError; ``()`` for the
    others): the loop then calls ``on_queue_full()`` and sends the record again, as its users do.
    ``prepare(topic)`` fetches the topic's metadata before the timed loop: a one-off per topic,
    like ``init`` (a client that blocks in its first send for it would otherwise count 50-100 ms
    of metadata round trips in a run that lasts well under a second; the Java run's untimed
    warm-up does the same).
    """

    name: str
    send: Callable[[str, bytes], Any]
    queue_full: tuple[type[BaseException], ...]

    def init(self) -> None: ...
    def prepare(self, topic: str) -> None: ...
    def begin(self) -> None: ...
    def on_queue_full(self) -> None: ...
    def commit(self) -> None: ...
    def close(self) -> None: ...


@dataclass
class PerfResult:
    """What one run measured. ``to_dict()`` is the ``--json`` output (stable key names)."""

    client: str
    records: int
    transactions: int
    record_size: int
    elapsed_s: float
    commit_latencies_ms: list[float] = field(repr=False)
    peak_rss_bytes: int
    init_s: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    # CPU seconds while the records were sent: every thread of the process (the client's own
    # network threads too, C ones included), and the thread that called send()/commit(). Why:
    # on a shared machine wall-clock throughput varies a lot between runs, CPU per record less,
    # and the split shows which thread a change made cheaper.
    cpu_s: float = 0.0
    app_cpu_s: float = 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.records * self.record_size / self.elapsed_s / (1024 * 1024) if self.elapsed_s > 0 else 0.0

    @property
    def transactions_per_s(self) -> float:
        return self.transactions / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def cpu_us_per_record(self) -> float:
        return self.cpu_s / self.records * 1e6 if self.records else 0.0

    @property
    def cpu_us_per_transaction(self) -> float:
        return self.cpu_s / self.transactions * 1e6 if self.transactions else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "commit_latencies_ms"}
        out["records_per_s"] = self.records_per_s
        out["mb_per_s"] = self.mb_per_s
        out["transactions_per_s"] = self.transactions_per_s
        out["cpu_us_per_record"] = self.cpu_us_per_record
        out["cpu_us_per_transaction"] = self.cpu_us_per_transaction
        out["app_cpu_us_per_record"] = self.app_cpu_s / self.records * 1e6 if self.records else 0.0
        # JSON has no NaN: an empty summary (no transactions) becomes null
        out["commit_latency_ms"] = {k: (None if math.isnan(v) else v)
                                    for k, v in latency_summary(self.commit_latencies_ms).items()}
        out["peak_rss_mib"] = self.peak_rss_bytes / (1024 * 1024)
        return out

    def summary(self) -> str:
        lat = latency_summary(self.commit_latencies_ms)
        batching = ""
        if "records_per_batch" in self.extra:
            batching = (f"; {self.extra['batches_sent']} batches, "
                        f"{self.extra['records_per_batch']:.1f} records/batch")
            if "batches_per_request" in self.extra:
                batching += f", {self.extra['batches_per_request']:.2f} batches/request"
        path = f"; hot path: {self.extra['hot_path']}" if "hot_path" in self.extra else ""
        if self.extra.get("otel"):
            path += f"; otel: {'+'.join(self.extra['otel'])} ({self.extra['otel_spans_exported']} spans)"
        return (
            f"{self.client}: {self.records} records in {self.transactions} transactions, "
            f"{self.elapsed_s:.2f} s: {self.records_per_s:,.0f} records/s, {self.mb_per_s:.2f} MB/s, "
            f"{self.transactions_per_s:,.1f} transactions/s; commit latency ms "
            f"p50 {lat['p50']:.2f} p95 {lat['p95']:.2f} p99 {lat['p99']:.2f} max {lat['max']:.2f}; "
            f"peak RSS {self.peak_rss_bytes / (1024 * 1024):.1f} MiB{batching}"
            + (f"; CPU {self.cpu_us_per_record:.1f} us/record "
               f"({self.app_cpu_s / self.records * 1e6:.1f} in the sending thread)"
               if self.records and self.cpu_s else "")
            + path
        )


class Progress:
    """One line on stderr, rewritten in place on a terminal, else printed every few seconds."""

    def __init__(self, total: int, stream: TextIO | None, interval_s: float = PROGRESS_INTERVAL_S) -> None:
        self.total = total
        self.stream = stream
        self.tty = bool(stream is not None and stream.isatty())
        self.interval_s = interval_s if self.tty else max(interval_s, 5.0)
        self.started = time.monotonic()
        self.next_at = self.started + self.interval_s

    def update(self, done: int, transactions: int, now: float) -> None:
        if self.stream is None or now < self.next_at:
            return
        self.next_at = now + self.interval_s
        elapsed = max(now - self.started, 1e-9)
        share = done / self.total if self.total else 1.0
        width = 30
        bar = "#" * int(share * width)
        line = (f"[{bar:<{width}}] {share * 100:5.1f}% {done}/{self.total} records, {transactions} txns, "
                f"{done / elapsed:,.0f} records/s")
        self.stream.write(("\r" + line) if self.tty else (line + "\n"))
        self.stream.flush()

    def finish(self) -> None:
        if self.stream is not None and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def run_workload(
    client: TxnClient,
    topic: str,
    num_records: int,
    record_size: int,
    records_per_txn: int | None = 1000,
    txn_duration_ms: int | None = None,
    max_seconds: float | None = None,
    progress: TextIO | None = None,
    config: dict[str, Any] | None = None,
) -> PerfResult:
    """Initialize ``client``, then send ``num_records`` records in transactions and time each commit.

    A transaction ends after ``records_per_txn`` records or, with ``txn_duration_ms``, once it has
    been open that long (kafka-producer-perf-test's ``--transaction-duration-ms``). ``max_seconds``
    bounds the run: it stops at the next transaction boundary and reports what it did. Throughput
    counts from the first ``begin`` to the last commit (``init`` is timed separately: it includes
    connecting and fencing, which a long-running application pays once).
    """
    if (records_per_txn is None) == (txn_duration_ms is None):
        raise ValueError("give exactly one of records_per_txn and txn_duration_ms")
    if records_per_txn is not None and records_per_txn < 1:
        raise ValueError(f"records_per_txn must be >= 1, got {records_per_txn}")
    # One random payload, reused (as kafka-producer-perf-test does): we measure the client, not os.urandom.
    payload = os.urandom(record_size)
    t0 = time.monotonic()
    client.init()
    client.prepare(topic)
    init_s = time.monotonic() - t0
    bar = Progress(num_records, progress)
    latencies: list[float] = []
    sent = 0
    transactions = 0
    cpu_start, app_cpu_start = time.process_time(), time.thread_time()
    start = time.monotonic()
    deadline = start + max_seconds if max_seconds is not None else math.inf
    duration_s = txn_duration_ms / 1000 if txn_duration_ms is not None else math.inf
    per_txn = records_per_txn if records_per_txn is not None else num_records
    send = client.send
    queue_full = client.queue_full
    monotonic = time.monotonic
    while sent < num_records:
        client.begin()
        txn_start = monotonic()
        txn_end = txn_start + duration_s
        in_txn = 0
        limit = min(per_txn, num_records - sent)
        while in_txn < limit:
            try:  # costs nothing while nothing is raised (Python >= 3.11), next to nothing before
                send(topic, payload)
            except queue_full:
                client.on_queue_full()
                send(topic, payload)
            in_txn += 1
            # checking the clock every record would cost more than the send itself
            if txn_duration_ms is not None and in_txn % 64 == 0 and monotonic() >= txn_end:
                break
        commit_start = monotonic()
        client.commit()
        now = monotonic()
        latencies.append((now - commit_start) * 1000.0)
        sent += in_txn
        transactions += 1
        bar.update(sent, transactions, now)
        if now >= deadline:
            break
    elapsed = monotonic() - start
    cpu_s, app_cpu_s = time.process_time() - cpu_start, time.thread_time() - app_cpu_start
    bar.finish()
    return PerfResult(
        client=client.name,
        records=sent,
        transactions=transactions,
        record_size=record_size,
        elapsed_s=elapsed,
        commit_latencies_ms=latencies,
        peak_rss_bytes=peak_rss_bytes(),
        init_s=init_s,
        config=dict(config or {}),
        cpu_s=cpu_s,
        app_cpu_s=app_cpu_s,
    )


class TxnProducerClient:
    """:class:`TxnClient` over our TransactionalProducer."""

    name = "txnproducer"
    queue_full: tuple[type[BaseException], ...] = ()  # send() blocks (max_block_ms) instead

    def __init__(self, **settings: Any) -> None:
        from txnproducer import TransactionalProducer

        self.producer = TransactionalProducer(**settings)
        # the producer's own send (on the compiled path the extension's object itself)
        self.send: Callable[[str, bytes], Any] = self.producer.send

    def init(self) -> None:
        self.producer.init_transactions()

    def prepare(self, topic: str) -> None:
        self.producer.partitions_for(topic)

    def begin(self) -> None:
        self.producer.begin_transaction()

    def on_queue_full(self) -> None:  # never called: queue_full is empty
        pass

    def commit(self) -> None:
        self.producer.commit_transaction()

    def close(self) -> None:
        self.producer.close()


def producer_diagnostics(producer: Any) -> dict[str, Any]:
    """Transaction version and batching figures: records per batch explains most throughput changes
    (each Produce request has a fixed cost in the Sender thread)."""
    out: dict[str, Any] = {"transaction_version": producer.transaction_version,
                           "hot_path": accel.PATH, "hot_path_detail": accel.REASON}
    metrics = producer.metrics()
    batches = metrics.get("batches_sent", 0.0)
    requests = metrics.get("produce_requests_sent", 0.0)
    out["batches_sent"] = int(batches)
    out["produce_requests_sent"] = int(requests)
    if batches:
        out["records_per_batch"] = metrics.get("records_sent", 0.0) / batches
        out["bytes_per_batch"] = metrics.get("bytes_sent", 0.0) / batches
    if requests:
        out["batches_per_request"] = batches / requests
    return out


# --- where the records go ----------------------------------------------------------------------------


@contextmanager
def bootstrap_for(args: argparse.Namespace, topics: Sequence[str]) -> Iterator[str]:
    """The ``--bootstrap`` cluster (topics created there), else a fresh standalone mock cluster."""
    if args.bootstrap:
        security = {k: v for k, v in extra_settings(args).items()
                    if k == "security_protocol" or k.startswith(("ssl_", "sasl_"))}
        for topic in topics:
            create_topic(args.bootstrap, topic, args.partitions, **security)
        yield args.bootstrap
        return
    with mock_cluster_process(args.brokers, args.transaction_version, args.partitions, topics,
                              crc_check=not args.no_crc_check) as servers:
        yield servers


# --- command line ------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``txnproducer perf`` (names follow kafka-producer-perf-test where one exists)."""
    parser.add_argument("--num-records", type=_positive_int, default=100_000,
                        help="records to send (default 100000)")
    parser.add_argument("--record-size", type=_non_negative_int, default=100,
                        help="value size in bytes (default 100)")
    per_txn = parser.add_mutually_exclusive_group()
    per_txn.add_argument("--records-per-txn", type=_positive_int, default=None,
                         help="records per transaction (default 1000)")
    per_txn.add_argument("--txn-duration-ms", type=_positive_int, default=None,
                         help="commit each transaction after it has been open this long instead")
    parser.add_argument("--acks", default="all", choices=("all", "-1"),
                        help="acks (transactions require all; accepted for compatibility)")
    parser.add_argument("--linger-ms", type=_non_negative_int, default=5, help="linger.ms (default 5)")
    parser.add_argument("--batch-size", type=_positive_int, default=262144,
                        help="batch.size (default 262144, the producer's)")
    parser.add_argument("--buffer-memory", type=_positive_int, default=33554432,
                        help="buffer.memory (default 33554432)")
    parser.add_argument("--compression", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"),
                        help="compression.type (default none)")
    parser.add_argument("--partitions", type=_positive_int, default=3,
                        help="partitions of the topic when this tool creates it (default 3)")
    parser.add_argument("--topic", default=None, help="topic (default: a new perf-<random> topic)")
    parser.add_argument("--transactional-id", default=None, help="default: perf-<random>")
    parser.add_argument("--bootstrap", default=None,
                        help="bootstrap servers of a real Kafka; default: start a standalone MockCluster "
                             "in a separate process and stop it afterwards")
    parser.add_argument("--transaction-version", type=int, choices=(0, 1, 2), default=2,
                        help="transaction.version of the started MockCluster (default 2)")
    parser.add_argument("--brokers", type=_positive_int, default=1,
                        help="brokers of the started MockCluster (default 1)")
    parser.add_argument("--no-crc-check", action="store_true",
                        help="the started MockCluster skips CRC validation (less broker CPU)")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="stop at the first transaction boundary after this long")
    parser.add_argument("--producer-props", nargs="+", default=[], metavar="KEY=VALUE",
                        help="more producer settings, Java or Python names (security.protocol=SASL_SSL ...); "
                             "they win over the options above")
    parser.add_argument("--producer.config", "--producer-config", dest="producer_config", default=None,
                        metavar="FILE", help="a Java .properties file of producer settings (a secured "
                                             "cluster's, say); --producer-props win over it")
    parser.add_argument("--otel", choices=OTEL_MODES, action="append", default=[],
                        help="trace (spans per transaction and batch; record-spans: per record too) and/or "
                             "export metrics with the OpenTelemetry SDK, to exporters that drop them: what "
                             "telemetry costs (repeatable; needs opentelemetry-sdk)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="txnproducer perf",
        description="Measure transactional produce throughput and commit latency "
                    "(like kafka-producer-perf-test).",
    )
    add_arguments(parser)
    return parser


def extra_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``--producer.config`` then ``--producer-props``, in Python names (ConfigError on a bad key)."""
    from txnproducer._internal.config_names import coerce_text
    from txnproducer._internal.properties_file import load_properties, parse_properties
    from txnproducer.config import ProducerConfig

    given = load_properties(args.producer_config) if args.producer_config else {}
    given.update(parse_properties("\n".join(args.producer_props), "--producer-props"))
    return {key: coerce_text(ProducerConfig, key, value)
            for key, value in ProducerConfig.normalize_keys(given).items()}


def producer_settings(args: argparse.Namespace, bootstrap: str) -> dict[str, Any]:
    """TransactionalProducer settings for the parsed options."""
    return {
        "bootstrap_servers": bootstrap,
        "transactional_id": args.transactional_id or f"perf-{uuid.uuid4().hex[:12]}",
        "linger_ms": args.linger_ms,
        "batch_size": args.batch_size,
        "buffer_memory": args.buffer_memory,
        "compression_type": args.compression,
        **extra_settings(args),
    }


def run(args: argparse.Namespace, out: TextIO | None = None,
        client_factory: Callable[[dict[str, Any]], TxnClient] | None = None) -> int:
    """Run the benchmark the parsed ``args`` describe; print the summary (or JSON); return 0."""
    stream = out if out is not None else sys.stdout
    topic = args.topic or f"perf-{uuid.uuid4().hex[:8]}"
    records_per_txn = args.records_per_txn
    if records_per_txn is None and args.txn_duration_ms is None:
        records_per_txn = 1000
    factory = client_factory or (lambda settings: TxnProducerClient(**settings))
    telemetry = PerfTelemetry(args.otel) if args.otel else None
    with bootstrap_for(args, [topic]) as bootstrap:
        settings = producer_settings(args, bootstrap)
        if telemetry is not None:
            settings.update(telemetry.settings)
        client = factory(settings)
        try:
            config = {
                "bootstrap": bootstrap,
                "mock_cluster": not args.bootstrap,
                "topic": topic,
                "num_records": args.num_records,
                "records_per_txn": records_per_txn,
                "txn_duration_ms": args.txn_duration_ms,
                "linger_ms": args.linger_ms,
                "batch_size": args.batch_size,
                "compression": args.compression,
                "partitions": args.partitions,
            }
            result = run_workload(
                client, topic, args.num_records, args.record_size,
                records_per_txn=records_per_txn, txn_duration_ms=args.txn_duration_ms,
                max_seconds=args.max_seconds, progress=None if args.no_progress else sys.stderr,
                config=config,
            )
            producer = getattr(client, "producer", None)
            if producer is not None:
                result.extra.update(producer_diagnostics(producer))
        finally:
            client.close()
    if telemetry is not None:
        result.extra.update(telemetry.finish())
    if args.json:
        stream.write(json.dumps(result.to_dict(), sort_keys=True) + "\n")
    else:
        stream.write(result.summary() + "\n")
    stream.flush()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m txnproducer.perf [options]``: parse and run."""
    return run(_parser().parse_args(list(argv) if argv is not None else None))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
