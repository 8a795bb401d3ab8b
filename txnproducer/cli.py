"""The ``txnproducer`` command: a demo, a standalone mock cluster, a benchmark, and the admin tools.

Why a CLI at all: ``txnproducer demo`` is the quickest proof that exactly-once works end to end
(commit, abort, commit; a ``read_committed`` consumer sees only the committed records), and
``txnproducer mock-cluster`` lets other clients (Java, librdkafka, kcat) talk to the mock;
``txnproducer transactions`` and ``txnproducer spark status`` are the operator's tools
(``txnproducer.admin``).

Heavy imports (the producer, the mock cluster, kafka-python's consumer) happen inside the
sub-commands so that ``txnproducer --help`` is instant and a broken optional part cannot break the
others.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

__all__ = ["DemoResult", "main", "run_demo"]

DEMO_COMMITTED_FIRST = 10
DEMO_ABORTED = 10
DEMO_COMMITTED_SECOND = 3
DEMO_PARTITIONS = 3
# Bound on every wait in the demo (connect, commit, consume): the demo must never hang.
DEMO_TIMEOUT_S = 60.0


_PAST = {"commit": "committed", "abort": "aborted"}


class DemoResult:
    """What the demo's read_committed consumer saw (values in partition/offset order)."""

    def __init__(self, topic: str, values: list[str]) -> None:
        self.topic = topic
        self.values = values

    @property
    def expected(self) -> list[str]:
        first = [f"committed-{i}" for i in range(DEMO_COMMITTED_FIRST)]
        second = [
            f"committed-{i}"
            for i in range(DEMO_COMMITTED_FIRST, DEMO_COMMITTED_FIRST + DEMO_COMMITTED_SECOND)
        ]
        return first + second

    @property
    def ok(self) -> bool:
        return sorted(self.values) == sorted(self.expected)


def _print(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")
    out.flush()


@contextmanager
def _bootstrap(bootstrap: str | None, transaction_version: int, out: TextIO) -> Iterator[str]:
    """Yield bootstrap servers: the given ones, $KAFKA_BOOTSTRAP_SERVERS, or an embedded mock."""
    servers = bootstrap or os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if servers:
        _print(out, f"Using Kafka at {servers}")
        yield servers
        return
    from txnproducer.testing import MockCluster

    with MockCluster(num_brokers=3, transaction_version=transaction_version) as cluster:
        _print(
            out,
            f"Using an embedded MockCluster (3 brokers, transaction.version={transaction_version}) "
            f"at {cluster.bootstrap_servers}",
        )
        yield cluster.bootstrap_servers


def _create_topic(servers: str, topic: str) -> None:
    """Create the demo topic explicitly: real clusters often disable auto-creation."""
    from txnproducer.admin.connection import AdminConnection
    from txnproducer.admin.create_topics import create_topic
    from txnproducer.admin.settings import AdminSettings

    settings = AdminSettings.from_mapping({"bootstrap_servers": servers,
                                           "default.api.timeout.ms": int(DEMO_TIMEOUT_S * 1000)})
    conn = AdminConnection(settings)
    try:
        create_topic(conn, topic, DEMO_PARTITIONS, conn.deadline(), replication_factor=1)
    finally:
        conn.close()


def _produce(servers: str, topic: str, out: TextIO) -> None:
    from txnproducer import ProducerConfig, TransactionalProducer

    config = ProducerConfig(
        bootstrap_servers=servers,
        transactional_id=f"txnproducer-demo-{uuid.uuid4().hex[:8]}",
        value_serializer=lambda v: str(v).encode(),
        max_block_ms=int(DEMO_TIMEOUT_S * 1000),
    )
    producer = TransactionalProducer(config)
    try:
        producer.init_transactions()
        steps = (
            ("commit", range(0, DEMO_COMMITTED_FIRST), "committed"),
            ("abort", range(DEMO_ABORTED), "aborted"),
            (
                "commit",
                range(DEMO_COMMITTED_FIRST, DEMO_COMMITTED_FIRST + DEMO_COMMITTED_SECOND),
                "committed",
            ),
        )
        for number, (action, indexes, prefix) in enumerate(steps, start=1):
            producer.begin_transaction()
            for i in indexes:
                producer.send(topic, value=f"{prefix}-{i}", key=str(i).encode())
            if action == "commit":
                producer.commit_transaction()
            else:
                producer.flush()  # the records reach the log before the abort marker hides them
                producer.abort_transaction()
            _print(out, f"transaction {number}: sent {len(indexes)} records, {_PAST[action]}")
    finally:
        producer.close()


def _consume_committed(servers: str, topic: str) -> list[str]:
    """Read the whole topic with isolation.level=read_committed, up to the last stable offset."""
    from kafka.structs import TopicPartition

    from txnproducer import TransactionalConsumer

    with TransactionalConsumer(bootstrap_servers=servers, auto_offset_reset="earliest",
                               request_timeout_ms=int(DEMO_TIMEOUT_S * 1000) // 2) as consumer:
        partitions = [TopicPartition(topic, p) for p in range(DEMO_PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_end(partitions)
        # read_committed: the end is the last stable offset, everything decided so far
        end = {tp: consumer.position(tp, timeout=DEMO_TIMEOUT_S) for tp in partitions}
        consumer.seek_to_beginning()
        values: list[str] = []
        deadline = time.monotonic() + DEMO_TIMEOUT_S
        while any(consumer.position(tp, timeout=DEMO_TIMEOUT_S) < end[tp] for tp in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"consumer did not reach the end offsets {end} within {DEMO_TIMEOUT_S}s")
            values.extend(r.value.decode() for r in consumer.poll(timeout=0.5) if r.value is not None)
        return values


def run_demo(
    bootstrap: str | None = None, transaction_version: int = 2, out: TextIO | None = None
) -> DemoResult:
    """Commit 10 records, abort 10, commit 3; return what a read_committed consumer sees (13)."""
    stream = out if out is not None else sys.stdout
    with _bootstrap(bootstrap, transaction_version, stream) as servers:
        topic = f"txnproducer-demo-{uuid.uuid4().hex[:8]}"
        _create_topic(servers, topic)
        _print(stream, f"Topic {topic} ({DEMO_PARTITIONS} partitions)")
        _produce(servers, topic, stream)
        values = _consume_committed(servers, topic)
    result = DemoResult(topic, values)
    _print(stream, f"A read_committed kafka-python consumer sees {len(values)} records:")
    _print(stream, "  " + ", ".join(sorted(values, key=_demo_sort_key)))
    if result.ok:
        _print(stream, "OK: every committed record is visible once; no aborted record is visible.")
    else:
        _print(stream, f"UNEXPECTED: wanted the {len(result.expected)} committed records only.")
    return result


def _demo_sort_key(value: str) -> tuple[str, int]:
    prefix, _, number = value.rpartition("-")
    return (prefix, int(number) if number.isdigit() else -1)


# --- argument parsing -------------------------------------------------------------------------------


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="txnproducer",
        description="Exactly-once transactional Kafka producer: demo, mock cluster, benchmarks, admin tools.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    demo = sub.add_parser(
        "demo",
        help="commit 10, abort 10, commit 3 records; show what a read_committed consumer sees",
        description="Runs against --bootstrap, else $KAFKA_BOOTSTRAP_SERVERS, else an embedded MockCluster.",
    )
    demo.add_argument("--bootstrap", help="bootstrap servers of a real Kafka (host:port[,host:port])")
    demo.add_argument("-v", "--verbose", action="store_true", help="show the producer's debug log on stderr")
    demo.add_argument(
        "--transaction-version",
        type=int,
        choices=(1, 2),
        default=2,
        help="transaction.version of the embedded MockCluster (ignored for a real Kafka; default 2)",
    )

    sub.add_parser(
        "mock-cluster",
        help="run a standalone MockCluster (see 'txnproducer mock-cluster --help')",
        add_help=False,
        prefix_chars="\0",  # forward every argument, including --help, to the mock cluster
    ).add_argument("args", nargs=argparse.REMAINDER)

    sub.add_parser(
        "perf",
        help="transactional throughput / commit latency benchmark (see 'txnproducer perf --help')",
        add_help=False,
        prefix_chars="\0",
    ).add_argument("args", nargs=argparse.REMAINDER)

    sub.add_parser(
        "transactions",
        help="list, describe, find hanging and abort transactions (see 'txnproducer transactions --help')",
        add_help=False,
        prefix_chars="\0",
    ).add_argument("args", nargs=argparse.REMAINDER)

    sub.add_parser(
        "spark",
        help="the PySpark sink's transactions: 'txnproducer spark status --help'",
        add_help=False,
        prefix_chars="\0",
    ).add_argument("args", nargs=argparse.REMAINDER)
    return parser


# Sub-commands implemented elsewhere: (module, function); each function(argv) parses its own options.
_DELEGATES = {
    "mock-cluster": ("txnproducer.testing.standalone", "main"),
    "perf": ("txnproducer.perf", "main"),
    "transactions": ("txnproducer.admin.cli", "transactions_main"),
    "spark": ("txnproducer.admin.cli", "spark_main"),
}


def _configure_logging(verbose: bool) -> None:
    """The CLI is an application, so it decides where library logs go: stderr, warnings unless -v.

    Library events go through the standard ``logging`` module (see ``_internal/log.py``), so this
    is ordinary logging configuration and leaves structlog's global state alone.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for noisy in ("kafka",):  # kafka-python's own loggers stay at WARNING even with -v
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``txnproducer`` console script; returns the process exit code."""
    args = _build_parser().parse_args(list(argv) if argv is not None else None)
    _configure_logging(getattr(args, "verbose", False))
    if args.command == "demo":
        result = run_demo(args.bootstrap, args.transaction_version)
        return 0 if result.ok else 1
    if args.command in _DELEGATES:
        module_name, function = _DELEGATES[args.command]
        module = importlib.import_module(module_name)
        code: int | None = getattr(module, function)(list(args.args))
        return int(code or 0)
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
