"""TransactionalProcessor against in-memory fakes of the consumer and the producer.

The fakes keep just enough state to check what users rely on: which outputs and input offsets
become committed together, where the consumer resumes after an abort, what happens to the open
transaction when partitions are revoked, which errors end the loop, what shapes a transform may
return, and how the consumer is configured. (The real thing, with TransactionalConsumer and the
MockCluster, is in tests/mock/test_eos_*.py; so are the idle, stop and rebalance paths, where the real
group member runs.)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka.structs import ConsumerGroupMetadata, MemberState, OffsetAndMetadata, TopicPartition

from txnproducer import ConsumerConfig, ConsumerRecord, errors
from txnproducer._internal.fetch.decoder import columns_from_records
from txnproducer.config import ProducerConfig
from txnproducer.eos import OutputBatch, OutputRecord, TransactionalProcessor
from txnproducer.eos.progress import METRIC_NAMES

T0, T1 = TopicPartition("in", 0), TopicPartition("in", 1)


def record(tp: TopicPartition, offset: int) -> Any:
    value = f"{tp.partition}:{offset}".encode()
    return ConsumerRecord(tp.topic, tp.partition, offset, 0, 0, None, value, (), 0)


class Group:
    """The consumer group's committed offsets (what the transaction commits)."""

    def __init__(self) -> None:
        self.committed: dict[TopicPartition, int] = {}


class FakeConsumer:
    """TransactionalConsumer as the processor uses it: ``poll_by_partition``, a rebalance listener run
    inside poll (eager: every partition revoked, their positions dropped; a newly assigned partition
    starts at the group's committed offset), seek, committed, group metadata, close."""

    def __init__(self, group: Group, log: list[str], data: dict[TopicPartition, int],
                 config: ConsumerConfig) -> None:
        self.config = config
        self.group = group
        self.log = log
        self.data = data  # partition -> number of records in it
        self.assigned: set[TopicPartition] = set(data)
        self.positions: dict[TopicPartition, int] = {}
        self.listener: Any = None
        self.topics: list[str] = []
        self.closed = False
        self.closed_with: tuple[float | None, bool | None] | None = None
        self.before_poll: list[Callable[[FakeConsumer], None]] = []
        self.generation = 1
        self.state = MemberState.STABLE

    def subscribe(self, topics: list[str], listener: Any) -> None:
        self.topics = list(topics)
        self.listener = listener

    def rebalance(self, new_assignment: set[TopicPartition], lost: bool = False) -> None:
        """What the consumer's group member does inside poll: revoke (or lose) everything, then assign."""
        self.log.append("revoke-start")
        if lost:
            self.listener.on_partitions_lost(sorted(self.assigned))
        else:
            self.listener.on_partitions_revoked(sorted(self.assigned))
        self.log.append("revoke-done")
        self.generation += 1
        self.positions = {}
        self.assigned = set(new_assignment)
        self.listener.on_partitions_assigned(sorted(new_assignment))

    def poll_by_partition(self, timeout: float, max_records: int) -> dict[TopicPartition, list[Any]]:
        assert not self.closed
        if self.before_poll:  # one scripted event per poll
            self.before_poll.pop(0)(self)
        out: dict[TopicPartition, list[Any]] = {}
        budget = max_records
        for tp in sorted(self.assigned):
            if tp not in self.positions:
                self.positions[tp] = self.group.committed.get(tp, 0)
            pos = self.positions[tp]
            n = min(budget, self.data[tp] - pos)
            if n > 0:
                out[tp] = [record(tp, o) for o in range(pos, pos + n)]
                self.positions[tp] = pos + n
                budget -= n
        return out

    def poll_batch(self, timeout: float, max_records: int) -> list[Any]:
        return [columns_from_records(tp.topic, tp.partition, records)
                for tp, records in self.poll_by_partition(timeout, max_records).items()]

    def seek(self, tp: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        if tp not in self.assigned:
            raise errors.IllegalStateError("not assigned")
        target = offset.offset if isinstance(offset, OffsetAndMetadata) else offset
        self.log.append(f"seek {tp.partition}@{target}")
        self.positions[tp] = target

    def position(self, tp: TopicPartition, timeout: float | None = None) -> int:
        if tp not in self.positions:
            raise errors.TimeoutError("no position yet")
        return self.positions[tp]

    def committed(self, partitions: list[TopicPartition],
                  timeout: float | None = None) -> dict[TopicPartition, OffsetAndMetadata | None]:
        committed = self.group.committed
        return {tp: OffsetAndMetadata(committed[tp], "", 0) if tp in committed else None for tp in partitions}

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    def group_metadata(self) -> ConsumerGroupMetadata:
        return ConsumerGroupMetadata("g", self.generation, "member-1", None, self.state)

    def close(self, timeout: float | None = None, leave_group: bool | None = None) -> None:
        self.log.append("consumer-close")
        self.closed = True
        self.closed_with = (timeout, leave_group)


class FakeProducer:
    def __init__(self, config: ProducerConfig, group: Group, log: list[str]) -> None:
        self.config = config
        self.group = group
        self.log = log
        self.pending: list[OutputRecord] = []
        self.pending_offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.committed: list[OutputRecord] = []
        self.in_txn = False
        self.closed_with: float | None = None
        self.fail: dict[str, BaseException] = {}
        self.group_metadata: list[Any] = []

    def _maybe_fail(self, op: str) -> None:
        exc = self.fail.pop(op, None)
        if exc is not None:
            raise exc

    def init_transactions(self, timeout: float | None = None) -> None:
        self.log.append("init")

    def begin_transaction(self) -> None:
        assert not self.in_txn
        self.in_txn = True
        self.log.append("begin")

    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             timestamp_ms: int | None = None, headers: Any = None) -> None:
        assert self.in_txn
        self._maybe_fail("send")
        self.pending.append(OutputRecord(topic, value, key, partition, headers, timestamp_ms))

    def flush(self, timeout: float | None = None) -> None:
        pass

    def send_offsets_to_transaction(self, offsets: dict[TopicPartition, OffsetAndMetadata],
                                    group_metadata: Any, timeout: float | None = None) -> None:
        assert self.in_txn
        self._maybe_fail("send_offsets")
        self.group_metadata.append(group_metadata)
        self.pending_offsets.update(offsets)

    def commit_transaction(self, timeout: float | None = None) -> None:
        assert self.in_txn
        self._maybe_fail("commit")
        self.committed.extend(self.pending)
        for tp, om in self.pending_offsets.items():
            self.group.committed[tp] = om.offset
        self._end("commit")

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._maybe_fail("abort")
        self._end("abort")

    def _end(self, what: str) -> None:
        self.pending.clear()
        self.pending_offsets.clear()
        self.in_txn = False
        self.log.append(what)

    def close(self, timeout: float | None = None) -> None:
        self.log.append(f"producer-close({timeout})")
        self.closed_with = timeout


class Harness:
    def __init__(self, data: dict[TopicPartition, int], **kwargs: Any) -> None:
        self.group = Group()
        self.log: list[str] = []
        self.data = data
        self.consumer: FakeConsumer | None = None
        self.producer: FakeProducer | None = None
        self.commits: list[dict[TopicPartition, OffsetAndMetadata]] = []
        kwargs.setdefault("transform", lambda r: [OutputRecord("out", r.value, partition=r.partition)])
        kwargs.setdefault("instance_name", "i1")
        self.proc = TransactionalProcessor(
            "in",
            consumer_config={"group_id": "g", "bootstrap_servers": "k:9092", **kwargs.pop("consumer", {})},
            producer_config=kwargs.pop("producer", {}),
            consumer_factory=self._consumer,
            producer_factory=self._producer,
            on_commit=self.commits.append,
            poll_timeout_ms=0,
            **kwargs,
        )

    def _consumer(self, config: ConsumerConfig) -> FakeConsumer:
        self.consumer = FakeConsumer(self.group, self.log, self.data, config)
        return self.consumer

    def _producer(self, config: ProducerConfig) -> FakeProducer:
        self.producer = FakeProducer(config, self.group, self.log)
        return self.producer

    def started(self) -> tuple[FakeConsumer, FakeProducer]:
        self.proc.start()
        assert self.consumer is not None and self.producer is not None
        return self.consumer, self.producer

    def output_values(self) -> list[bytes]:
        assert self.producer is not None
        return [r.value for r in self.producer.committed]


def expected_values(data: dict[TopicPartition, int]) -> list[bytes]:
    return sorted(f"{tp.partition}:{o}".encode() for tp, n in data.items() for o in range(n))


# --- settings ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("consumer", "message"),
    [
        ({"isolation_level": "read_uncommitted"}, "isolation_level"),
        ({"enable_auto_commit": True}, "enable_auto_commit"),
        ({"enable.auto.commit": True}, "enable_auto_commit"),
        ({"group_id": ""}, "group_id"),
    ],
)
def test_settings_that_break_exactly_once_are_rejected(consumer: dict[str, Any], message: str) -> None:
    with pytest.raises(errors.ConfigError, match=message):
        Harness({T0: 1}, consumer=consumer)


def test_consumer_is_forced_to_read_committed_without_auto_commit() -> None:
    h = Harness({T0: 1}, consumer={"session.timeout.ms": 3000, "heartbeat_interval_ms": 500})
    consumer, _ = h.started()
    config = consumer.config
    assert config.isolation_level == "read_committed"
    assert config.enable_auto_commit is False
    assert config.auto_offset_reset == "earliest"
    assert (config.session_timeout_ms, config.heartbeat_interval_ms) == (3000, 500)
    assert config.bootstrap_servers == ["k:9092"] and config.group_id == "g"
    assert consumer.topics == ["in"]


def test_kafka_python_only_settings_are_dropped_and_unknown_ones_refused(
        caplog: pytest.LogCaptureFixture) -> None:
    """The mapping a kafka-python KafkaConsumer took keeps working: its keys that mean nothing to
    TransactionalConsumer are dropped with a warning naming them; a misspelt key is an error."""
    h = Harness({T0: 1}, consumer={"api_version": (2, 5), "check_crcs": True, "max_poll_records": 7})
    consumer, _ = h.started()
    assert consumer.config.max_poll_records == 7
    assert "eos.consumer_settings_ignored" in caplog.text and "api_version" in caplog.text
    with pytest.raises(errors.ConfigError, match="max_pol_records"):
        Harness({T0: 1}, consumer={"max_pol_records": 7})


def test_group_instance_id_is_the_transactional_id_unless_chosen() -> None:
    """Static membership by default (a restarted instance is not stalled session_timeout_ms)."""
    assert Harness({T0: 1}, instance_name="east-1").proc.group_instance_id == "g-east-1"
    explicit = Harness({T0: 1}, instance_name="east-1", group_instance_id="east")
    assert explicit.proc.group_instance_id == "east"
    consumer, _ = explicit.started()
    assert consumer.config.group_instance_id == "east"
    assert Harness({T0: 1}, group_instance_id=False).proc.group_instance_id is None
    configured = Harness({T0: 1}, consumer={"group.instance.id": "from-config"})
    assert configured.proc.group_instance_id == "from-config"
    with pytest.raises(errors.ConfigError, match="group_instance_id"):
        Harness({T0: 1}, consumer={"group.instance.id": "a"}, group_instance_id="b")
    # a transactional id Kafka would refuse as an instance id: a dynamic member (logged)
    assert Harness({T0: 1}, transactional_id="tx/with spaces").proc.group_instance_id is None


def test_transactional_id_is_per_instance_and_stable() -> None:
    assert Harness({T0: 1}, instance_name="east-1").proc.transactional_id == "g-east-1"
    assert Harness({T0: 1}, transactional_id="explicit").proc.transactional_id == "explicit"
    shared = ProducerConfig(bootstrap_servers="k:9092", transactional_id="from-config")
    assert Harness({T0: 1}, producer=shared, instance_name=None).proc.transactional_id == "from-config"
    assert Harness({T0: 1}, producer=shared, instance_name="b").proc.transactional_id == "g-b"
    with pytest.raises(errors.ConfigError, match="instance_name"):
        Harness({T0: 1}, instance_name=None)


def test_exactly_one_transform_form_is_required() -> None:
    with pytest.raises(errors.ConfigError, match="exactly one"):
        Harness({T0: 1}, transform_batch=lambda rs: [])
    with pytest.raises(errors.ConfigError, match="exactly one"):
        Harness({T0: 1}, transform_columns=lambda b: None)
    with pytest.raises(errors.ConfigError, match="exactly one"):
        Harness({T0: 1}, transform=None)


def test_a_column_transform_gets_each_partitions_columns_and_may_return_columns() -> None:
    """transform_columns: a PartitionBatch per partition chunk in, OutputBatch (values, keys, a
    partition) or OutputRecords out; the next offsets commit with the outputs."""
    seen: list[tuple[int, list[int]]] = []

    def columns(batch: Any) -> Any:
        seen.append((batch.partition, list(batch.offsets)))
        values = [v.upper() for v in batch.values]
        if batch.partition == 0:
            return OutputBatch("out", values, keys=[b"k%d" % o for o in batch.offsets], partition=0)
        return [OutputRecord("out", v, partition=1) for v in values]

    data = {T0: 3, T1: 2}
    h = Harness(data, transform=None, transform_columns=columns, max_records_per_txn=10)
    _, producer = h.started()
    metrics = h.proc.run(max_transactions=1)
    assert seen == [(0, [0, 1, 2]), (1, [0, 1])]
    assert [(r.value, r.key, r.partition) for r in producer.committed] == [
        (b"0:0", b"k0", 0), (b"0:1", b"k1", 0), (b"0:2", b"k2", 0), (b"1:0", None, 1), (b"1:1", None, 1)]
    assert h.commits == [{T0: OffsetAndMetadata(3, "", 0), T1: OffsetAndMetadata(2, "", 0)}]
    assert metrics["records_in"] == 5 and metrics["records_out"] == 5


def test_an_output_batch_with_keys_and_values_apart_aborts_with_a_typed_error() -> None:
    h = Harness({T0: 2}, transform=None,
                transform_columns=lambda b: OutputBatch("out", list(b.values), keys=[b"k"]))
    with pytest.raises(errors.TransformOutputError, match="1 keys for 2 values"):
        h.proc.run()
    assert h.log[-2:] == ["abort", "seek 0@0"] and h.group.committed == {}


# --- the loop ---------------------------------------------------------------------------------------


def test_outputs_and_next_offsets_commit_in_the_same_transaction() -> None:
    data = {T0: 5, T1: 3}
    h = Harness(data)
    _, producer = h.started()
    metrics = h.proc.run(max_transactions=1)
    assert h.output_values() == expected_values(data)
    assert h.group.committed == {T0: 5, T1: 3}  # next offsets: one past the last record
    assert h.commits == [{T0: OffsetAndMetadata(5, "", 0), T1: OffsetAndMetadata(3, "", 0)}]
    assert producer.group_metadata[0].generation_id == 1  # the consumer's metadata: KIP-447 fencing
    assert metrics["transactions_committed"] == 1
    assert metrics["records_in"] == 8 and metrics["records_out"] == 8


def test_transactions_are_bounded_by_max_records() -> None:
    data = {T0: 10}
    h = Harness(data, max_records_per_txn=4)
    h.proc.run(max_transactions=3)
    assert [c[T0].offset for c in h.commits] == [4, 8, 10]
    assert h.output_values() == expected_values(data)


def test_batch_transform_gets_each_polled_batch() -> None:
    batches: list[int] = []

    def batch(records: list[Any]) -> list[OutputRecord]:
        batches.append(len(records))
        return [OutputRecord("out", b"sum", key=str(len(records)).encode())]

    h = Harness({T0: 6}, transform=None, transform_batch=batch, max_records_per_txn=6)
    h.proc.run(max_transactions=1)
    assert batches == [6]
    assert h.group.committed == {T0: 6}


def test_commit_failed_aborts_rewinds_and_reprocesses_exactly_once() -> None:
    data = {T0: 4, T1: 4}
    h = Harness(data, max_records_per_txn=100)
    _, producer = h.started()
    producer.fail["send_offsets"] = errors.CommitFailedError("ILLEGAL_GENERATION", error_code=22)
    metrics = h.proc.run(max_transactions=1)
    assert metrics["aborts_on_error"] == 1 and metrics["transactions_aborted"] == 1
    assert h.log.index("abort") < h.log.index("seek 0@0")  # rewound to where the txn started
    assert h.output_values() == expected_values(data)  # reprocessed once, committed once
    assert h.group.committed == {T0: 4, T1: 4}


def test_rewind_goes_to_the_groups_committed_offset() -> None:
    data = {T0: 10}
    h = Harness(data, max_records_per_txn=5)
    _, producer = h.started()
    h.proc.run(max_transactions=1)
    producer.fail["commit"] = errors.TransactionAbortableError("abortable")
    h.proc.run(max_transactions=1)
    assert "seek 0@5" in h.log
    assert h.output_values() == expected_values(data)


@pytest.mark.parametrize("exc", [errors.GroupAuthorizationError("no READ on group g"),
                                 errors.ProducerFencedError("a newer instance took over")])
def test_fatal_or_authorization_error_closes_and_raises(exc: errors.TxnProducerError) -> None:
    """A fatal error, and an authorization error (abortable for the producer, but no retry can
    succeed until the ACLs change), close the processor and reach the caller."""
    h = Harness({T0: 3})
    consumer, producer = h.started()
    producer.fail["send_offsets"] = exc
    with pytest.raises(type(exc)):
        h.proc.run()
    assert producer.committed == [] and h.group.committed == {}
    assert consumer.closed and producer.closed_with is not None
    assert h.proc.closed
    with pytest.raises(errors.ClosedError):
        h.proc.run()


def test_transform_error_aborts_rewinds_and_reaches_the_caller() -> None:
    data = {T0: 3}
    fail = threading.Event()
    fail.set()

    def transform(r: Any) -> list[OutputRecord]:
        if fail.is_set() and r.offset == 1:
            raise KeyError("bad record")
        return [OutputRecord("out", r.value)]

    h = Harness(data, transform=transform)
    _, producer = h.started()
    with pytest.raises(KeyError, match="bad record"):
        h.proc.run()
    assert h.log[-2:] == ["abort", "seek 0@0"]
    assert h.group.committed == {} and producer.committed == []
    assert not h.proc.closed  # the caller decides: fix and run again, or close
    fail.clear()
    h.proc.run(max_transactions=1)
    assert h.output_values() == expected_values(data)


@pytest.mark.parametrize(("result", "shown"), [
    (b"bytes", "returned bytes b'bytes', not output records: a value needs its topic"),
    ("text", "returned str 'text', not output records"),
    (42, "returned int 42"),
    ([("out", b"v")], "holds tuple ('out', b'v')"),
    ((x for x in [b"v"]), "holding bytes b'v'"),
])
def test_a_transform_output_that_is_not_records_aborts_with_a_typed_error(result: Any, shown: str) -> None:
    """Issue 34 item 7: the shapes a transform cannot have meant are a TransformOutputError (a TypeError
    too) naming what came back; the transaction aborts and the input is rewound, as for an exception."""
    h = Harness({T0: 2}, transform=lambda r: result)
    with pytest.raises(errors.TransformOutputError, match=re.escape(shown)) as raised:
        h.proc.run()
    assert isinstance(raised.value, TypeError)
    assert "OutputRecord(topic, value" in str(raised.value)
    assert h.log[-2:] == ["abort", "seek 0@0"]
    assert h.group.committed == {} and not h.proc.closed


@pytest.mark.parametrize("form", ["transform", "transform_batch"])
def test_one_output_record_and_none_are_outputs_a_user_would_expect(form: str) -> None:
    """One OutputRecord is one output; None is no output (the filter idiom); a generator works."""
    def per_record(r: Any) -> Any:
        if r.offset % 3 == 0:
            return None  # filtered out
        if r.offset % 3 == 1:
            return OutputRecord("out", r.value, partition=r.partition)
        return (o for o in [OutputRecord("out", r.value, partition=r.partition)])

    def per_batch(records: list[Any]) -> Any:
        return OutputRecord("out", b"+".join(r.value for r in records)) if len(records) > 1 else None

    data = {T0: 6}
    h = Harness(data, **{form: per_record if form == "transform" else per_batch}, max_records_per_txn=6,
                **({"transform": None} if form == "transform_batch" else {}))
    metrics = h.proc.run(max_transactions=1)
    if form == "transform":
        assert h.output_values() == [b"0:1", b"0:2", b"0:4", b"0:5"]
        assert metrics["records_in"] == 6 and metrics["records_out"] == 4
    else:
        assert h.output_values() == [b"+".join(f"0:{o}".encode() for o in range(6))]
    assert h.group.committed == {T0: 6}


def test_revocation_aborts_the_open_transaction_before_it_completes() -> None:
    data = {T0: 4, T1: 4}
    h = Harness(data, max_txn_time_ms=60_000)
    consumer, _ = h.started()
    # First poll: all 8 records (txn open). Second poll: the group takes T1 away.
    consumer.before_poll.append(lambda c: None)
    consumer.before_poll.append(lambda c: c.rebalance({T0}))
    consumer.before_poll.append(lambda c: h.proc.stop())  # from the loop's thread: stop after this batch
    h.proc.run()
    metrics = h.proc.metrics()
    revoke = h.log.index("revoke-start")
    # aborted inside the revocation, before the member rejoins (the consumer drops the revoked
    # partitions' positions: nothing to rewind)
    assert h.log[revoke:revoke + 3] == ["revoke-start", "abort", "revoke-done"]
    assert metrics["aborts_on_revocation"] == 1 and metrics["rebalances"] == 1
    assert h.group.committed == {T0: 4}  # the kept partition reprocessed from its committed offset
    assert h.output_values() == expected_values({T0: 4})
    assert h.proc.assignment() == frozenset({T0})


def test_lost_partitions_abort_the_open_transaction_and_commit_nothing() -> None:
    """A member dropped from its group (session timeout, fenced): on_partitions_lost aborts the open
    transaction; nothing of it is committed; the partitions come back at the committed offsets."""
    data = {T0: 4, T1: 4}
    h = Harness(data, max_txn_time_ms=60_000)
    consumer, producer = h.started()
    consumer.before_poll.append(lambda c: None)
    consumer.before_poll.append(lambda c: c.rebalance({T0, T1}, lost=True))
    consumer.before_poll.append(lambda c: h.proc.stop())
    h.proc.run()
    lost = h.log.index("revoke-start")
    assert h.log[lost:lost + 3] == ["revoke-start", "abort", "revoke-done"]
    assert h.proc.metrics()["aborts_on_revocation"] == 1
    assert h.output_values() == expected_values(data) and h.group.committed == {T0: 4, T1: 4}
    assert producer.group_metadata[-1].generation_id == 2  # committed in the new generation only


def test_fenced_during_revocation_is_raised_from_run() -> None:
    h = Harness({T0: 4, T1: 4}, max_txn_time_ms=60_000)
    consumer, producer = h.started()
    consumer.before_poll.append(lambda c: None)

    def fenced_rebalance(c: FakeConsumer) -> None:
        producer.fail["abort"] = errors.ProducerFencedError("fenced")
        c.rebalance({T0})

    consumer.before_poll.append(fenced_rebalance)
    with pytest.raises(errors.ProducerFencedError):
        h.proc.run()
    assert h.proc.closed and consumer.closed


def test_stop_from_another_thread_commits_and_closes() -> None:
    data = {T0: 3, T1: 3}
    h = Harness(data, max_records_per_txn=4, max_txn_time_ms=60_000)
    consumer, _ = h.started()
    # Poll 1: 4 records, committed. During poll 2 (2 records: txn open) stop() comes from another
    # thread: the open transaction is committed, then the consumer and the producer close.
    consumer.before_poll.extend([lambda c: None, lambda c: _stop_in_thread(h.proc)])
    h.proc.run()
    assert [dict(c) for c in h.commits][-1] == {T1: OffsetAndMetadata(3, "", 0)}
    assert h.output_values() == expected_values(data)
    assert h.group.committed == {T0: 3, T1: 3}
    assert h.log[-3:] == ["commit", "consumer-close", "producer-close(10.0)"]
    assert h.proc.closed


def _stop_in_thread(proc: TransactionalProcessor) -> None:
    """Ask to stop from another thread without waiting (the loop is on this thread)."""
    t = threading.Thread(target=proc.stop, args=(0.0,))
    t.start()
    t.join(5)
    assert not t.is_alive()


def test_stop_when_not_running_closes_once() -> None:
    h = Harness({T0: 1})
    consumer, producer = h.started()
    assert h.proc.stop() is True
    assert h.proc.stop() is True
    assert h.log.count("consumer-close") == 1 and consumer.closed and producer.closed_with == 10.0
    assert consumer.closed_with == (10.0, None)  # a static member stays in its group


def test_stop_may_leave_the_group() -> None:
    """Scaling down: leave_group=True makes even a static member leave, so its partitions move at once."""
    h = Harness({T0: 1})
    consumer, _ = h.started()
    assert h.proc.stop(leave_group=True) is True
    assert consumer.closed_with == (10.0, True)


def test_simulated_crash_leaves_the_transaction_open() -> None:
    h = Harness({T0: 3})
    consumer, producer = h.started()
    h.proc.simulate_crash("before_commit")
    h.proc.run()
    assert producer.in_txn and producer.pending_offsets  # nothing aborted, nothing committed
    assert "abort" not in h.log and "commit" not in h.log
    assert producer.closed_with == 0
    assert consumer.closed_with == (0, False)  # no LeaveGroup, no listener: as a killed process
    assert h.group.committed == {}


def test_run_returns_open_after_max_transactions_and_stop_closes_it() -> None:
    h = Harness({T0: 6}, max_records_per_txn=3)
    consumer, producer = h.started()
    h.proc.run(max_transactions=1)
    assert not h.proc.closed and not consumer.closed
    h.proc.run(max_transactions=1)  # continues where it stopped
    assert h.output_values() == expected_values({T0: 6})
    assert h.proc.stop() is True
    assert h.proc.closed and consumer.closed and producer.closed_with == 10.0


# --- found by the chaos tier (two instances, missed generations) ------------------------------------


def test_offsets_are_not_committed_while_the_consumer_has_no_generation() -> None:
    """kafka-python reports generation -1 and no member id while it rejoins; Kafka accepts such a
    TxnOffsetCommit without fencing, so the transaction must not commit: abort, rewind, redo."""
    data = {T0: 4}
    h = Harness(data, max_records_per_txn=4)
    consumer, producer = h.started()
    consumer.generation = -1
    consumer.before_poll.append(lambda c: None)
    consumer.before_poll.append(lambda c: setattr(c, "generation", 2))  # rejoined
    h.proc.run(max_transactions=1)
    assert all(gm.generation_id >= 0 and gm.member_id for gm in producer.group_metadata)
    assert h.proc.metrics()["aborts_on_error"] == 1
    assert h.output_values() == expected_values(data)  # once, after the rejoin


def test_a_partition_back_after_a_missed_generation_resumes_at_the_committed_offset() -> None:
    """The consumer drops a revoked partition's position and starts it again at the group's committed
    offset: records another member processed and committed meanwhile are not written twice. (The
    consumer's own part: tests/mock/test_consumer.py.)"""
    data = {T0: 12}
    h = Harness(data, max_records_per_txn=4)
    consumer, producer = h.started()
    h.proc.run(max_transactions=1)  # this instance: records 0-3, committed offset 4
    assert h.group.committed == {T0: 4}

    def another_member_took_4_to_7(c: FakeConsumer) -> None:
        h.group.committed[T0] = 8
        producer.committed.extend(OutputRecord("out", f"0:{o}".encode(), partition=0) for o in range(4, 8))
        c.rebalance({T0})

    consumer.before_poll.append(another_member_took_4_to_7)
    h.proc.run(max_transactions=1)
    assert h.group.committed == {T0: 12}
    assert sorted(h.output_values()) == expected_values(data)  # 4-7 not written twice


def test_a_consumer_that_cannot_be_made_is_raised_and_the_producer_closed() -> None:
    h = Harness({T0: 1})

    def refused(config: ConsumerConfig) -> Any:
        raise errors.ConfigError("ssl_cafile is set but security_protocol is PLAINTEXT")

    h.proc._consumer_factory = refused
    with pytest.raises(errors.ConfigError, match="ssl_cafile"):
        h.proc.run(max_transactions=1)
    assert h.proc.closed and h.producer is not None and h.producer.closed_with == 10.0


def test_every_metric_is_documented_in_the_pipelines_guide() -> None:
    """Issue 34 item 7: metrics() keys are documented where a user of the processor looks."""
    section = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "pipelines.md").read_text()
    assert set(Harness({T0: 1}).proc.metrics()) == set(METRIC_NAMES)
    missing = [name for name in METRIC_NAMES if f"| `{name}` |" not in section]
    assert not missing, f"metrics() keys without a row in the pipelines guide's metrics table: {missing}"
