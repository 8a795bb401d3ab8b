"""One member of ``rebalance_pause.py``'s group, in its own process: our processor or confluent-kafka's loop.

    python benchmarks/_rebalance_member.py --variant consumer --bootstrap HOST:PORT --group g --name p1 \\
        --input in --output out [--slow] [--max-txn-ms 100]

Why a process per member: every client's members - ours, confluent-kafka's (librdkafka) and the Java
client's (``java/RebalanceMember.java``) - then run alike, each with its own interpreter or JVM, and a
kill is a real ``SIGKILL``: no commit, no leave, the open transaction left to the coordinator's timeout.

Every member does the same thing: read the input (read_committed), write each record's value prefixed by
``<name>:`` to the same partition of the output topic, and commit the outputs and the input offsets in one
transaction at 500 inputs or ``--max-txn-ms`` after the transaction's first input; ``--slow`` sleeps 1.5 s
after each poll that returned records (a slow transform). The prefix is how ``rebalance_pause.py``'s
monitor - one read_committed reader of the output for every variant - knows which member's transaction
made a partition's output visible. Events, one JSON line each on stdout, times ``time.monotonic_ns()``
(CLOCK_MONOTONIC, as the JVM's nanoTime):

    {"ev": "ready", "t": ns}                       about to join (producer initialized where the client
                                                   does that first)
    {"ev": "assigned", "t": ns, "partitions": [..]} the member's whole assignment after each change
    {"ev": "commit", "t": ns, "inputs": n}         a transaction committed (n inputs in it)
    {"ev": "fail", "t": ns, "error": "..."}
    {"ev": "done", "t": ns, "cpu_s": s}            after a graceful stop (stdin closed): left the group

Variants: ``classic-static``, ``classic-dynamic``, ``consumer``, ``consumer-abort`` (our
``TransactionalProcessor``; see ``rebalance_pause.py``) and ``confluent`` (confluent-kafka's ``Consumer``
with ``group.protocol=consumer`` and a transactional ``Producer`` with ``send_offsets_to_transaction``, the
exactly-once loop of its examples, committing the open transaction when partitions are revoked - as our
processor does by default and as Kafka Streams does - and aborting it when they are lost; a transaction that
fails is aborted and its partitions sought back to its first inputs, which are processed again).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SLOW_S = 1.5  # a slow member's transform, per poll
MAX_INPUTS = 500  # inputs per transaction at most
SESSION_MS = 6000  # the classic members' session (the consumer protocol's is the broker's)
TXN_TIMEOUT_MS = 10_000
OUR_VARIANTS = ("classic-static", "classic-dynamic", "consumer", "consumer-abort")
_lock = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    with _lock:
        sys.stdout.write(json.dumps({"ev": event, "t": time.monotonic_ns(), **fields}) + "\n")
        sys.stdout.flush()


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def stop_on_stdin_close(stop: threading.Event, then: Any = None) -> None:
    """A graceful stop when the parent closes our stdin (any line, or its end)."""
    def watch() -> None:
        sys.stdin.readline()
        stop.set()
        if then is not None:
            then()
    threading.Thread(target=watch, daemon=True, name="stdin").start()


def run_ours(args: argparse.Namespace) -> None:
    from txnproducer.eos import OutputRecord, TransactionalProcessor

    consumer: dict[str, Any] = {"bootstrap_servers": args.bootstrap, "group_id": args.group,
                                "max_poll_interval_ms": 30000, "fetch_max_wait_ms": 50,
                                "retry_backoff_ms": 50}
    extra: dict[str, Any] = {}
    if args.variant.startswith("classic"):
        consumer.update(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500)
        if args.variant == "classic-dynamic":
            extra["group_instance_id"] = False
    else:
        consumer["group_protocol"] = "consumer"
        extra["commit_on_revocation"] = args.variant == "consumer"
    prefix = args.name.encode() + b":"
    inputs = [0]

    def transform(records: list[Any]) -> list[OutputRecord]:
        if args.slow:
            time.sleep(SLOW_S)
        inputs[0] += len(records)
        return [OutputRecord(args.output, value=prefix + r.value, partition=r.partition) for r in records]

    def on_commit(_offsets: Any) -> None:
        emit("commit", inputs=inputs[0])
        inputs[0] = 0

    def on_assigned(partitions: set[Any]) -> None:
        emit("assigned", partitions=sorted(tp.partition for tp in partitions))

    proc = TransactionalProcessor(args.input, consumer_config=consumer,
                                  producer_config={"bootstrap_servers": args.bootstrap, "linger_ms": 2,
                                                   "transaction_timeout_ms": TXN_TIMEOUT_MS},
                                  instance_name=args.name, transform_batch=transform,
                                  max_records_per_txn=MAX_INPUTS, max_txn_time_ms=args.max_txn_ms,
                                  poll_timeout_ms=50, on_commit=on_commit, on_assigned=on_assigned, **extra)
    stop = threading.Event()
    stop_on_stdin_close(stop, lambda: proc.stop(timeout=30, leave_group=True))
    emit("ready")
    try:
        proc.run()
    except Exception as exc:  # the benchmark reports it; the member is gone either way
        emit("fail", error=f"{type(exc).__name__}: {exc}"[:500])
    proc.stop(timeout=30, leave_group=True)


def run_confluent(args: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                         "group.protocol": "consumer", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "fetch.wait.max.ms": 50})
    producer = Producer({"bootstrap.servers": args.bootstrap, "transactional.id": f"{args.group}-{args.name}",
                         "linger.ms": 2, "transaction.timeout.ms": TXN_TIMEOUT_MS, "acks": "all"})
    producer.init_transactions()
    prefix = args.name.encode() + b":"
    state: dict[str, Any] = {"open": False, "since": 0.0, "inputs": 0, "offsets": {}, "firsts": {}}
    owned: set[int] = set()  # the callbacks get the increments (the library applies them after the callback)

    def commit() -> None:
        if not state["open"]:
            return
        offsets = [TopicPartition(args.input, p, o) for p, o in state["offsets"].items()]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata())
        producer.commit_transaction()
        emit("commit", inputs=state["inputs"])
        state.update(open=False, inputs=0, offsets={}, firsts={})

    def abort() -> None:
        """Abort the open transaction and go back to its first inputs: they are processed again."""
        if state["open"]:
            state["open"] = False
            producer.abort_transaction()
            for p, first in state["firsts"].items():
                if p in owned:
                    consumer.seek(TopicPartition(args.input, p, first))
        state.update(open=False, inputs=0, offsets={}, firsts={})

    def on_assign(_c: Any, partitions: list[Any]) -> None:
        owned.update(tp.partition for tp in partitions)
        emit("assigned", partitions=sorted(owned))

    def on_revoke(_c: Any, partitions: list[Any]) -> None:
        commit()  # before the partitions go: the new owner starts at these offsets
        owned.difference_update(tp.partition for tp in partitions)
        emit("assigned", partitions=sorted(owned))

    def on_lost(_c: Any, partitions: list[Any]) -> None:
        abort()  # fenced: the offsets cannot be committed any more
        owned.difference_update(tp.partition for tp in partitions)
        emit("assigned", partitions=sorted(owned))

    stop = threading.Event()
    stop_on_stdin_close(stop)
    emit("ready")
    consumer.subscribe([args.input], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    max_txn_s = args.max_txn_ms / 1000
    while not stop.is_set():
        try:
            records = consumer.consume(MAX_INPUTS - state["inputs"] if state["open"] else MAX_INPUTS, 0.05)
            records = [r for r in records if r.error() is None]
            if records:
                if args.slow:
                    time.sleep(SLOW_S)
                if not state["open"]:
                    producer.begin_transaction()
                    state.update(open=True, since=time.monotonic())
                for r in records:
                    partition, offset, value = r.partition(), r.offset(), r.value()
                    assert partition is not None and offset is not None and isinstance(value, bytes)
                    producer.produce(args.output, prefix + value, partition=partition)
                    state["offsets"][partition] = offset + 1
                    state["firsts"].setdefault(partition, offset)
                state["inputs"] += len(records)
            aged = time.monotonic() - state["since"] >= max_txn_s
            if state["open"] and (state["inputs"] >= MAX_INPUTS or aged):
                commit()
        except KafkaException as exc:
            emit("fail", error=str(exc)[:500])
            try:
                abort()
            except KafkaException as again:
                emit("fail", error=f"abort: {again}"[:500])
                state.update(open=False, inputs=0, offsets={}, firsts={})
    try:
        commit()
    except KafkaException as exc:
        emit("fail", error=str(exc)[:500])
    consumer.close()  # leaves the group
    producer.flush(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", required=True, choices=(*OUR_VARIANTS, "confluent"))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--slow", action="store_true")
    parser.add_argument("--max-txn-ms", type=int, default=100)
    args = parser.parse_args()
    if args.variant == "confluent":
        run_confluent(args)
    else:
        run_ours(args)
    emit("done", cpu_s=round(cpu_s(), 3))
    os._exit(0)  # the consumers' threads are closed; do not wait for daemon threads


if __name__ == "__main__":
    main()
