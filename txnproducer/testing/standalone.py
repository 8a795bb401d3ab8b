"""Run a MockCluster as a stand-alone process (for demos, benchmarks, other languages' clients).

    python -m txnproducer.testing.standalone --brokers 3 --port 9092 --transaction-version 2

prints ``bootstrap_servers=127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094`` (flushed) once every broker
listens, then serves until SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from .cluster import MockCluster


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="txnproducer-mock-cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=9092,
        help="port of the first broker; the others follow (0 = ephemeral; default 9092)",
    )
    parser.add_argument(
        "--transaction-version",
        type=int,
        choices=(0, 1, 2),
        default=2,
        help="finalized transaction.version feature (default 2)",
    )
    parser.add_argument("--partitions", type=int, default=3, help="partitions of auto-created topics")
    parser.add_argument("--no-auto-create", action="store_true", help="do not auto-create topics on Metadata")
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="create a topic at start (repeatable)",
    )
    parser.add_argument("--no-crc-check", action="store_true", help="skip CRC validation of produced batches")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    cluster = MockCluster(
        num_brokers=args.brokers,
        transaction_version=args.transaction_version,
        host=args.host,
        port=args.port,
        auto_create_topics=not args.no_auto_create,
        default_partitions=args.partitions,
        validate_crc=not args.no_crc_check,
    )
    try:
        cluster.start()
    except OSError as exc:
        print(f"cannot start the mock cluster: {exc}", file=sys.stderr)
        return 1
    try:
        for spec in args.topic:
            name, _, count = spec.partition(":")
            cluster.create_topic(name, int(count) if count else args.partitions)
        print(f"bootstrap_servers={cluster.bootstrap_servers}", flush=True)
        while not stop.wait(1.0):
            pass
    finally:
        cluster.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
