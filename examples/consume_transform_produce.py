"""Exactly-once consume-transform-produce, surviving a crash mid-transaction.

What it shows: two ``TransactionalProcessor`` instances ("alpha" and "beta") in one consumer group
read an input topic, upper-case every record and write it to an output topic. Outputs and input
offsets commit in the same Kafka transaction. Halfway through, "alpha" dies mid-transaction: its
outputs are already in the output log and its offsets are added to the transaction, but it neither
commits nor aborts, nor leaves the group. It is restarted with the same instance name, so it gets
the same transactional id: ``init_transactions`` fences the dead instance and the coordinator
aborts what it left open. A read_committed consumer of the output then finds each input exactly
once - while a read_uncommitted consumer also sees the aborted leftovers.

Run it with ``python examples/consume_transform_produce.py [--inputs N]``. It uses
``$KAFKA_BOOTSTRAP_SERVERS`` when set (topics are created; needs Kafka >= 2.5 for KIP-447), otherwise
an in-process ``MockCluster``. ``run_demo()`` is the entry point for other callers; it returns
True when the output is exactly right.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any, TextIO

import structlog
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import TopicPartition

from txnproducer.eos import OutputRecord, TransactionalProcessor

PARTITIONS = 3
TIMEOUT_S = 60.0  # bound on every wait below: the demo never hangs


@contextlib.contextmanager
def kafka(bootstrap: str | None, transaction_version: int, out: TextIO) -> Iterator[tuple[str, bool]]:
    """(bootstrap servers, is_mock): a real Kafka from the argument/environment, or a mock cluster."""
    servers = bootstrap or os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if servers:
        print(f"Using Kafka at {servers}", file=out)
        yield servers, False
        return
    from txnproducer.testing import MockCluster

    with MockCluster(num_brokers=3, transaction_version=transaction_version) as cluster:
        print(f"Using an embedded MockCluster (3 brokers, transaction.version={transaction_version})",
              file=out)
        yield cluster.bootstrap_servers, True


def create_topics(servers: str, *names: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=servers, request_timeout_ms=int(TIMEOUT_S * 1000))
    try:
        admin.create_topics([NewTopic(n, num_partitions=PARTITIONS, replication_factor=1) for n in names])
    finally:
        admin.close()


def produce_inputs(servers: str, topic: str, first: int, stop: int) -> dict[TopicPartition, int]:
    """Write inputs ``first`` .. ``stop - 1`` (plain, non-transactional); return the input end offsets."""
    producer = KafkaProducer(bootstrap_servers=servers, acks="all", linger_ms=5)
    try:
        for i in range(first, stop):
            producer.send(topic, value=f"order-{i}".encode(), partition=i % PARTITIONS)
        producer.flush(timeout=TIMEOUT_S)
    finally:
        producer.close(timeout=10)
    consumer = KafkaConsumer(bootstrap_servers=servers)
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return dict(consumer.end_offsets(parts))
    finally:
        consumer.close()


def make_transform(out_topic: str) -> Any:
    def transform(record: Any) -> list[OutputRecord]:
        """One output per input: the value upper-cased, tagged with where the input came from."""
        origin = f"{record.partition}:{record.offset}"
        return [OutputRecord(out_topic, value=record.value.upper(), key=origin.encode(),
                             partition=record.partition, headers=[("origin", origin.encode())])]

    return transform


class Progress:
    """The highest input offsets committed by any instance (from ``on_commit``), to wait on."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.committed: dict[TopicPartition, int] = {}

    def on_commit(self, offsets: dict[TopicPartition, Any]) -> None:
        with self.cond:
            for tp, om in offsets.items():
                self.committed[tp] = max(self.committed.get(tp, 0), om.offset)
            self.cond.notify_all()

    def on_assigned(self, _partitions: set[TopicPartition]) -> None:
        with self.cond:
            self.cond.notify_all()

    def total(self) -> int:
        return sum(self.committed.values())

    def wait(self, what: str, predicate: Any, detail: Any = None) -> None:
        with self.cond:
            if not self.cond.wait_for(predicate, timeout=TIMEOUT_S):
                extra = f" ({detail()})" if detail is not None else ""
                raise TimeoutError(f"timed out after {TIMEOUT_S}s waiting until {what}{extra}")


def describe(*processors: TransactionalProcessor) -> str:
    """Each processor's partitions and counters, for a message that explains a timeout."""
    return "; ".join(
        f"{p.transactional_id}: partitions {sorted(tp.partition for tp in p.assignment())}, {p.metrics()}"
        for p in processors)


def start(processor: TransactionalProcessor, failures: list[BaseException]) -> threading.Thread:
    def body() -> None:
        try:
            processor.run()
        except BaseException as exc:  # shown at the end; the demo then fails
            failures.append(exc)

    thread = threading.Thread(target=body, name=f"processor-{processor.transactional_id}", daemon=True)
    thread.start()
    return thread


def read_output(servers: str, topic: str, isolation_level: str) -> list[Any]:
    consumer = KafkaConsumer(bootstrap_servers=servers, isolation_level=isolation_level,
                             enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        end = consumer.end_offsets(parts)  # read_committed: the last stable offsets
        records: list[Any] = []
        deadline = time.monotonic() + TIMEOUT_S
        while any(consumer.position(tp) < end[tp] for tp in parts):
            if time.monotonic() > deadline:
                raise TimeoutError(f"output not read to {end} within {TIMEOUT_S}s")
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def run_demo(bootstrap: str | None = None, inputs: int = 3000, transaction_version: int = 2,
             out: TextIO | None = None) -> bool:
    """Run the whole scenario and print what happened; True if the output holds each input once."""
    out = out if out is not None else sys.stdout
    tag = uuid.uuid4().hex[:8]
    in_topic, out_topic, group = f"ctp-in-{tag}", f"ctp-out-{tag}", f"ctp-demo-{tag}"
    with kafka(bootstrap, transaction_version, out) as (servers, is_mock):
        create_topics(servers, in_topic, out_topic)
        half = inputs // 2
        produce_inputs(servers, in_topic, 0, half)
        print(f"Produced {half} inputs to {in_topic} ({PARTITIONS} partitions)", file=out)

        progress = Progress()
        failures: list[BaseException] = []
        # A real broker refuses session timeouts below group.min.session.timeout.ms (6 s).
        session_ms = 2000 if is_mock else 6000
        consumer_config = {"bootstrap_servers": servers, "group_id": group, "session_timeout_ms": session_ms,
                           "heartbeat_interval_ms": session_ms // 10, "max_poll_interval_ms": 3 * session_ms}

        def processor(name: str) -> TransactionalProcessor:
            return TransactionalProcessor(
                in_topic, consumer_config=consumer_config,
                producer_config={"linger_ms": 5, "transaction_timeout_ms": 30000},
                instance_name=name,  # transactional id "<group>-<name>": stable across restarts
                transform=make_transform(out_topic), max_records_per_txn=200, max_txn_time_ms=500,
                on_commit=progress.on_commit, on_assigned=progress.on_assigned)

        alpha, beta = processor("alpha"), processor("beta")
        threads = [start(alpha, failures), start(beta, failures)]
        running = [alpha, beta]
        try:
            progress.wait("a third of the inputs are committed", lambda: progress.total() >= inputs // 3)
            # alpha must hold partitions to reach a commit point with the inputs that follow
            progress.wait("alpha and beta both hold partitions",
                          lambda: bool(alpha.assignment()) and bool(beta.assignment()),
                          detail=lambda: describe(alpha, beta))
            alpha.simulate_crash("before_commit")  # dies at its next commit point ...
            ends = produce_inputs(servers, in_topic, half, inputs)  # ... which more input guarantees
            print(f"Produced {inputs - half} more inputs", file=out)
            threads[0].join(TIMEOUT_S)
            if threads[0].is_alive():
                raise TimeoutError(f"alpha did not reach a commit point within {TIMEOUT_S}s: "
                                   f"{describe(alpha, beta)}")
            print(f"Killed alpha mid-transaction after {progress.total()} inputs were committed "
                  "(its outputs are in the log, its offsets pending; no commit, no abort)", file=out)

            alpha = processor("alpha")  # same transactional id: fences the dead one
            running.append(alpha)
            threads.append(start(alpha, failures))
            print("Restarted alpha: init_transactions fenced the old instance; its transaction is aborted",
                  file=out)
            progress.wait("every input is committed", lambda: bool(failures) or all(
                progress.committed.get(tp) == n for tp, n in ends.items()))
        finally:
            for p in running:
                p.stop(TIMEOUT_S)  # a no-op for the crashed instance
            for t in threads:
                t.join(TIMEOUT_S)
        if failures:
            print(f"FAILED: a processor raised {failures[0]!r}", file=out)
            return False

        return check_output(servers, out_topic, ends, inputs, out)


def check_output(servers: str, out_topic: str, ends: dict[TopicPartition, int], inputs: int,
                 out: TextIO) -> bool:
    """Print what read_committed and read_uncommitted consumers see; True if the committed output
    holds each input (partition:offset up to ``ends``) exactly once, transformed."""
    committed = read_output(servers, out_topic, "read_committed")
    everything = read_output(servers, out_topic, "read_uncommitted")
    origins = [r.key.decode() for r in committed]
    expected = {f"{tp.partition}:{o}" for tp, n in ends.items() for o in range(n)}
    duplicates = len(origins) - len(set(origins))
    missing = len(expected - set(origins))
    wrong = sum(1 for r in committed if not r.value.startswith(b"ORDER-"))
    print(f"A read_committed consumer sees {len(committed)} outputs for {inputs} inputs: "
          f"{missing} missing, {duplicates} duplicated, {wrong} not transformed", file=out)
    print(f"(a read_uncommitted consumer sees {len(everything)}: the aborted transaction's leftovers "
          f"are in the log, hidden by its ABORT marker)", file=out)
    ok = missing == 0 and duplicates == 0 and wrong == 0 and len(committed) == inputs
    print("OK: each input was transformed and written exactly once." if ok else "UNEXPECTED output.",
          file=out)
    return ok


def demo_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options (also the asyncio example's)."""
    parser.add_argument("--inputs", type=int, default=3000, help="number of input records (default 3000)")
    parser.add_argument("--bootstrap", help="bootstrap servers of a real Kafka (default: "
                        "$KAFKA_BOOTSTRAP_SERVERS or an embedded MockCluster)")
    parser.add_argument("--transaction-version", type=int, choices=(1, 2), default=2,
                        help="transaction.version of the embedded MockCluster (default 2)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    demo_arguments(parser)
    args = parser.parse_args(argv)
    # txnproducer logs through structlog; an application chooses the level. Errors only here: the
    # deliberate crash logs warnings that would only distract.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    logging.basicConfig(level=logging.CRITICAL)  # kafka-python's own logging: quiet for the demo
    return 0 if run_demo(args.bootstrap, args.inputs, args.transaction_version) else 1


if __name__ == "__main__":
    sys.exit(main())
