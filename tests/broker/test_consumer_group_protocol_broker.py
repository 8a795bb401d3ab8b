"""TransactionalConsumer and TransactionalProcessor with ``group_protocol="consumer"`` on a real Kafka 4.1.

What the mock tier asserts of MockCluster, seen on Kafka's own KIP-848 coordinator: members share and
hand over partitions one at a time while the rest keep flowing (the assignment's topic ids resolved by
Metadata v12 by id), the member epoch fences a zombie's transactional offsets (ILLEGAL_GENERATION), a
static member leaves with -2 and its restart takes its partitions back, a pattern subscription is
resolved by the broker, and the processor keeps exactly-once across scaling out, a crash and restart
(UNRELEASED_INSTANCE_ID until the dead instance's session runs out) and scaling in.

On a node of its own (``tests/_support/kip848_broker.py``: heartbeats every 500 ms, a 6 s session), which
it throws away; needs ``KAFKA_HOME`` (4.0 or newer).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from tests._support import kip848_clients
from tests._support.eos_pipeline import ProcessorThreads, assert_each_input_once_in_order, produce_inputs
from tests._support.kip848_broker import Kip848KafkaHomeBroker
from tests._support.readers import read_all
from txnproducer import (
    CommitFailedError,
    SubscriptionPattern,
    TopicPartition,
    TransactionalConsumer,
    TransactionalProducer,
)

PARTITIONS = 6
WAIT_S = 60.0
CONSUMER = {"group_protocol": "consumer", "max_poll_interval_ms": 20000, "retry_backoff_ms": 50,
            "fetch_max_wait_ms": 50, "auto_offset_reset": "earliest"}


@pytest.fixture(scope="module")
def bootstrap() -> Iterator[str]:
    kafka_home = os.environ.get("KAFKA_HOME")
    if not kafka_home or not (Path(kafka_home) / "bin" / "kafka-server-start.sh").exists():
        pytest.skip("needs KAFKA_HOME (Kafka 4.0 or newer) for a node of its own")
    workdir = Path(tempfile.mkdtemp(prefix="txnproducer-kip848-"))
    node = Kip848KafkaHomeBroker(Path(kafka_home), workdir)
    try:
        node.start()
        yield node.bootstrap
    finally:
        node.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topics(bootstrap: str, *names: str, partitions: int = PARTITIONS) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(n, num_partitions=partitions, replication_factor=1) for n in names])
    finally:
        admin.close()


def poll_all(consumers: list[TransactionalConsumer], what: str, done: Callable[[], bool],
             read: dict[str, list[Any]] | None = None) -> None:
    """Poll every consumer in turn (one thread, as the Java API allows) until ``done()``."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        for c in consumers:
            records = c.poll(0.02)
            if read is not None:
                read.setdefault(c.config.client_id or "", []).extend(records)


@pytest.mark.timeout(240)
def test_members_share_hand_over_and_fence_by_member_epoch(bootstrap: str) -> None:
    topic, out, group = fresh("kip848-in"), fresh("kip848-out"), fresh("kip848-group")
    create_topics(bootstrap, topic, out)
    produce_inputs(bootstrap, topic, 0, 600, PARTITIONS)
    everything = frozenset(TopicPartition(topic, p) for p in range(PARTITIONS))
    a = TransactionalConsumer(bootstrap_servers=bootstrap, group_id=group, client_id="a", **CONSUMER)
    b = TransactionalConsumer(bootstrap_servers=bootstrap, group_id=group, client_id="b", **CONSUMER)
    read: dict[str, list[Any]] = {}
    try:
        a.subscribe([topic])
        poll_all([a], "a owns every partition and read everything",
                 lambda: a.assignment() == everything and len(read.get("a", ())) == 600, read)
        first = a.group_metadata()
        positions = {tp: a.position(tp) for tp in everything}
        b.subscribe([topic])
        poll_all([a, b], "a and b share",
                 lambda: len(a.assignment()) == len(b.assignment()) == PARTITIONS // 2, read)
        kept = a.assignment()
        assert {tp: a.position(tp) for tp in kept} == {tp: positions[tp] for tp in kept}, "never rewound"
        described = kip848_clients.describe(bootstrap, group)
        assert described is not None and described.member_epochs["a"] == a.group_metadata().generation_id
        assert a.group_metadata().generation_id > first.generation_id
        with TransactionalProducer(bootstrap_servers=bootstrap, transactional_id=fresh("kip848-zombie")) as p:
            p.init_transactions()
            p.begin_transaction()
            p.send(out, b"late", partition=0)
            with pytest.raises(CommitFailedError):
                p.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, first, timeout=30)
            p.abort_transaction()
        b.close(10)  # a dynamic member leaves with -1: its partitions move at once
        poll_all([a], "a owns everything again", lambda: a.assignment() == everything)
    finally:
        a.close(10)
        b.close(10)


@pytest.mark.timeout(240)
def test_a_static_member_comes_back_and_a_pattern_is_resolved_by_the_broker(bootstrap: str) -> None:
    prefix = fresh("kip848-audit")
    eu, other, group = f"{prefix}-eu", fresh("kip848-billing"), fresh("kip848-static")
    create_topics(bootstrap, eu, other, partitions=2)
    pattern = SubscriptionPattern(f"{prefix}-.*")
    s1 = TransactionalConsumer(bootstrap_servers=bootstrap, group_id=group, group_instance_id="s",
                               client_id="s1", **CONSUMER)
    try:
        s1.subscribe(pattern)
        poll_all([s1], "the pattern brought the eu topic",
                 lambda: s1.assignment() == {TopicPartition(eu, 0), TopicPartition(eu, 1)})
        member = s1.group_metadata().member_id
    finally:
        s1.close(10)  # static: leaves with -2, the coordinator keeps the instance's partitions
    described = kip848_clients.describe(bootstrap, group)
    assert described is not None and described.member_epochs == {"s1": -2}
    s2 = TransactionalConsumer(bootstrap_servers=bootstrap, group_id=group, group_instance_id="s",
                               client_id="s2", **CONSUMER)
    try:
        s2.subscribe(pattern)
        poll_all([s2], "the restart owns the instance's partitions",
                 lambda: s2.assignment() == {TopicPartition(eu, 0), TopicPartition(eu, 1)})
        assert s2.group_metadata().member_id != member
        assert s2.subscription() == {eu}
    finally:
        s2.close(10, leave_group=True)


@pytest.mark.timeout(300)
def test_exactly_once_across_scaling_out_a_crash_and_scaling_in(bootstrap: str) -> None:
    in_topic, out_topic, group = fresh("kip848-eos-in"), fresh("kip848-eos-out"), fresh("kip848-eos")
    create_topics(bootstrap, in_topic, out_topic)
    consumer = {k: v for k, v in CONSUMER.items() if k != "auto_offset_reset"}
    producer = {"linger_ms": 2, "transaction_timeout_ms": 30000, "max_block_ms": 30000}
    pipeline = ProcessorThreads(bootstrap, in_topic, out_topic, group, consumer, producer, WAIT_S)
    total = 8000
    try:
        produce_inputs(bootstrap, in_topic, 0, 2000, PARTITIONS)
        a = pipeline.start("a")
        pipeline.start("b")
        pipeline.wait_for("1000 inputs are committed", lambda: pipeline.committed_total() >= 1000)
        c = pipeline.start("c")  # scaling out while input flows
        produce_inputs(bootstrap, in_topic, 2000, 4000, PARTITIONS)
        pipeline.wait_for("c owns partitions", lambda: bool(c.assignment()))
        a.simulate_crash("before_commit")
        produce_inputs(bootstrap, in_topic, 4000, 6000, PARTITIONS)
        pipeline.wait_for("a died", lambda: not pipeline.threads["a"].is_alive())
        pipeline.start("a")  # waits for the dead instance's 6 s session (UNRELEASED_INSTANCE_ID meanwhile)
        pipeline.wait_for("4000 inputs are committed", lambda: pipeline.committed_total() >= 4000)
        stopper = threading.Thread(target=pipeline.processors["b"].stop, kwargs={"leave_group": True})
        stopper.start()  # scaling in
        produce_inputs(bootstrap, in_topic, 6000, total, PARTITIONS)
        stopper.join(WAIT_S)
        pipeline.wait_for("every input is committed", lambda: pipeline.committed_total() >= total)
    finally:
        pipeline.stop_all()
    assert c.metrics()["records_in"] > 0
    assert_each_input_once_in_order(read_all(bootstrap, out_topic, PARTITIONS, "read_committed", WAIT_S),
                                    PARTITIONS, total)
