"""benchmarks/listener_pairs.py: each listener's producer really commits what its blocks count, the
blocks alternate, and the ratios pair block with block (the Kafka broker it starts is exercised by
running it; docs/performance.md, "Secured listeners")."""

from __future__ import annotations

import os
import time
from typing import Any

import attrs
import pytest

from tests._support.benchmark_scripts import load_benchmark
from txnproducer.testing import MockCluster


def _pairs() -> Any:
    return load_benchmark("listener_pairs.py")


def test_every_listener_commits_its_warmup_and_blocks_and_is_paired_with_the_first() -> None:
    pairs = _pairs()
    users = {"bench": "bench-pw"}
    with MockCluster(num_brokers=1) as plain, \
            MockCluster(num_brokers=1, sasl_mechanisms=["SCRAM-SHA-512"], users=users) as sasl:
        sasl_settings = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                         "sasl_plain_username": "bench", "sasl_plain_password": "bench-pw"}
        targets = {"PLAINTEXT": (plain.bootstrap_servers, {}),
                   "SASL_PLAINTEXT": (sasl.bootstrap_servers, sasl_settings)}
        broker_reads: list[int] = []

        def broker_cpu() -> float:
            broker_reads.append(1)
            return float(len(broker_reads))  # one "second" per read: each block sees exactly 1.0

        listeners = pairs.measure(targets, records_per_txn=7, blocks=3, block_txns=2, warmup_txns=1,
                                  broker_cpu=broker_cpu)
        for listener, cluster in zip(listeners, (plain, sasl), strict=True):
            assert listener.transactions == 6 and len(listener.block_seconds) == 3
            # (1 warm-up + 3 blocks x 2) transactions of 7 records, all committed, in the listener's topic
            committed = sum(len(cluster.partition_records(listener.topic, p, read_committed=True))
                            for p in range(pairs.PARTITIONS))
            assert committed == 7 * 7
        produced = sasl.wait_for_request(lambda e: e.api == "Produce")
        assert produced.principal == "User:bench"

    rows = pairs.summary(listeners, records_per_txn=7)
    assert [r["listener"] for r in rows] == ["PLAINTEXT", "SASL_PLAINTEXT"]
    assert rows[0]["ratio_whole_run"] == 1.0 and rows[0]["ratio_range"] == [1.0, 1.0]
    reference, other = listeners
    paired = sorted(a / b for a, b in zip(reference.block_seconds, other.block_seconds, strict=True))
    assert rows[1]["ratio_median_of_blocks"] == pytest.approx(paired[1])
    assert rows[1]["ratio_range"] == pytest.approx([paired[0], paired[-1]])
    assert rows[1]["records_per_s"] == pytest.approx(6 * 7 / other.wall_s)
    assert rows[1]["broker_cpu_us_per_txn"] == pytest.approx(3 * 1.0 / 6 * 1e6)
    text = pairs.table(rows)
    assert "| SASL_PLAINTEXT |" in text and "records/s vs PLAINTEXT" in text
    assert text.splitlines()[3].split("|")[5].strip() == "500,000"  # (3 s / 6 transactions)
    unread = pairs.table(pairs.summary([attrs.evolve(x, broker_cpu_s=None) for x in listeners], 7))
    assert unread.splitlines()[2].split("|")[5].strip() == "-"  # no broker CPU when it was not read


def test_a_process_cpu_time_grows_with_its_work() -> None:
    read = _pairs().process_cpu(os.getpid())
    target = read() + 0.05
    give_up = time.monotonic() + 10.0
    while read() < target and time.monotonic() < give_up:  # busy: the reading is this process's CPU
        sum(range(10_000))
    assert read() >= target
