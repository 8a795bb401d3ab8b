"""The end of the epoch range on a real Kafka 4.1.0 (``KAFKA_HOME``): a producer and a processor cross
it by commit, by abort and after the coordinator's own timeout aborts at 32761, 32764 and 32766, and go
on (KAFKA-20090; MockCluster's version: tests/mock/test_epoch_exhaustion.py).

The broker is this module's own, formatted and thrown away at the end: a client that got it wrong
would leave a transactional id broken for good and the broker's timeout task throwing at it (the
conformance recording ``tests/conformance/kafka-4.1.0/epoch_exhaustion.json`` shows that). Each
transactional id is fast-forwarded to its starting epoch with pipelined InitProducerId requests
(``tests/_support/epochs.py``), as ~32,000 new instances' ``init_transactions()`` would.
What is checked, as a user relies on it: each committed record read once by a read_committed consumer,
nothing aborted visible, the last stable offset equal to the high watermark (nothing left Ongoing),
and the producer never READY at epoch 32767.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support.eos_pipeline import assert_each_input_once_in_order, origin_transform
from tests._support.epochs import fast_forward_epoch
from tests._support.kafka_home import KafkaHomeBroker
from tests._support.readers import (
    assert_no_open_transaction,
    end_offsets,
    read_all,
    read_values,
    transaction_state,
)
from txnproducer import ProducerFencedError, TransactionalProducer
from txnproducer.eos import TransactionalProcessor

LAST_EPOCH = 32767
TIMEOUT_MS = 2000  # the timed-out transactions' (the node checks every second)
PRODUCER = {"max_block_ms": 30_000, "request_timeout_ms": 10_000, "linger_ms": 1}
WAIT_S = 60.0


@pytest.fixture(scope="module")
def bootstrap() -> Iterator[str]:
    kafka_home = os.environ.get("KAFKA_HOME")
    if not kafka_home:
        pytest.skip("the epoch exhaustion tier starts a broker of its own: set KAFKA_HOME")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("KAFKA_HOME is set but no java on PATH (or JAVA_HOME)")
    workdir = Path(tempfile.mkdtemp(prefix="txnproducer-kafka-epochs-"))
    node = KafkaHomeBroker(Path(kafka_home), workdir)
    try:
        node.start()
        yield node.bootstrap
    finally:
        node.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def create_topics(bootstrap: str, *names: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="tests-epochs")
    try:
        admin.create_topics([NewTopic(name, 2, 1) for name in names])
    finally:
        admin.close()


@pytest.fixture
def topic(bootstrap: str) -> str:
    name = f"epochs-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, name)
    return name


def producer_at(bootstrap: str, txn_id: str, epoch: int, **settings: Any) -> TransactionalProducer:
    """A producer whose init_transactions() lands on ``epoch``."""
    fast_forward_epoch(bootstrap, txn_id, epoch - 1)
    producer = TransactionalProducer(bootstrap_servers=bootstrap, transactional_id=txn_id,
                                     **{**PRODUCER, **settings})
    producer.init_transactions()
    assert producer.epoch == epoch
    return producer


def wait_for_the_timeout_abort(bootstrap: str, txn_id: str) -> None:
    """Until the coordinator aborted ``txn_id``'s transaction on its own. A real broker offers no event
    to wait on: its state is asked every 100 ms, bounded."""
    deadline = time.monotonic() + 30
    while transaction_state(bootstrap, txn_id) != "CompleteAbort":
        assert time.monotonic() < deadline, f"{txn_id}: the coordinator never aborted the transaction"
        time.sleep(0.1)


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        found = {p: consumer.committed(TopicPartition(topic, p)) for p in (0, 1)}
    finally:
        consumer.close()
    return {p: -1 if offset is None else offset for p, offset in found.items()}


def commit(producer: TransactionalProducer, topic: str, value: bytes, committed: list[bytes]) -> None:
    with producer.transaction():
        for p in (0, 1):
            producer.send(topic, value + b"-%d" % p, partition=p)
    committed += [value + b"-0", value + b"-1"]
    assert producer.epoch != LAST_EPOCH


def assert_went_on(bootstrap: str, topic: str, producer: TransactionalProducer, old_pid: int,
                   committed: list[bytes]) -> None:
    assert producer.producer_id != old_pid and producer.epoch < 10
    assert sorted(read_values(bootstrap, topic, 2, WAIT_S)) == sorted(committed)
    assert_no_open_transaction(bootstrap, topic, 2)
    final = transaction_state(bootstrap, producer.config.transactional_id)
    assert final in ("CompleteCommit", "CompleteAbort")


@pytest.mark.parametrize("how", ["commit", "abort"])
def test_a_producer_crosses_by_commit_and_by_abort(bootstrap: str, topic: str, how: str) -> None:
    txn_id = f"epochs-{how}-{uuid.uuid4().hex[:6]}"
    with producer_at(bootstrap, txn_id, LAST_EPOCH - 1) as producer:
        old_pid, committed = producer.producer_id, list[bytes]()
        if how == "abort":
            producer.begin_transaction()
            producer.send(topic, b"aborted", partition=0).get(30)
            producer.abort_transaction()
            assert producer.epoch != LAST_EPOCH
        for i in range(3):
            commit(producer, topic, b"%s-%d" % (how.encode(), i), committed)
        assert_went_on(bootstrap, topic, producer, old_pid, committed)


@pytest.mark.parametrize("timeout_at", [LAST_EPOCH - 6, LAST_EPOCH - 3, LAST_EPOCH - 1])
def test_a_producer_crosses_after_the_coordinator_aborts_on_timeout(
        bootstrap: str, topic: str, timeout_at: int) -> None:
    txn_id = f"epochs-timeout-{timeout_at}-{uuid.uuid4().hex[:6]}"
    with producer_at(bootstrap, txn_id, timeout_at, transaction_timeout_ms=TIMEOUT_MS) as producer:
        old_pid, committed = producer.producer_id, list[bytes]()
        producer.begin_transaction()
        producer.send(topic, b"timed-out", partition=0).get(30)
        wait_for_the_timeout_abort(bootstrap, txn_id)
        producer.abort_transaction()  # Kafka 4.1 answers with the fenced epoch: 32767 for 32766
        assert producer.epoch != LAST_EPOCH
        while producer.producer_id == old_pid:
            commit(producer, topic, b"e%d" % producer.epoch, committed)
        commit(producer, topic, b"after", committed)
        assert_went_on(bootstrap, topic, producer, old_pid, committed)


@pytest.mark.parametrize("how", ["commit", "timeout"])
def test_a_processor_crosses(bootstrap: str, topic: str, how: str) -> None:
    """The processor's producer starts at 32766: its first commit rotates the producer id, or - its
    first transaction outlasting transaction_timeout_ms in a slow transform - the coordinator aborts
    it at 32766, and the loop gets a new producer id before it processes that input again."""
    group = f"epochs-proc-{how}-{uuid.uuid4().hex[:6]}"
    out = f"{topic}-out"
    create_topics(bootstrap, out)
    txn_id = f"{group}-i1"
    fast_forward_epoch(bootstrap, txn_id, LAST_EPOCH - 2)
    inputs = []
    with TransactionalProducer(bootstrap_servers=bootstrap, transactional_id=f"{group}-writer",
                               **PRODUCER) as w:
        w.init_transactions()
        for t in range(3):
            with w.transaction():
                for p in (0, 1):
                    number = 2 * t + p
                    w.send(topic, str(number).encode(), partition=p)
                    inputs.append(number)
    transform = origin_transform(out)
    slow = [how == "timeout"]

    def transform_once_slowly(record: Any) -> Any:
        if slow and slow.pop():
            # the thing under test: a transaction that outlasts transaction_timeout_ms (a record on the
            # wire first, so that the coordinator knows the transaction and times it out)
            proc.producer.send(out, b"opens-the-transaction", partition=0).get(30)
            wait_for_the_timeout_abort(bootstrap, txn_id)
        return transform(record)

    def processor() -> TransactionalProcessor:
        return TransactionalProcessor(
            topic, transform=transform_once_slowly, instance_name="i1", poll_timeout_ms=200,
            consumer_config={"group_id": group, "bootstrap_servers": bootstrap,
                             "session_timeout_ms": 10_000, "heartbeat_interval_ms": 500,
                             "max_poll_interval_ms": 30_000},
            producer_config={"bootstrap_servers": bootstrap, "transaction_timeout_ms": TIMEOUT_MS,
                             **PRODUCER})

    proc = processor()
    try:
        proc.start()
        first_pid = proc.producer.producer_id
        assert proc.producer.epoch == LAST_EPOCH - 1
        try:
            metrics = proc.run(until_idle=1.0)
            assert metrics["aborts_on_error"] == (1 if how == "timeout" else 0)
        except ProducerFencedError as fenced:
            # After the coordinator's timeout abort, whichever answer comes first decides: a Produce's
            # INVALID_PRODUCER_EPOCH is abortable (the loop aborts and goes on), the offsets' is fatal
            # (the Java client's rule for TxnOffsetCommit): the loop stops naming the timeout, and the
            # restarted instance takes over - either way under a new producer id.
            assert how == "timeout" and "longer than transaction_timeout_ms" in str(fenced)
            proc = processor()
            proc.run(until_idle=1.0)
        assert proc.producer.producer_id != first_pid and proc.producer.epoch < 10
    finally:
        proc.stop()
    output = read_all(bootstrap, out, 2, "read_committed", WAIT_S)
    assert_each_input_once_in_order(output, 2, len(inputs))
    assert_no_open_transaction(bootstrap, out, 2)
    # the group's offsets are the input's log end: past the writer's commit markers
    assert committed_offsets(bootstrap, group, topic) == end_offsets(bootstrap, topic, 2)
