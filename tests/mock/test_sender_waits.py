"""How the Sender waits between small transactions, and a Produce answer with mixed outcomes.

A loop of small transactions (begin, a few sends, commit) is what most exactly-once services run.
After a transaction the Sender's first idle wait ends within ``linger_ms``, so the next
transaction's first batch (which lingers that long anyway) starts without waking it: a wake-up
costs the Sender a loop iteration and two context switches per transaction. An idle producer then
waits as long as before. The Sender completes an answer's appended batches together; one partition
refused in the same answer is retried and nothing is lost or written twice. A committing transaction's
EndTxn goes out as soon as the last Produce answer is read, before the records' callbacks run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from tests._support.producers import ProducerFactory
from txnproducer._internal.protocol.error_codes import NOT_LEADER_OR_FOLLOWER
from txnproducer.testing import MockCluster

LINGER_MS = 500  # under the Sender's longest wait (1 s): its first idle wait is shortened to this
WAIT_S = 10.0


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-waits")
    yield factory
    factory.close_all(5)


@attrs.define
class Wait:
    timeout_s: float
    idle: bool  # nothing queued or in flight, no coordinator request in flight: between transactions
    ended: threading.Event = attrs.field(factory=threading.Event)


class SenderWaits:
    """Records every network wait of the producer's Sender thread (its timeout, whether it was idle)
    and every wake-up written to it."""

    def __init__(self, producer: Any) -> None:
        self.waits: list[Wait] = []
        self.wakeups = 0
        self._cond = threading.Condition()
        net = producer._net
        poll, wakeup = net.poll, net._direct.wakeup
        acc, tm = producer._acc, producer._tm

        def recorded_poll(timeout_s: float) -> None:
            wait = Wait(timeout_s, not acc.has_incomplete() and not tm.has_in_flight_request())
            with self._cond:
                self.waits.append(wait)
                self._cond.notify_all()
            try:
                poll(timeout_s)
            finally:
                wait.ended.set()

        def counted_wakeup() -> None:
            self.wakeups += 1
            wakeup()

        net.poll = recorded_poll
        net._direct.wakeup = counted_wakeup

    def idle_waits_after(self, index: int, count: int) -> list[Wait]:
        """The first ``count`` idle waits from ``self.waits[index]`` on, once they have begun."""
        with self._cond:
            assert self._cond.wait_for(lambda: len([w for w in self.waits[index:] if w.idle]) >= count,
                                       WAIT_S), f"the Sender began fewer than {count} idle waits"
            return [w for w in self.waits[index:] if w.idle][:count]


def _one_transaction_recorded(mock_cluster: MockCluster, make_producer: Any,
                              topic: str) -> tuple[Any, SenderWaits, int]:
    """A producer (linger LINGER_MS) that ran one transaction of one record to ``topic`` (made here),
    its Sender's waits recorded; the index of the first wait that may come after it (taken before
    the commit: its idle waits are the ones after the transaction)."""
    mock_cluster.create_topic(topic, partitions=1)
    producer = make_producer(linger_ms=LINGER_MS)
    producer.init_transactions()
    waits = SenderWaits(producer)
    producer.begin_transaction()
    producer.send(topic, b"first", partition=0)
    mark = len(waits.waits)
    producer.commit_transaction()
    return producer, waits, mark


def test_after_a_transaction_the_first_idle_wait_ends_within_linger_and_the_next_is_long(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    _, waits, mark = _one_transaction_recorded(mock_cluster, make_producer, "waits")
    short, long = waits.idle_waits_after(mark, 2)
    assert short.timeout_s <= LINGER_MS / 1000
    assert long.timeout_s > LINGER_MS / 1000  # idle: no wake-up every linger_ms


def test_the_next_transactions_first_record_does_not_wake_the_sender(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer, waits, mark = _one_transaction_recorded(mock_cluster, make_producer, "nowake")
    (short,) = waits.idle_waits_after(mark, 1)
    before = waits.wakeups
    producer.begin_transaction()
    future = producer.send("nowake", b"second", partition=0)
    assert not short.ended.is_set(), "the Sender's short wait ended before the record was sent"
    assert waits.wakeups == before  # it lingers no longer than the Sender waits: no wake-up
    producer.commit_transaction()  # the commit wakes it
    assert future.get(WAIT_S).offset >= 0
    assert [r.value for r in mock_cluster.partition_records("nowake", 0, read_committed=True)] == [
        b"first", b"second"]


def test_a_lingering_batch_is_sent_without_a_flush_after_the_short_wait(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The record of a transaction that does not commit yet still goes out after its linger."""
    mock_cluster.create_topic("lingers", partitions=1)
    producer = make_producer(linger_ms=50)
    producer.init_transactions()
    with producer.transaction():
        producer.send("lingers", b"first", partition=0)
    producer.begin_transaction()
    future = producer.send("lingers", b"second", partition=0)
    assert future.get(WAIT_S).offset == 2  # after "first" and its commit marker; no flush asked
    producer.commit_transaction()


def test_an_answer_with_one_refused_partition_completes_the_others_and_retries_it(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("mixed-answer", partitions=3)
    producer = make_producer(linger_ms=LINGER_MS, retry_backoff_ms=20)
    producer.init_transactions()
    leader = mock_cluster.leader_of("mixed-answer", 0)
    for p in (1, 2):
        mock_cluster.move_leader("mixed-answer", p, leader)
    producer.begin_transaction()
    producer.send("mixed-answer", b"warm", partition=0).get(WAIT_S)  # the client learns the leaders
    producer.commit_transaction()
    producer._net.request_metadata_update()
    assert producer.partitions_for("mixed-answer")
    other = next(b for b in mock_cluster.state.alive_broker_ids() if b != leader)
    since = len(mock_cluster.request_log)
    producer.begin_transaction()
    mock_cluster.move_leader("mixed-answer", 1, other)  # the client still sends partition 1 to `leader`
    futures = [producer.send("mixed-answer", b"v%d" % p, partition=p) for p in range(3)]
    producer.commit_transaction()  # one Produce for the three; partition 1 refused, then retried
    assert [f.get(WAIT_S).partition for f in futures] == [0, 1, 2]
    for p in range(3):
        values = [r.value for r in mock_cluster.partition_records("mixed-answer", p, read_committed=True)]
        assert values == ([b"warm"] if p == 0 else []) + [b"v%d" % p]
    mixed = [e for e in mock_cluster.request_log[since:] if e.api == "Produce" and e.broker_id == leader
             and {b[1] for b in e.fields["batches"]} == {0, 1, 2}]
    assert [e.error_codes for e in mixed] == [(NOT_LEADER_OR_FOLLOWER,)]  # the others were appended


def test_the_endtxn_goes_out_before_the_records_callbacks_run(mock_cluster: MockCluster,
                                                              make_producer: Any) -> None:
    """A record callback that takes its time (it runs on the Sender thread) does not hold the commit's
    EndTxn back: the broker already works on it. The commit still returns after the callbacks ran."""
    mock_cluster.create_topic("end-first", partitions=1)  # one Produce: the callbacks run after its answer
    producer = make_producer(linger_ms=LINGER_MS)
    producer.init_transactions()
    producer.begin_transaction()
    since = mock_cluster.requests.next_seq()
    seen: list[str] = []

    def callback(metadata: Any, exc: BaseException | None) -> None:
        try:  # the EndTxn of this commit reached the broker while this callback runs
            mock_cluster.wait_for_request(lambda e: e.api == "EndTxn", timeout=WAIT_S, since=since)
            seen.append("EndTxn sent")
        except TimeoutError:
            seen.append("no EndTxn")

    for value in (b"a", b"b"):
        producer.send("end-first", value, partition=0).add_callback(callback)
    producer.commit_transaction()
    assert seen == ["EndTxn sent", "EndTxn sent"]
    records = mock_cluster.partition_records("end-first", 0, read_committed=True)
    assert [r.value for r in records] == [b"a", b"b"]
