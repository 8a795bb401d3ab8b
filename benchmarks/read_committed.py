"""Read-only read_committed throughput: TransactionalConsumer (poll and poll_batch) against
kafka-python's KafkaConsumer.poll and confluent-kafka's Consumer.consume(1000).

The input is written once: ``--records`` records of ``--value-size`` bytes in ``--partitions``
partitions, in transactions of 1,000 records (every tenth transaction aborted, so the readers filter
aborted data and skip markers, as an exactly-once pipeline's input looks). Then each client reads all
committed records from the beginning, in its own process, one after the other, ``--rounds`` times in
turn (A B C D A B C D ...): wall time from the first poll to the last record, and the CPU of the
reading process from its first poll (all its threads, ``resource.getrusage``; imports and
connection setup excluded). Medians are printed; ``--json`` writes
every run.

    python benchmarks/read_committed.py                      # a standalone MockCluster (one broker)
    python benchmarks/read_committed.py --bootstrap HOST:PORT  # a real cluster

``compare.py``'s S5 is this scenario on the real broker with the Java client beside them (and S4 the
consume-transform-produce loop); this script stays the quick look against a standalone MockCluster.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

CLIENTS = ("txnproducer-poll", "txnproducer-batch", "kafka-python", "confluent-kafka")


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def write_input(bootstrap: str, topic: str, partitions: int, records: int, value_size: int) -> int:
    """Write the input; returns the number of committed records."""
    from txnproducer import TransactionalProducer

    value = b"x" * value_size
    committed = 0
    with TransactionalProducer(bootstrap_servers=bootstrap, transactional_id=f"bench-writer-{uuid.uuid4()}",
                               linger_ms=5) as producer:
        producer.init_transactions()
        txn = 0
        written = 0
        while committed < records:
            producer.begin_transaction()
            n = min(1000, records - committed) if txn % 10 != 9 else 1000
            for i in range(n):
                producer.send(topic, value, partition=(written + i) % partitions)
            written += n
            if txn % 10 == 9:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
                committed += n
            txn += 1
    return committed


def read(client: str, bootstrap: str, topic: str, partitions: int, expected: int) -> dict[str, Any]:
    """Read every committed record of ``topic`` from the beginning (in this process)."""
    count = 0
    if client.startswith("txnproducer"):
        from txnproducer import TopicPartition, TransactionalConsumer

        consumer = TransactionalConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                         max_poll_records=10_000)
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        started, start_cpu = time.perf_counter(), _cpu_s()
        if client == "txnproducer-batch":
            while count < expected:
                for batch in consumer.poll_batch(1.0):
                    count += len(batch)
        else:
            while count < expected:
                count += len(consumer.poll(1.0))
        elapsed = time.perf_counter() - started
        consumer.close()
    elif client == "kafka-python":
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                 enable_auto_commit=False, auto_offset_reset="earliest",
                                 max_poll_records=10_000)
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        started, start_cpu = time.perf_counter(), _cpu_s()
        while count < expected:
            for records in consumer.poll(timeout_ms=1000).values():
                count += len(records)
        elapsed = time.perf_counter() - started
        consumer.close()
    else:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                             "isolation.level": "read_committed", "enable.auto.commit": False,
                             "auto.offset.reset": "earliest"})
        consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
        started, start_cpu = time.perf_counter(), _cpu_s()
        while count < expected:
            for message in consumer.consume(1000, 1.0):
                if message.error() is None:
                    count += 1
        elapsed = time.perf_counter() - started
        consumer.close()
    cpu = _cpu_s() - start_cpu
    return {"client": client, "records": count, "seconds": elapsed, "records_per_s": count / elapsed,
            "cpu_us_per_record": cpu * 1e6 / count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", help="a real cluster (default: a standalone MockCluster)")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--json", help="write every run here")
    parser.add_argument("--child", nargs=4, metavar=("CLIENT", "BOOTSTRAP", "TOPIC", "EXPECTED"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        client, bootstrap, topic, expected = args.child
        print(json.dumps(read(client, bootstrap, topic, args.partitions, int(expected))))
        return
    from txnproducer._internal.perf_clusters import create_topic, mock_cluster_process

    topic = f"bench-read-{uuid.uuid4().hex[:8]}"
    clients = args.clients.split(",")
    runs: list[dict[str, Any]] = []

    def run_all(bootstrap: str) -> None:
        if args.bootstrap:
            create_topic(bootstrap, topic, args.partitions)
        expected = write_input(bootstrap, topic, args.partitions, args.records, args.value_size)
        for _ in range(args.rounds):
            for client in clients:
                out = subprocess.run([sys.executable, __file__, "--partitions", str(args.partitions),
                                      "--child", client, bootstrap, topic, str(expected)],
                                     capture_output=True, text=True, timeout=600, check=True)
                run = json.loads(out.stdout.strip().splitlines()[-1])
                runs.append(run)
                print(f"{client:18} {run['records_per_s']:>12,.0f} records/s  "
                      f"{run['cpu_us_per_record']:6.2f} us CPU/record", flush=True)

    if args.bootstrap:
        run_all(args.bootstrap)
    else:
        with mock_cluster_process(brokers=1, partitions=args.partitions, topics=[topic]) as bootstrap:
            run_all(bootstrap)
    print("\nmedians:")
    for client in clients:
        mine = [r for r in runs if r["client"] == client]
        print(f"{client:18} {statistics.median(r['records_per_s'] for r in mine):>12,.0f} records/s  "
              f"{statistics.median(r['cpu_us_per_record'] for r in mine):6.2f} us CPU/record")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
