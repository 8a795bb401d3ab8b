"""The application thread's CPU per ``send()``: the hot path alone, keyed or keyless.

Why beside ``txnproducer perf``: perf's ``app_cpu_us_per_record`` also counts begin and commit, and
its records have no key; a change to send()'s common case (bytes or None key and value, no headers,
no partition, no timestamp) is measured here, on the path the process runs (``TXNPRODUCER_PURE_PYTHON=1``
for the pure-Python one), against an in-process MockCluster: thread CPU around the send() loop only,
1,000 records of 100 bytes per transaction. Compare two trees with alternated runs::

    for i in 1 2 3 4 5 6 7 8; do for t in /tmp/a /tmp/b; do
        PYTHONPATH=$t python benchmarks/send_cpu.py --keyed; done; done

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

from txnproducer import TransactionalProducer
from txnproducer._internal import accel
from txnproducer.testing import MockCluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-records", type=int, default=200_000, help="records (multiple of 1,000)")
    parser.add_argument("--keyed", action="store_true", help="1,000 distinct 7-9 byte keys (default: no key)")
    args = parser.parse_args()
    value = b"x" * 100
    keys: list[bytes | None] = [b"key-%d" % i if args.keyed else None for i in range(1000)]
    with MockCluster(num_brokers=1) as cluster:
        cluster.create_topic("send-cpu", partitions=3)
        producer = TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers,
                                         transactional_id="send-cpu", linger_ms=5)
        try:
            producer.init_transactions()
            send = producer.send
            with producer.transaction():
                send("send-cpu", value, b"warm-up")  # metadata, the first batches: not timed
            cpu_ns = 0
            for _ in range(args.num_records // 1000):
                producer.begin_transaction()
                started = time.thread_time_ns()
                for key in keys:
                    send("send-cpu", value, key)
                cpu_ns += time.thread_time_ns() - started
                producer.commit_transaction()
        finally:
            producer.close()
    print(json.dumps({"keyed": args.keyed, "hot_path": accel.PATH,
                      "send_cpu_us_per_record": cpu_ns / 1000 / (args.num_records // 1000 * 1000)}))


if __name__ == "__main__":
    main()
