"""An exactly-once consume-transform-produce loop by hand: TransactionalConsumer + TransactionalProducer.

What it shows (docs/guide/producer.md "Your own loop"): poll a batch of input records, transform them,
send the outputs
and the consumer's positions in one transaction with the consumer's group metadata (KIP-447 fencing),
commit; when a transaction must abort, rewind the consumer to the committed offsets so that the same
inputs are processed again. Two loops ("one" and "two") run in one consumer group on threads of their
own; the first commit of "one" is refused once (the group coordinator answers ILLEGAL_GENERATION, as
when the group moved on: ``CommitFailedError``), so the abort-and-rewind path runs too. A read_committed
reader of the output then finds every input exactly once, upper-cased.

Run it with ``python examples/exactly_once_loop.py [--inputs N]``. It uses ``$KAFKA_BOOTSTRAP_SERVERS``
when set (no error is injected there), otherwise an in-process ``MockCluster``. ``run_demo()`` is the
entry point for other callers and tests; it returns True when the output is exactly right.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from txnproducer import AbortableError, TopicPartition, TransactionalConsumer, TransactionalProducer

PARTITIONS = 6
TIMEOUT_S = 60.0  # bound on every wait of the demo


def upper_case_loop(consumer: TransactionalConsumer, producer: TransactionalProducer, out_topic: str,
                    running: Callable[[], bool]) -> None:
    while running():
        batches = consumer.poll_batch(timeout=0.5, max_records=1000)  # columns, no object per record
        if not batches:
            continue
        producer.begin_transaction()
        try:
            for batch in batches:
                for value in batch.values:
                    producer.send(out_topic, value.upper())
            polled = {TopicPartition(b.topic, b.partition) for b in batches}
            producer.send_offsets_to_transaction(
                {tp: consumer.position(tp) for tp in polled},  # the next offsets to read: past this batch
                consumer.group_metadata())                      # KIP-447: a zombie's offsets are refused
            producer.commit_transaction()
        except AbortableError:                                  # e.g. CommitFailedError: the group moved on
            producer.abort_transaction()
            consumer.seek_to_committed()                        # its inputs come again


@contextlib.contextmanager
def kafka(bootstrap: str | None, out: TextIO) -> Iterator[tuple[str, Any]]:
    """(bootstrap servers, the MockCluster or None)."""
    servers = bootstrap or os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if servers:
        print(f"Using Kafka at {servers}", file=out)
        yield servers, None
        return
    from txnproducer.testing import MockCluster

    with MockCluster(num_brokers=3) as cluster:
        print("Using an embedded MockCluster (3 brokers)", file=out)
        yield cluster.bootstrap_servers, cluster


def produce_inputs(servers: str, topic: str, count: int) -> None:
    with TransactionalProducer(bootstrap_servers=servers, transactional_id=f"inputs-{uuid.uuid4().hex[:8]}",
                               max_block_ms=int(TIMEOUT_S * 1000)) as producer:
        producer.init_transactions()
        with producer.transaction():
            for i in range(count):
                producer.send(topic, f"order-{i}".encode(), partition=i % PARTITIONS)


def read_output(servers: str, topic: str, count: int) -> list[bytes]:
    """Every committed output (read_committed), until ``count`` came and nothing more arrives."""
    values: list[bytes] = []
    with TransactionalConsumer(bootstrap_servers=servers, auto_offset_reset="earliest") as reader:
        reader.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            got = [r.value or b"" for r in reader.poll(1.0)]
            values.extend(got)
            if len(values) >= count and not got:
                break
    return values


def run_demo(bootstrap: str | None = None, inputs: int = 3000, out: TextIO | None = None) -> bool:
    out = out if out is not None else sys.stdout
    tag = uuid.uuid4().hex[:8]
    in_topic, out_topic, group = f"loop-in-{tag}", f"loop-out-{tag}", f"loop-{tag}"
    with kafka(bootstrap, out) as (servers, cluster):
        if cluster is not None:
            cluster.create_topic(in_topic, PARTITIONS)
            cluster.create_topic(out_topic, PARTITIONS)
            cluster.inject_error("TxnOffsetCommit", 22, count=1)  # ILLEGAL_GENERATION, once
        else:
            from txnproducer.perf import create_topic

            create_topic(servers, in_topic, PARTITIONS)
            create_topic(servers, out_topic, PARTITIONS)
        produce_inputs(servers, in_topic, inputs)
        print(f"Produced {inputs} inputs to {in_topic} ({PARTITIONS} partitions)", file=out)
        done = threading.Event()
        failures: list[BaseException] = []

        def instance(name: str) -> None:
            consumer = TransactionalConsumer(bootstrap_servers=servers, group_id=group,
                                             group_instance_id=f"{group}-{name}",
                                             auto_offset_reset="earliest")
            producer = TransactionalProducer(bootstrap_servers=servers, transactional_id=f"{group}-{name}")
            try:
                producer.init_transactions()
                consumer.subscribe([in_topic])
                upper_case_loop(consumer, producer, out_topic, running=lambda: not done.is_set())
            except BaseException as exc:
                failures.append(exc)
            finally:
                consumer.close(10)
                producer.close(10)

        threads = [threading.Thread(target=instance, args=(n,), daemon=True) for n in ("one", "two")]
        for thread in threads:
            thread.start()
        try:
            outputs = wait_for_output(servers, group, in_topic, inputs, cluster)
        finally:
            done.set()
            for thread in threads:
                thread.join(TIMEOUT_S)
        if failures:
            print(f"FAILED: a loop raised {failures[0]!r}", file=out)
            return False
        values = read_output(servers, out_topic, inputs)
        expected = sorted(f"ORDER-{i}".encode() for i in range(inputs))
        duplicates = len(values) - len(set(values))
        missing = len(set(expected) - set(values))
        aborts = -1 if cluster is None else sum(  # the coordinator's view: EndTxn(abort) requests
            1 for e in cluster.request_log if e.api == "EndTxn" and e.fields.get("committed") is False)
        print(f"The group committed offsets past all {inputs} inputs ({outputs} with the commit markers); "
              f"aborted transactions: {aborts if aborts >= 0 else 'not counted on a real cluster'}", file=out)
        print(f"A read_committed consumer sees {len(values)} outputs for {inputs} inputs: {missing} missing, "
              f"{duplicates} duplicated", file=out)
        ok = sorted(values) == expected and (cluster is None or aborts >= 1)
        print("OK: each input was transformed and written exactly once." if ok else "UNEXPECTED output.",
              file=out)
        return ok


def wait_for_output(servers: str, group: str, topic: str, inputs: int, cluster: Any) -> int:
    """Until the group committed the offsets of every input (bounded); returns how many it committed."""
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with TransactionalConsumer(bootstrap_servers=servers, group_id=group) as watcher:
        watcher.assign(parts)
        deadline = time.monotonic() + TIMEOUT_S
        committed = 0
        while time.monotonic() < deadline:
            offsets = watcher.committed(parts, timeout=TIMEOUT_S)
            committed = sum(o.offset for o in offsets.values() if o is not None)
            if committed >= inputs:
                return committed
            time.sleep(0.2)  # a demo's progress check, not a synchronisation
        raise TimeoutError(f"the loops committed {committed} of {inputs} inputs within {TIMEOUT_S} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--inputs", type=int, default=3000)
    parser.add_argument("--bootstrap",
                        help="a real Kafka (default: $KAFKA_BOOTSTRAP_SERVERS or a MockCluster)")
    args = parser.parse_args(argv)
    return 0 if run_demo(args.bootstrap, args.inputs) else 1


if __name__ == "__main__":
    sys.exit(main())
