"""TransactionalConsumer against MockCluster: what a read_committed reader must see, and how it
follows the cluster (resets, leader moves, truncation, sessions, corrupt data), within its bounds.

The file runs on both hot paths (``make test`` runs it again with ``TXNPRODUCER_PURE_PYTHON=1``).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from txnproducer import (
    ConfigError,
    CorruptRecordError,
    LogTruncationError,
    OffsetOutOfRangeError,
    RecordDeserializationError,
    TopicPartition,
    TransactionalConsumer,
    TransactionalProducer,
)
from txnproducer.testing import MockCluster
from txnproducer.testing.fetch_sessions import FetchSessions

TOPIC = "in"


def _producer(cluster: MockCluster, txn_id: str, **settings: Any) -> TransactionalProducer:
    return TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        transactional_id=txn_id,
        max_block_ms=10_000,
        request_timeout_ms=5_000,
        **settings,
    )


def _write_interleaved(cluster: MockCluster, partitions: int, codec: str = "none") -> set[bytes]:
    """Three producers whose transactions interleave on every partition, every second one aborted;
    returns the committed values."""
    producers = [_producer(cluster, f"w{i}", compression_type=codec, linger_ms=0) for i in range(3)]
    committed: set[bytes] = set()
    try:
        for p in producers:
            p.init_transactions()
        for round_ in range(4):
            for i, p in enumerate(producers):
                p.begin_transaction()
                for n in range(5):
                    value = b"r%d-p%d-n%d" % (round_, i, n)
                    p.send(TOPIC, value, partition=n % partitions).get(timeout=10)
            for i, p in enumerate(producers):  # the transactions end in another order than they began
                if (round_ + i) % 2:
                    p.abort_transaction()
                else:
                    p.commit_transaction()
                    committed |= {b"r%d-p%d-n%d" % (round_, i, n) for n in range(5)}
    finally:
        for p in producers:
            p.close(timeout=5)
    return committed


def _read_until(
    consumer: TransactionalConsumer, count: int, timeout: float = 15.0, batches: bool = False
) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        if batches:
            for batch in consumer.poll_batch(0.2):
                got.extend(batch.records())
        else:
            got.extend(consumer.poll(0.2))
    return got


def _log_end(cluster: MockCluster, tp: TopicPartition) -> int:
    with cluster.state.lock:
        log = cluster.state.partition_log(tp.topic, tp.partition)
        assert log is not None
        return log.high_watermark


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_interleaved_transactions_of_several_producers_every_codec(
    mock_cluster: MockCluster, consumers: Any, codec: str
) -> None:
    mock_cluster.create_topic(TOPIC, 3)
    committed = _write_interleaved(mock_cluster, 3, codec)
    consumer = consumers()
    tps = [TopicPartition(TOPIC, p) for p in range(3)]
    consumer.assign(tps)
    got = _read_until(consumer, len(committed))
    assert consumer.poll(0.3) == []  # nothing more: no aborted record, no duplicate
    values = [r.value for r in got]
    assert sorted(values) == sorted(committed), "0 aborted records returned, 0 committed missing"
    for tp in tps:
        offsets = [r.offset for r in got if r.partition == tp.partition]
        assert offsets == sorted(offsets)
        expected = [
            r.offset for r in mock_cluster.partition_records(TOPIC, tp.partition, read_committed=True)
        ]
        assert offsets == expected, "the offsets are the log's"
        assert consumer.position(tp) == _log_end(mock_cluster, tp), "the position moved past the markers"


def test_both_apis_read_the_same(mock_cluster: MockCluster, consumers: Any) -> None:
    mock_cluster.create_topic(TOPIC, 2)
    committed = _write_interleaved(mock_cluster, 2)
    a, b = consumers(), consumers()
    tps = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    a.assign(tps)
    b.assign(tps)
    records = _read_until(a, len(committed))
    from_batches = _read_until(b, len(committed), batches=True)
    assert sorted(records, key=lambda r: (r.partition, r.offset)) == sorted(
        from_batches, key=lambda r: (r.partition, r.offset)
    )
    assert {r.value for r in records} == committed


def test_fetch_sessions_are_incremental_and_survive_a_lost_session(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    leader = mock_cluster.leader_of(TOPIC, 0)
    with _producer(mock_cluster, "s") as p:
        p.init_transactions()
        with p.transaction():
            p.send(TOPIC, b"one", partition=0)
        consumer = consumers()
        consumer.assign([TopicPartition(TOPIC, 0)])
        assert [r.value for r in _read_until(consumer, 1)] == [b"one"]
        assert consumer.poll(0.5) == []  # idle fetches: the session has nothing new to say
        with p.transaction():
            p.send(TOPIC, b"two", partition=0)
        assert [r.value for r in _read_until(consumer, 1)] == [b"two"]
        fetches = [e for e in mock_cluster.request_log if e.api == "Fetch" and e.broker_id == leader]
        assert fetches[0].fields["session_epoch"] == 0, "the first fetch opens a session"
        later = fetches[1:]
        assert later and all(e.fields["session_id"] > 0 and e.fields["session_epoch"] >= 1 for e in later)
        assert any("partitions" not in e.fields for e in later), "an unchanged partition is not named again"
        with mock_cluster.state.lock:
            mock_cluster.state.fetch_sessions = FetchSessions()  # the broker forgot every session
        # a fetch already held by the broker (long poll) may still answer from the old session: poll
        # until a fetch sent after the reset is refused, then show the new session delivers
        deadline = time.monotonic() + 15
        while not any(e.api == "Fetch" and 70 in e.error_codes for e in mock_cluster.request_log):
            assert time.monotonic() < deadline, "no fetch was refused FETCH_SESSION_ID_NOT_FOUND"
            assert consumer.poll(0.2) == []
        with p.transaction():
            p.send(TOPIC, b"three", partition=0)
        assert [r.value for r in _read_until(consumer, 1)] == [b"three"]
    lost = next(i for i, e in enumerate(mock_cluster.request_log) if e.api == "Fetch" and 70 in e.error_codes)
    after = [e for e in mock_cluster.request_log[lost + 1:] if e.api == "Fetch" and e.broker_id == leader]
    assert after and after[0].fields["session_epoch"] == 0, "the consumer opened a new session"


def test_a_corrupt_batch_is_a_typed_error_naming_topic_partition_and_offset(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    with _producer(mock_cluster, "c", linger_ms=0) as p:
        p.init_transactions()
        for value in (b"a", b"b", b"c"):
            with p.transaction():
                p.send(TOPIC, value, partition=0)
    bad = mock_cluster.corrupt_batch(TOPIC, 0, 2)  # the second transaction's batch (offsets: a 0, marker 1)
    consumer = consumers()
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    assert [r.value for r in _read_until(consumer, 1)] == [b"a"], "the records before it are returned"
    for _ in range(2):  # and nothing is skipped: every poll raises until the application seeks
        with pytest.raises(CorruptRecordError) as caught:
            consumer.poll(2.0)
        assert (caught.value.topic, caught.value.partition, caught.value.offset) == (TOPIC, 0, bad)
        assert f"{TOPIC}-0 at offset {bad}" in str(caught.value)
    assert consumer.position(tp) == bad
    consumer.seek(tp, bad + 1)
    assert [r.value for r in _read_until(consumer, 1)] == [b"c"]


@pytest.mark.parametrize("api", ["poll", "poll_by_partition"])
def test_a_record_the_deserializer_refuses_stops_the_partition_at_that_record(
    mock_cluster: MockCluster, consumers: Any, api: str
) -> None:
    """Issue 28 A4 (the Java CompletedFetch.fetchRecords): the records before it are returned, then every
    poll raises RecordDeserializationError naming the record, with the position at it - nothing is skipped
    or lost - until the application seeks past it."""
    mock_cluster.create_topic(TOPIC, 1)
    with _producer(mock_cluster, "d", linger_ms=0) as p:
        p.init_transactions()
        with p.transaction():  # one batch: the bad record sits in the middle of a fetched chunk
            for value in (b"a", b"b", b"\xff", b"c"):
                p.send(TOPIC, value, partition=0)
    consumer = consumers(value_deserializer=lambda v: v.decode("utf-8"))
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])

    def read(timeout: float) -> list[Any]:
        if api == "poll":
            return consumer.poll(timeout)
        return [r for records in consumer.poll_by_partition(timeout).values() for r in records]

    got: list[Any] = []
    deadline = time.monotonic() + 15
    while len(got) < 2 and time.monotonic() < deadline:
        got.extend(read(0.2))
    assert [r.value for r in got] == ["a", "b"], "the records before it, deserialized"
    for _ in range(2):
        with pytest.raises(RecordDeserializationError) as caught:
            read(2.0)
        error = caught.value
        assert (error.topic, error.partition, error.offset, error.origin) == (TOPIC, 0, 2, "value")
        assert isinstance(error.__cause__, UnicodeDecodeError)
        assert consumer.position(tp) == 2
    consumer.seek(tp, 3)
    assert [r.value for r in _read_until(consumer, 1)] == ["c"]


@pytest.mark.parametrize("policy", ["earliest", "latest", "none"])
def test_offset_out_of_range_follows_auto_offset_reset(
    mock_cluster: MockCluster, consumers: Any, policy: str
) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    with _producer(mock_cluster, "o") as p:
        p.init_transactions()
        with p.transaction():
            p.send(TOPIC, b"x", partition=0)
    tp = TopicPartition(TOPIC, 0)
    consumer = consumers(auto_offset_reset=policy)
    consumer.assign([tp])
    consumer.seek(tp, 1000)
    if policy == "none":
        with pytest.raises(OffsetOutOfRangeError) as caught:
            _read_until(consumer, 1, timeout=5)
        assert caught.value.offsets == {tp: 1000}
        return
    got = _read_until(consumer, 1, timeout=2 if policy == "latest" else 10)
    assert [r.value for r in got] == ([b"x"] if policy == "earliest" else [])
    assert consumer.position(tp) == (2 if policy == "earliest" else _log_end(mock_cluster, tp))


def test_a_leader_move_is_followed_without_loss_or_duplicates(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    tp = TopicPartition(TOPIC, 0)
    consumer = consumers()
    consumer.assign([tp])
    with _producer(mock_cluster, "m") as p:
        p.init_transactions()
        with p.transaction():
            for i in range(10):
                p.send(TOPIC, b"%d" % i, partition=0)
        first = _read_until(consumer, 10)
        old = mock_cluster.leader_of(TOPIC, 0)
        mock_cluster.move_leader(TOPIC, 0, next(b for b in mock_cluster.broker_ids if b != old))
        with p.transaction():
            for i in range(10, 20):
                p.send(TOPIC, b"%d" % i, partition=0)
        second = _read_until(consumer, 10)
    assert [int(r.value) for r in first + second] == list(range(20))
    assert consumer.poll(0.3) == []
    refused = [
        e for e in mock_cluster.request_log if e.api == "Fetch" and e.broker_id == old and e.error_codes
    ]
    assert refused, "the old leader refused a fetch (and the consumer followed its hint)"


@pytest.mark.parametrize("policy", ["earliest", "none"])
def test_a_truncated_log_after_a_leader_change_is_detected(
    mock_cluster: MockCluster, consumers: Any, policy: str
) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    tp = TopicPartition(TOPIC, 0)
    with _producer(mock_cluster, "t", linger_ms=0) as p:
        p.init_transactions()
        for i in range(4):
            with p.transaction():
                p.send(TOPIC, b"old-%d" % i, partition=0)  # offsets 0, 2, 4, 6 (markers between)
        consumer = consumers(auto_offset_reset=policy)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        assert len(_read_until(consumer, 4)) == 4
        assert consumer.position(tp) == 8
        mock_cluster.truncate_log(TOPIC, 0, 4)  # the new leader never had offsets 4..7
        with p.transaction():
            p.send(TOPIC, b"new", partition=0)
        if policy == "none":
            with pytest.raises(LogTruncationError) as caught:
                _read_until(consumer, 1, timeout=10)
            assert caught.value.offsets == {tp: 8} and caught.value.divergent_offsets == {tp: 4}
            return
        got = _read_until(consumer, 1, timeout=10)
    assert [(r.offset, r.value) for r in got] == [(4, b"new")], (
        "read from the divergence, never re-read old data"
    )
    asked = [e for e in mock_cluster.request_log if e.api == "OffsetForLeaderEpoch"]
    assert asked, "the position was validated with the new leader (KIP-320)"


def test_every_wait_is_bounded_when_the_leader_does_not_answer(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    tp = TopicPartition(TOPIC, 0)
    consumer = consumers(request_timeout_ms=1_000)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    mock_cluster.black_hole()
    started = time.monotonic()
    assert consumer.poll(0.5) == []
    assert time.monotonic() - started < 2.0
    started = time.monotonic()
    consumer.seek_to_end([tp])
    with pytest.raises(TimeoutError):
        consumer.position(tp, timeout=0.5)
    assert time.monotonic() - started < 2.0
    mock_cluster.black_hole(enabled=False)


def test_positions_start_at_committed_offsets_and_seek_to_committed_rewinds(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    tp = TopicPartition(TOPIC, 0)
    with _producer(mock_cluster, "k", linger_ms=0) as p:
        p.init_transactions()
        for i in range(3):
            with p.transaction():
                p.send(TOPIC, b"%d" % i, partition=0)
    committed: dict[TopicPartition, int] = {tp: 2}
    asked: list[list[TopicPartition]] = []

    def lookup(partitions: list[TopicPartition], timeout: float) -> dict[TopicPartition, int]:
        asked.append(partitions)
        return {p: committed[p] for p in partitions if p in committed}

    consumer = consumers(committed_offsets=lookup)
    consumer.assign([tp])
    assert [r.value for r in _read_until(consumer, 2)] == [b"1", b"2"]
    consumer.seek_to_committed()
    assert consumer.position(tp) == 2 and len(asked) == 2
    assert [r.value for r in _read_until(consumer, 2)] == [b"1", b"2"]


class _Listener:
    def __init__(self, consumer_ref: list[TransactionalConsumer]) -> None:
        self.events: list[tuple[str, list[TopicPartition], dict[TopicPartition, int]]] = []
        self._consumer = consumer_ref

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        consumer = self._consumer[0]
        self.events.append(("revoked", partitions, {tp: consumer.position(tp) for tp in partitions}))

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        self.events.append(("assigned", partitions, {}))


class _Member:
    """A group member that hands partitions over on the polling thread (the Membership interface)."""

    def __init__(self, consumer: TransactionalConsumer, plan: list[tuple[str, list[TopicPartition]]]) -> None:
        self.consumer = consumer
        self.plan = plan
        self.polls = 0
        self.committed: dict[TopicPartition, int] = {}

    def subscribe(self, topics: list[str]) -> None:
        self.topics = topics

    def poll(self, deadline: float) -> bool:
        self.polls += 1
        if self.plan:
            kind, partitions = self.plan.pop(0)
            (self.consumer.on_assign if kind == "assign" else self.consumer.on_revoke)(partitions)
        return True

    def fetch_committed(self, partitions: list[TopicPartition], timeout: float) -> dict[TopicPartition, Any]:
        return {tp: self.committed[tp] for tp in partitions if tp in self.committed}

    def group_metadata(self) -> Any:
        return None

    def close(self, timeout: float, leave_group: bool | None = None) -> None:
        self.closed = True


def test_a_group_member_assigns_and_revokes_on_the_polling_thread(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    mock_cluster.create_topic(TOPIC, 2)
    with _producer(mock_cluster, "g") as p:
        p.init_transactions()
        with p.transaction():
            p.send(TOPIC, b"p0", partition=0)
            p.send(TOPIC, b"p1", partition=1)
    consumer = consumers(group_id="g")
    ref = [consumer]
    listener = _Listener(ref)
    t0, t1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    member = _Member(consumer, [("assign", [t0, t1])])
    consumer._new_member = lambda hooks: member  # type: ignore[method-assign]
    consumer.subscribe([TOPIC], listener=listener)
    assert set(member.topics) == {TOPIC}
    got = _read_until(consumer, 2)
    assert sorted(r.value for r in got) == [b"p0", b"p1"]
    member.plan.append(("revoke", [t1]))
    assert consumer.poll(0.2) == []
    assert consumer.assignment() == {t0}
    assert listener.events[0][:2] == ("assigned", [t0, t1])
    assert listener.events[1] == ("revoked", [t1], {t1: 2}), "the listener saw the position before the revoke"


def test_a_partition_back_after_a_missed_generation_starts_at_the_committed_offset(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    """Revoked, a partition loses its position; assigned again, it starts at the group's committed
    offset - not where this consumer left it: another member may have processed and committed what
    came after meanwhile (the chaos tier saw kafka-python's consumer resume at its old position and
    write those records a second time)."""
    mock_cluster.create_topic(TOPIC, 1)
    with _producer(mock_cluster, "g") as p:
        p.init_transactions()
        with p.transaction():
            for i in range(12):
                p.send(TOPIC, b"%d" % i, partition=0)
    consumer = consumers(group_id="g", max_poll_records=4)
    t0 = TopicPartition(TOPIC, 0)
    member = _Member(consumer, [("assign", [t0])])
    consumer._new_member = lambda hooks: member  # type: ignore[method-assign]
    consumer.subscribe([TOPIC])
    assert [r.offset for r in _read_until(consumer, 4)] == [0, 1, 2, 3]
    assert consumer.position(t0) == 4
    member.committed[t0] = 8  # another member processed 4-7 while this one was out of the group
    member.plan.extend([("revoke", [t0]), ("assign", [t0])])
    assert [r.offset for r in _read_until(consumer, 4)] == [8, 9, 10, 11]
    assert member.plan == [] and consumer.position(t0) == 13  # past the commit marker


def test_a_settings_mapping_in_either_spelling_makes_a_consumer(mock_cluster: MockCluster) -> None:
    """confluent-kafka's ``Consumer({...})`` spelling: it used to raise AttributeError."""
    mock_cluster.create_topic("mapped", partitions=1)
    with TransactionalProducer(bootstrap_servers=mock_cluster.bootstrap_servers,
                               transactional_id="mapped") as p:
        p.init_transactions()
        with p.transaction():
            p.send("mapped", b"v", partition=0)
    consumer = TransactionalConsumer({"bootstrap.servers": mock_cluster.bootstrap_servers,
                                      "auto.offset.reset": "earliest"}, fetch_max_wait_ms=50)
    try:
        consumer.assign([TopicPartition("mapped", 0)])
        assert [r.value for r in _read_until(consumer, 1)] == [b"v"]
    finally:
        consumer.close(timeout=5)


def test_settings_the_path_cannot_honour_are_config_errors_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="enable_auto_commit"):
        TransactionalConsumer(**{"bootstrap.servers": "127.0.0.1:9", "enable.auto.commit": "true"})
    with pytest.raises(ConfigError, match="isolation_level"):
        TransactionalConsumer(**{"bootstrap.servers": "127.0.0.1:9", "isolation.level": "read_uncommitted"})
