"""RecordAccumulator: batching, readiness, memory bounds, drain gating and retry ordering."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatch
from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.batching.accumulator import RecordAccumulator
from txnproducer._internal.batching.batch import RecordMetadata

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
LEADERS = {TP0: 1, TP1: 2}


@attrs.define
class PidEpoch:
    producer_id: int
    epoch: int


class FakeTM:
    """Just the TransactionManager calls the accumulator makes."""

    def __init__(self) -> None:
        self.allowed: set[TopicPartition] = {TP0, TP1}
        self.broker_state: set[TopicPartition] = {TP0, TP1}
        self.sequences: dict[TopicPartition, int] = {}
        self.producer_id_and_epoch = PidEpoch(1000, 3)

    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool:
        return tp in self.allowed

    def has_broker_state(self, tp: TopicPartition) -> bool:
        return tp in self.broker_state

    def assign_sequence(self, tp: TopicPartition, record_count: int) -> int:
        base = self.sequences.get(tp, 0)
        self.sequences[tp] = base + record_count
        return base

    def release_sequence(self, tp: TopicPartition, base_sequence: int, record_count: int) -> None:
        assert self.sequences[tp] == base_sequence + record_count, "only the last batch's sequences go back"
        self.sequences[tp] = base_sequence


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(**kw: Any) -> tuple[RecordAccumulator, FakeTM, Clock]:
    tm = FakeTM()
    clock = Clock()
    settings: dict[str, Any] = {"batch_size": 1024, "linger_ms": 10, "retry_backoff_ms": 100,
                                "retry_backoff_max_ms": 1000}
    settings.update(kw)
    acc = RecordAccumulator(transaction_manager=tm, clock=clock, **settings)
    return acc, tm, clock


def leader(tp: TopicPartition) -> int | None:
    return LEADERS.get(tp)


def append(acc: RecordAccumulator, tp: TopicPartition = TP0, value: bytes = b"v" * 10,
           key: bytes | None = None, max_block_s: float = 1.0) -> Any:
    return acc.append(tp, 1_700_000_000_000, key, value, [], max_block_s)


def announce_memory_waits(acc: RecordAccumulator, announce: Callable[[], Any]) -> None:
    """Call ``announce`` whenever an append is about to wait for memory (under the accumulator's
    lock, just before it waits): what a test synchronises on instead of sleeping."""
    wait_for_memory = acc._wait_for_memory

    def announce_then_wait(needed: int, deadline: float, max_block_s: float, tp: Any) -> None:
        announce()
        wait_for_memory(needed, deadline, max_block_s, tp)

    acc._wait_for_memory = announce_then_wait  # type: ignore[method-assign]


def test_records_share_a_batch_until_batch_size() -> None:
    acc, _, _ = make(batch_size=300)
    wakes = [append(acc, value=b"x" * 50)[1] for _ in range(8)]
    assert wakes[0] is True  # a new batch wakes the sender (linger timer starts)
    assert acc.queued_batches == 2
    drained = acc.drain(leader, {1})
    batch = drained[1][0]
    assert 1 < batch.record_count < 8
    assert batch.size <= 300


def test_last_batch_full_tells_the_sticky_partitioner_when_it_may_move_on() -> None:
    """KIP-794: the partitioner switches only once the partition's last batch takes no more
    records: there is none, or it refused a record, or it left for the broker."""
    acc, _, _ = make(batch_size=300, linger_ms=10_000)
    assert acc.is_last_batch_full(TP0)  # no batch
    append(acc, value=b"x" * 50)
    assert not acc.is_last_batch_full(TP0)  # room left
    while acc.queued_batches == 1:
        append(acc, value=b"x" * 50)
    assert not acc.is_last_batch_full(TP0)  # the record that did not fit started a second batch
    acc.begin_flush()  # every batch is ready now
    first = acc.drain(leader, {1})[1]
    assert len(first) == 1 and not acc.is_last_batch_full(TP0)  # the open one is still last
    second = acc.drain(leader, {1})[1]
    assert len(second) == 1 and acc.is_last_batch_full(TP0)  # both left


def test_linger_delays_readiness_and_reports_remaining_time() -> None:
    acc, _, clock = make(linger_ms=10)
    append(acc)
    nodes, delay, unknown = acc.ready(leader)
    assert nodes == set() and not unknown
    assert delay == pytest.approx(0.010)
    clock.now += 0.011
    nodes, _, _ = acc.ready(leader)
    assert nodes == {1}


def test_full_batch_flush_and_force_make_ready_before_linger() -> None:
    acc, _, _ = make(linger_ms=10_000, batch_size=100)
    append(acc, TP0, value=b"x" * 120)  # one record larger than batch_size: a full batch alone
    append(acc, TP1)
    assert acc.ready(leader)[0] == {1}
    assert acc.ready(leader, force=True)[0] == {1, 2}
    acc.begin_flush()
    assert acc.ready(leader)[0] == {1, 2}


def test_unknown_leader_is_reported() -> None:
    acc, tm, clock = make()
    tm.allowed.add(TopicPartition("other", 0))
    append(acc, TopicPartition("other", 0))
    clock.now += 1
    nodes, _, unknown = acc.ready(leader)
    assert nodes == set() and unknown


def test_drain_assigns_producer_state_and_batches_decode_with_valid_crc() -> None:
    acc, tm, clock = make(compression_type="gzip")
    for i in range(3):
        append(acc, key=b"k%d" % i, value=b"value-%d" % i)
    clock.now += 1
    batch = acc.drain(leader, {1})[1][0]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (1000, 3, 0)
    assert tm.sequences[TP0] == 3
    records = MemoryRecords(bytes(batch.buffer))
    decoded = records.next_batch()
    assert isinstance(decoded, DefaultRecordBatch)
    assert decoded.validate_crc()
    assert decoded.is_transactional
    assert decoded.producer_id == 1000 and decoded.producer_epoch == 3 and decoded.base_sequence == 0
    assert [(r.key, r.value) for r in decoded] == [(b"k%d" % i, b"value-%d" % i) for i in range(3)]


def test_drain_skips_partitions_the_transaction_manager_has_not_allowed() -> None:
    acc, tm, clock = make()
    tm.allowed = {TP1}
    append(acc, TP0)
    append(acc, TP1)
    clock.now += 1
    assert acc.ready(leader)[0] == {2}
    assert acc.drain(leader, {1, 2}).keys() == {2}
    tm.allowed.add(TP0)
    assert acc.drain(leader, {1, 2}).keys() == {1}


class _BuildFails:
    """A batch's encoder whose build() raises (what a failing codec does at drain time)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def build(self) -> bytearray:
        raise RuntimeError("cannot encode")


@pytest.mark.parametrize("handler", [False, True], ids=["default", "handler"])
def test_a_batch_that_cannot_be_encoded_leaves_the_queue_and_the_others_drain(handler: bool) -> None:
    acc, tm, clock = make()
    bad = append(acc, TP0)[0]
    other = append(acc, TP0, value=b"w" * 2000)[0]  # the partition's next batch, behind the bad one
    good = append(acc, TP1)[0]
    failing = acc._batches[TP0][0]
    failing.builder = _BuildFails(failing.builder)
    used = acc.used_memory
    clock.now += 1
    seen: list[tuple[Any, Exception, bool]] = []

    def on_encode_error(batch: Any, exc: Exception) -> None:
        seen.append((batch, exc, acc._mutex.locked()))
        acc.fail(batch, errors.BatchEncodingError("handled"))

    drained = acc.drain(leader, {1, 2}, on_encode_error=on_encode_error if handler else None)
    assert [b.tp for b in drained[2]] == [TP1] and 1 not in drained  # one batch per partition
    if handler:
        assert seen == [(failing, seen[0][1], False)]  # called once the lock is released
        assert str(seen[0][1]) == "cannot encode"
    with pytest.raises(errors.BatchEncodingError) as failed:
        bad.get(0)
    if not handler:
        assert "1 record(s) for t-0 could not be encoded into a batch (RuntimeError: cannot encode)" \
            in str(failed.value)
    assert tm.sequences.get(TP0, 0) == 0  # it kept no sequence: the next batch of t-0 starts at 0
    assert acc.used_memory < used and failing not in acc.incomplete_batches()
    assert acc.drain(leader, {1})[1][0].base_sequence == 0
    assert not other.done() and not good.done()


def test_at_most_max_in_flight_batches_per_partition() -> None:
    acc, _, clock = make(batch_size=100, max_in_flight=2)
    for _ in range(4):
        append(acc, value=b"x" * 90)
    clock.now += 1
    first = acc.drain(leader, {1})[1]
    second = acc.drain(leader, {1})[1]
    assert acc.drain(leader, {1}) == {}
    assert acc.ready(leader)[0] == set()
    assert [first[0].base_sequence, second[0].base_sequence] == [0, 1]
    acc.complete(first[0], 0, -1)
    third = acc.drain(leader, {1})[1][0]
    assert third.base_sequence == 2


def test_one_batch_in_flight_until_the_broker_has_state_for_the_producer() -> None:
    """The broker takes any sequence as a new producer's first batch: pipelining before one
    batch is acknowledged could let a later batch be written first."""
    acc, tm, clock = make(batch_size=100)
    tm.broker_state = set()
    for _ in range(3):
        append(acc, value=b"x" * 90)
    clock.now += 1
    first = acc.drain(leader, {1})[1][0]
    assert acc.drain(leader, {1}) == {}  # the second waits for the first's answer
    tm.broker_state.add(TP0)  # the TM records it when the first batch completes
    acc.complete(first, 0, -1)
    assert acc.drain(leader, {1})[1][0].base_sequence == 1
    assert acc.drain(leader, {1})[1][0].base_sequence == 2  # now pipelined


def test_split_halves_keep_the_sequence_range_and_resolve_the_original_futures() -> None:
    acc, _, clock = make(batch_size=1 << 20, compression_type="gzip")
    values = [b"value-%d-" % i + b"a" * 200 for i in range(5)]  # compressible
    futures = [append(acc, value=value)[0] for value in values]
    clock.now += 1
    big = acc.drain(leader, {1})[1][0]
    after, _ = append(acc, TP0, value=b"later")  # a later batch of the same partition
    later = acc.drain(leader, {1}, now=clock.now + 1)[1][0]  # sent too (linger passed)
    used = acc.used_memory
    first, second = acc.split_and_reenqueue(big)
    assert acc.used_memory == used  # the halves took over the reservation
    assert [(p.base_sequence, p.record_count) for p in (first, second, later)] == [(0, 2), (2, 3), (5, 1)]
    assert all(p.producer_id == 1000 and p.producer_epoch == 3 for p in (first, second))
    halves = [[r.value for r in DefaultRecordBatch(bytes(p.buffer))] for p in (first, second)]
    assert halves == [values[:2], values[2:]]
    assert {DefaultRecordBatch(bytes(p.buffer)).compression_type for p in (first, second)} == {1}
    # the halves go first, in order, each when it is the lowest outstanding sequence
    assert acc.drain(leader, {1})[1] == [first]
    assert acc.drain(leader, {1}) == {}
    acc.complete(first, 100, -1)
    assert not futures[0].done()  # done only when every half is
    assert acc.drain(leader, {1})[1] == [second]
    acc.complete(second, 200, -1)
    assert [f.get(0).offset for f in futures] == [100, 101, 200, 201, 202]
    acc.complete(later, 203, -1)
    assert after.get(0).offset == 203 and acc.used_memory == 0


def test_split_half_failing_fails_its_own_records_only() -> None:
    acc, _, clock = make(batch_size=1 << 20)
    futures = [append(acc, value=b"v%d" % i)[0] for i in range(4)]
    clock.now += 1
    first, second = acc.split_and_reenqueue(acc.drain(leader, {1})[1][0])
    acc.complete(first, 10, -1)
    acc.fail(second, errors.RecordTooLargeError("still too large"))
    assert [f.get(0).offset for f in futures[:2]] == [10, 11]
    for future in futures[2:]:
        with pytest.raises(errors.RecordTooLargeError):
            future.get(0)


def test_retry_goes_back_to_the_front_keeps_its_bytes_and_waits_for_lower_sequences() -> None:
    acc, _, clock = make(batch_size=100, retry_backoff_ms=50)
    for _ in range(3):
        append(acc, value=b"x" * 90)
    clock.now += 1
    b0 = acc.drain(leader, {1})[1][0]
    b1 = acc.drain(leader, {1})[1][0]
    original = bytes(b1.buffer)
    # both fail (e.g. the connection dropped); the later one reports first
    acc.reenqueue(b1)
    acc.reenqueue(b0)
    clock.now += 0.02
    assert acc.drain(leader, {1}) == {}  # still backing off
    clock.now += 0.1
    again = acc.drain(leader, {1})[1][0]
    assert again is b0
    # b1 may only go once b0 is no longer outstanding
    assert acc.drain(leader, {1}) == {}
    acc.complete(b0, 0, -1)
    resent = acc.drain(leader, {1})[1][0]
    assert resent is b1 and bytes(resent.buffer) == original and resent.base_sequence == 1
    acc.complete(b1, 1, -1)
    assert acc.drain(leader, {1})[1][0].base_sequence == 2


def test_future_resolves_with_offsets_and_runs_callbacks() -> None:
    acc, _, clock = make()
    f0, _ = append(acc, key=b"key", value=b"12345")
    f1, _ = append(acc, value=None)
    seen: list[Any] = []
    f1.add_callback(lambda md, exc: seen.append((md, exc)))
    clock.now += 1
    batch = acc.drain(leader, {1})[1][0]
    assert not f0.done()
    acc.complete(batch, 42, -1)
    md = f0.get(1)
    assert md == RecordMetadata("t", 0, 42, 1_700_000_000_000, 3, 5)
    assert f1.get(1).offset == 43 and f1.get(1).serialized_value_size == -1
    assert seen == [(f1.get(1), None)]
    late: list[Any] = []
    f0.add_callback(lambda md, exc: late.append(md.offset))
    assert late == [42]
    assert acc.used_memory == 0


def test_failed_batch_raises_its_error_from_every_future() -> None:
    acc, _, _ = make()
    future, _ = append(acc)
    acc.abort_undrained(errors.TransactionAbortedError("aborted"))
    with pytest.raises(errors.TransactionAbortedError):
        future.get(1)
    assert isinstance(future.exception(1), errors.TransactionAbortedError)
    assert not acc.has_incomplete()


def test_get_times_out_with_typed_error() -> None:
    acc, _, _ = make()
    future, _ = append(acc)
    with pytest.raises(errors.TimeoutError):
        future.get(0.01)


def test_record_too_large_is_rejected_before_queueing() -> None:
    acc, _, _ = make(max_request_size=1000, buffer_memory=5000)
    with pytest.raises(errors.RecordTooLargeError, match="max_request_size"):
        append(acc, value=b"x" * 1000)
    acc2, _, _ = make(max_request_size=100_000, buffer_memory=2000)
    with pytest.raises(errors.RecordTooLargeError, match="buffer_memory"):
        append(acc2, value=b"x" * 3000)
    assert acc.queued_batches == 0 and acc2.queued_batches == 0


def test_a_rejected_record_leaves_the_open_batch_as_it_was() -> None:
    acc, _, _ = make(max_request_size=1000, batch_size=900)
    first, _ = append(acc, value=b"x" * 10)
    with pytest.raises(errors.RecordTooLargeError):
        append(acc, value=b"x" * 1000)
    second, _ = append(acc, value=b"x" * 10)
    batch = acc.drain(leader, {1})[1][0]  # both in one batch: the rejected record closed nothing
    assert batch.record_count == 2 and acc.queued_batches == 0
    acc.complete(batch, 40, -1)
    assert (first.get(0).offset, second.get(0).offset) == (40, 41)


def test_full_buffer_memory_blocks_then_times_out() -> None:
    acc, _, _ = make(buffer_memory=1000, batch_size=10_000)
    append(acc, value=b"x" * 800)
    with pytest.raises(errors.TimeoutError, match="buffer_memory=1000 stayed exhausted for max_block_ms=50"):
        append(acc, value=b"x" * 300, max_block_s=0.05)


def test_a_batch_reserves_its_capacity_once_then_records_join_it_without_waiting() -> None:
    """The Java client's BufferPool rule: memory is taken per batch, so records that join an open
    batch never wait for memory, and the next batch waits until a finished one gives its share
    back."""
    acc, _, _ = make(buffer_memory=1024, batch_size=1024)
    futures = [append(acc, value=b"x" * 50, max_block_s=0)[0]]
    assert acc.used_memory == 1024  # the whole capacity, taken by the first record
    while acc.queued_batches == 1:
        try:
            futures.append(append(acc, value=b"x" * 50, max_block_s=0)[0])
        except errors.TimeoutError:
            break  # the batch is full: the next record needs a batch, and memory, of its own
    assert len(futures) > 10 and acc.queued_batches == 1 and acc.used_memory == 1024
    batch = acc.drain(leader, {1})[1][0]
    assert batch.record_count == len(futures)
    acc.complete(batch, 0, -1)
    assert acc.used_memory == 0 and all(f.get(0).offset == i for i, f in enumerate(futures))
    append(acc, value=b"x" * 50, max_block_s=0)  # room again
    assert acc.used_memory == 1024


def test_a_large_batch_reserves_memory_as_it_grows_and_gives_it_all_back() -> None:
    """Above 16 KiB a batch does not take all of batch_size when it starts: it reserves 16 KiB and
    doubles that as records join it, so an open batch holds about what it has written."""
    acc, _, _ = make(batch_size=262_144, buffer_memory=1 << 20)
    futures, reserved = [append(acc, value=b"x" * 1000, max_block_s=0)[0]], [acc.used_memory]
    while True:
        future = append(acc, value=b"x" * 1000, max_block_s=0)[0]
        if acc.queued_batches == 2:
            break  # batch_size reached: this record started the next batch
        futures.append(future)
        written = acc._batches[TP0][0].builder.size()
        assert written <= acc.used_memory <= max(16384, 2 * written)
        if acc.used_memory != reserved[-1]:
            reserved.append(acc.used_memory)
    assert reserved == [16384, 32768, 65536, 131072, 262144]
    assert acc.used_memory == 262144 + 16384
    batch = acc.drain(leader, {1})[1][0]  # the full one
    assert batch.record_count == len(futures) > 250
    acc.complete(batch, 0, -1)
    assert acc.used_memory == 16384 and [f.get(0).offset for f in futures] == list(range(len(futures)))


def test_a_partition_starts_its_next_batch_at_the_size_its_last_batch_grew_to() -> None:
    """A steady stream of large transactions: once a partition's batch grew to 128 KiB, its next
    batch starts there, without the growth steps (each one a slow-path append); a partition whose
    batch stayed small starts at 16 KiB again."""
    acc, _, _ = make(batch_size=262_144, buffer_memory=1 << 20)
    for _ in range(100):  # about 100 KB: 16 -> 32 -> 64 -> 128 KiB
        append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    append(acc, TP1, max_block_s=0)
    assert [acc._batches[tp][0].reserved for tp in (TP0, TP1)] == [131072, 16384]
    for batches in acc.drain(leader, {1, 2}).values():
        for batch in batches:
            acc.complete(batch, 0, -1)
    assert acc.used_memory == 0
    append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    append(acc, TP1, max_block_s=0)
    assert [acc._batches[tp][0].reserved for tp in (TP0, TP1)] == [131072, 16384]
    for _ in range(99):  # the same 100 records fit without growing
        append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    assert acc._batches[TP0][0].reserved == 131072 and acc.used_memory == 131072 + 16384


def test_a_partition_starts_small_unless_its_last_batch_size_is_at_most_half_of_what_is_free() -> None:
    """What a partition's last batch needed is a guess: it is taken only when it leaves at least as
    much free for the other partitions, and never waited for; otherwise the batch starts at 16 KiB."""
    acc, _, _ = make(batch_size=262_144, buffer_memory=250_000)
    for _ in range(100):
        append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    (batch,) = acc.drain(leader, {1})[1]
    acc.complete(batch, 0, -1)
    assert acc._start_reservation[TP0] == 131072
    for _ in range(40):  # TP1 grows to 64 KiB: about 184 KB stay free, less than twice 128 KiB
        append(acc, TP1, value=b"x" * 1000, max_block_s=0)
    assert acc.used_memory == 65536
    append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    assert acc._batches[TP0][0].reserved == 16384 and acc.used_memory == 65536 + 16384


def test_a_partition_starts_small_while_a_send_waits_for_memory() -> None:
    """A send waiting for memory (here an asyncio producer's, which counts itself and retries)
    gets the bytes that come free first: no partition starts at its larger size meanwhile."""
    acc, _, _ = make(batch_size=262_144, buffer_memory=1 << 20)
    for _ in range(100):
        append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    (batch,) = acc.drain(leader, {1})[1]
    acc.complete(batch, 0, -1)
    acc.count_memory_waiter(+1)
    append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    assert acc._batches[TP0][0].reserved == 16384
    acc.count_memory_waiter(-1)


def test_a_compressed_partition_starts_at_the_size_of_its_records_before_compression() -> None:
    """Reservations count records before compression (what the batch's buffer holds while it is
    open): the next batch's start is taken from that, not from the compressed bytes sent."""
    acc, _, _ = make(batch_size=262_144, buffer_memory=1 << 20, compression_type="gzip")
    for _ in range(100):
        append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    (batch,) = acc.drain(leader, {1})[1]
    assert batch.size < 16384  # 100 KB of one byte compress to almost nothing
    acc.complete(batch, 0, -1)
    append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    assert acc._batches[TP0][0].reserved == 131072


def test_many_partitions_hold_an_open_batch_within_buffer_memory() -> None:
    """An open batch costs 16 KiB until it grows: 64 partitions with a record each fit in 1 MiB of
    buffer_memory with 256 KiB batches (reserving all of batch_size, only 4 would)."""
    acc, _, _ = make(batch_size=262_144, buffer_memory=1 << 20)
    for p in range(64):
        append(acc, TopicPartition("many", p), max_block_s=0)  # max_block 0: none may wait
    assert acc.queued_batches == 64 and acc.used_memory == 64 * 16384


def test_a_batch_that_cannot_grow_is_closed_and_the_next_record_waits_for_memory() -> None:
    """The pool cannot spare what a growing batch needs: the batch is closed (sendable at once,
    before linger) and the record that did not fit waits for memory for a batch of its own, up
    to max_block, then fails without being queued; once the closed batch completes it goes in."""
    acc, _, _ = make(batch_size=262_144, buffer_memory=40_000, linger_ms=60_000)
    futures = []
    with pytest.raises(errors.TimeoutError, match="buffer_memory=40000 stayed exhausted"):
        while True:
            futures.append(append(acc, value=b"x" * 1000, max_block_s=0)[0])
    assert acc.queued_batches == 1 and acc.used_memory <= 40_000
    assert acc.ready(leader)[0] == {1}  # closed: ready although linger is a minute
    batch = acc.drain(leader, {1})[1][0]
    assert batch.record_count == len(futures) and batch.size <= 40_000
    acc.complete(batch, 0, -1)
    assert acc.used_memory == 0 and all(f.get(0).offset == i for i, f in enumerate(futures))
    append(acc, value=b"x" * 1000, max_block_s=0)  # room again (the last batch's 40 KB: not half)
    assert acc.used_memory == 16384


def test_a_batch_does_not_grow_for_a_record_it_could_never_take() -> None:
    """A record that would not fit even at batch_size starts the next batch at once: the open
    batch keeps its reservation instead of taking all of batch_size first."""
    acc, _, _ = make(batch_size=65_536, buffer_memory=1 << 20)
    while acc.used_memory < 32768:
        append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    append(acc, TP0, value=b"y" * 50_000, max_block_s=0)
    first, second = acc._batches[TP0]
    assert first.full and first.reserved == 32768 and second.record_count == 1
    assert acc.used_memory == 32768 + second.reserved < 32768 + 65_536


def test_a_batch_does_not_grow_while_another_append_waits_for_memory() -> None:
    """A thread waits for memory to start a batch: a growing batch must not take the bytes that
    come free before it; it is closed instead, and its record waits in turn."""
    acc, _, _ = make(batch_size=262_144, buffer_memory=40_000)
    while True:  # TP0's batch grows to 32 KiB (about 7 KB stay free) and fills it
        append(acc, TP0, value=b"x" * 1000, max_block_s=0)
        if acc._batches[TP0][0].builder.size() + 1100 > 32768:
            break
    assert acc.used_memory == 32768
    waiting = threading.Event()
    announce_memory_waits(acc, waiting.set)
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(append(acc, TP1, max_block_s=10)))
    thread.start()
    assert waiting.wait(5)
    used = acc.used_memory
    with pytest.raises(errors.TimeoutError):  # ~7 KB free, but TP1 waits: TP0 does not grow
        append(acc, TP0, value=b"x" * 1000, max_block_s=0)
    assert acc.used_memory == used and acc._batches[TP0][0].full
    batch = acc.drain(leader, {1})[1][0]  # TP0's closed batch completes: its memory goes to TP1
    acc.complete(batch, 0, -1)
    thread.join(5)
    assert not thread.is_alive() and results and acc.queued_batches == 1


def _complete(acc: RecordAccumulator, batch: Any, how: str) -> None:
    """The batch acknowledged alone, or as part of a Produce answer (what the Sender does)."""
    if how == "alone":
        acc.complete(batch, 0, -1)
    else:
        acc.finalize_all([(batch, 0, -1)])
        acc.finish_all([(batch, 0, -1)])


@pytest.mark.parametrize("how", ["alone", "answer"])
def test_blocked_append_proceeds_when_memory_is_released(how: str) -> None:
    woken = threading.Event()
    acc, _, _ = make(buffer_memory=1000, batch_size=10_000)
    acc._wakeup = woken.set  # the sender is woken so it can free memory
    first, _ = append(acc, value=b"x" * 800)
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(append(acc, value=b"y" * 300, max_block_s=10)))
    thread.start()
    assert woken.wait(5)
    # while someone waits for memory, every batch is ready regardless of linger
    assert acc.ready(leader)[0] == {1}
    batch = acc.drain(leader, {1})[1][0]
    _complete(acc, batch, how)
    thread.join(5)
    assert not thread.is_alive() and result and first.done()


def test_appends_that_waited_for_memory_keep_each_others_batches() -> None:
    """Two threads wait for memory to start the first batch of the same partition: the one that
    runs second must append to the queue the first created, not replace it."""
    acc, _, _ = make(buffer_memory=400, batch_size=1024)
    append(acc, TP0, value=b"x" * 300)  # nearly all of buffer_memory
    waiting = threading.Semaphore(0)
    announce_memory_waits(acc, waiting.release)
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(append(acc, TP1, max_block_s=10)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    assert waiting.acquire(timeout=5) and waiting.acquire(timeout=5)
    batch = acc.drain(leader, {1})[1][0]  # takes the lock: both threads are waiting by now
    acc.complete(batch, 0, -1)
    for thread in threads:
        thread.join(5)
    assert len(results) == 2
    drained = acc.drain(leader, {2})[2]
    assert sum(b.record_count for b in drained) == 2  # both records are queued


def test_expired_and_abort_incomplete() -> None:
    acc, _, clock = make(delivery_timeout_ms=1000)
    future, _ = append(acc)
    assert acc.expired_batches() == []
    clock.now += 1.5
    expired = acc.expired_batches()
    assert len(expired) == 1
    acc.fail(expired[0], errors.DeliveryTimeoutError("late"))
    with pytest.raises(errors.DeliveryTimeoutError):
        future.get(0)
    f2, _ = append(acc)
    acc.abort_incomplete(errors.ClosedError("closed"))
    with pytest.raises(errors.ClosedError):
        f2.get(0)


def test_flush_waits_for_completion_and_is_bounded() -> None:
    acc, _, _ = make()
    append(acc)
    acc.begin_flush()
    with pytest.raises(errors.TimeoutError):
        acc.await_flush_completion(0.01)
    assert not acc.flush_in_progress
    acc.begin_flush()
    batch = acc.drain(leader, {1})[1][0]
    acc.complete(batch, 0, -1)
    acc.await_flush_completion(1)


def test_closed_accumulator_refuses_appends() -> None:
    acc, _, _ = make()
    acc.close()
    with pytest.raises(errors.ClosedError):
        append(acc)


@pytest.mark.parametrize("how", ["alone", "answer"])
def test_memory_freed_fires_when_a_batch_gives_its_memory_back(how: str) -> None:
    """What a caller that must not block waits on: it counts itself as a memory waiter (so linger
    no longer holds batches back), registers, and tries again when the listener fires."""
    woken = threading.Event()
    acc, _, _ = make(buffer_memory=1000, batch_size=10_000)
    acc._wakeup = woken.set
    append(acc, value=b"x" * 800)
    with pytest.raises(errors.TimeoutError):
        append(acc, value=b"y" * 300, max_block_s=0)  # no wait at all
    fired = threading.Event()
    acc.memory_freed.add(fired.set)
    acc.count_memory_waiter(+1)
    assert woken.wait(1) and acc.ready(leader)[0] == {1}  # ready regardless of linger
    batch = acc.drain(leader, {1})[1][0]
    assert not fired.is_set()
    _complete(acc, batch, how)
    assert fired.is_set()
    acc.count_memory_waiter(-1)
    append(acc, value=b"y" * 300, max_block_s=0)  # room now
    assert acc.ready(leader, now=0.0)[0] == set()  # linger applies again: nobody waits


def test_memory_freed_fires_on_close() -> None:
    acc, _, _ = make()
    fired = threading.Event()
    acc.memory_freed.add(fired.set)
    acc.close()
    assert fired.is_set()


def test_batch_done_callbacks_fire_once_final_including_split_batches() -> None:
    acc, _, clock = make(batch_size=1 << 20)
    for i in range(4):
        append(acc, value=b"v%d" % i)
    assert [b.record_count for b in acc.incomplete_batches()] == [4]
    clock.now += 1
    big = acc.drain(leader, {1})[1][0]
    fired: list[str] = []
    big.add_done_callback(lambda: fired.append("big"))
    acc.split_and_reenqueue(big)
    acc.complete(acc.drain(leader, {1})[1][0], 10, -1)
    assert fired == []  # one half is not the whole batch
    acc.complete(acc.drain(leader, {1})[1][0], 12, -1)
    assert fired == ["big"]
    big.add_done_callback(lambda: fired.append("late"))  # already final: at once
    assert fired == ["big", "late"] and acc.incomplete_batches() == []


def test_a_flush_ended_without_waiting_leaves_no_flush_in_progress() -> None:
    acc, _, _ = make()
    append(acc)
    acc.begin_flush()
    assert acc.flush_in_progress and len(acc.incomplete_batches()) == 1
    acc.end_flush()
    assert not acc.flush_in_progress


def test_a_new_batch_wakes_the_sender_only_when_its_wait_would_outlast_the_linger() -> None:
    """A new batch wakes the Sender so that it learns when the batch is sendable - unless the Sender's
    wait ends before the batch's linger does anyway (it then looks at every batch): the second to sixth
    batch of a transaction over six partitions do not each cost a Sender iteration. A batch sendable at
    once (the open one that did not take the record is now full) still wakes it."""
    import time

    looks_by = [float("inf")]
    acc, _, _ = make(linger_ms=50, batch_size=300, sender_looks_by=lambda: looks_by[0])
    assert append(acc, TP0)[1] is True  # the Sender is not waiting (it may have looked already)
    looks_by[0] = time.monotonic() + 0.040  # waiting for TP0's batch's linger, 40 ms more
    assert append(acc, TP1)[1] is False  # sendable in 50 ms: the Sender looks again before that
    looks_by[0] = time.monotonic() + 1.0  # waiting up to a second (nothing lingered before)
    acc2, _, _ = make(linger_ms=50, batch_size=300, sender_looks_by=lambda: looks_by[0])
    assert append(acc2, TP0)[1] is True
    looks_by[0] = time.monotonic() + 1.0
    while acc2.queued_batches < 2:
        _future, wake = append(acc2, TP0, value=b"x" * 100)
    assert wake is True  # the append that started TP0's second batch: the first is sendable now
    acc3, _, _ = make(linger_ms=50, batch_size=300)  # without the Sender's view: every new batch wakes
    assert append(acc3, TP0)[1] is True and append(acc3, TP1)[1] is True


TP2 = TopicPartition("t", 2)
TP3 = TopicPartition("u", 0)  # no known leader
SCENARIO_LEADERS = {**LEADERS, TP2: 3}.get


def _scenario() -> tuple[RecordAccumulator, Clock]:
    """Partitions in every state ready() and drain() tell apart: a lingering batch of a node that has
    another partition's full batch (it goes along), a node that is not ready, a retry in its backoff,
    a partition without a leader."""
    acc, tm, clock = make(batch_size=300, linger_ms=50)
    tm.allowed |= {TP2, TP3}
    tm.broker_state |= {TP2, TP3}
    append(acc, TP0, value=b"x" * 200)
    append(acc, TP0, value=b"x" * 200)  # TP0's first batch is full: node 1 sendable at once
    append(acc, TP1)  # node 2: sendable after linger, but node 2 is not ready below
    append(acc, TP2)
    append(acc, TP3)  # no leader
    clock.now += 0.060  # every batch lingered long enough
    (retried,) = acc.drain(SCENARIO_LEADERS, {3})[3]
    acc.reenqueue(retried)  # TP2's batch is back, within its retry backoff
    append(acc, TP0)  # a third, lingering, batch on TP0 behind the two
    return acc, clock


def test_ready_and_drain_is_ready_then_drain_of_the_ready_nodes() -> None:
    acc, clock = _scenario()
    nodes, delay, unknown = acc.ready(SCENARIO_LEADERS, clock.now)
    expected = acc.drain(SCENARIO_LEADERS, {n for n in nodes if n != 2}, now=clock.now)
    assert nodes == {1, 2} and unknown and delay is not None and 0 < delay <= 0.1

    acc2, clock2 = _scenario()
    drained, delay2, unknown2, unready = acc2.ready_and_drain(SCENARIO_LEADERS, lambda node: node != 2,
                                                              clock2.now, False)
    assert (delay2, unknown2, unready) == (delay, unknown, {2})
    shape = {node: [(b.tp, b.record_count, b.base_sequence) for b in batches]
             for node, batches in drained.items()}
    assert shape == {node: [(b.tp, b.record_count, b.base_sequence) for b in batches]
                     for node, batches in expected.items()}
    assert shape == {1: [(TP0, 1, 0)]}  # one batch per partition per request
    assert acc2.ready_and_drain(SCENARIO_LEADERS, lambda node: True, clock2.now, True)[0].keys() == {1, 2}


def _state(acc: RecordAccumulator) -> tuple[Any, ...]:
    """What an append changes: the queues (batches and their record counts), memory, the incomplete."""
    return ({tp: [(id(b), b.record_count, b.full) for b in dq] for tp, dq in acc._batches.items()},
            acc.used_memory, len(acc._incomplete))


def test_try_new_batch_starts_the_batch_append_would_start() -> None:
    """The compiled send path hands a record that found no open batch to try_new_batch: the batch,
    its reservation, the record's future, the wake-up and the sticky partitioner's "full" must be
    append()'s, here after a drained batch and after a batch closed by a record it could not take."""
    looks_by = [float("inf")]
    acc, _, _ = make(batch_size=300, sender_looks_by=lambda: looks_by[0])
    ref, _, _ = make(batch_size=300, sender_looks_by=lambda: looks_by[0])
    for a in (acc, ref):  # a partition whose last batch was drained: nothing open
        append(a, TP0)
        a.drain(leader, {1})
    got = acc.try_new_batch(TP0, 1_700_000_000_000, b"k", b"v" * 10)
    want = ref.append(TP0, 1_700_000_000_000, b"k", b"v" * 10, [], 1.0)
    assert got is not None and got[1:] == (want[1], False)
    assert (got[0]._index, got[0]._timestamp, got[0]._key_size, got[0]._value_size) \
        == (want[0]._index, want[0]._timestamp, want[0]._key_size, want[0]._value_size)
    assert acc.used_memory == ref.used_memory and acc.queued_batches == ref.queued_batches == 1
    assert acc.try_new_batch(TP0, 1, None, b"v") is None  # now open: append()'s per-record case
    # a record as large as the batch gets: the new batch is full (the sticky partitioner moves on)
    got = acc.try_new_batch(TP1, 1_700_000_000_000, None, b"x" * 290)
    assert got is not None and got[1:] == (True, True)
    acc.complete(acc._batches[TP1][0], 0, -1)


def test_try_new_batch_leaves_every_other_case_to_append_and_changes_nothing() -> None:
    """None, with the queues and the memory as they were, for each case append() decides: a record
    too large (append raises RecordTooLargeError), memory to wait for, others waiting for memory,
    the accumulator closed."""
    acc, _, _ = make(buffer_memory=1000, batch_size=10_000)
    before = _state(acc)
    assert acc.try_new_batch(TP0, 1, None, b"x" * 2000) is None and _state(acc) == before
    append(acc, TP0, value=b"x" * 800)  # takes all 1000 bytes
    acc.drain(leader, {1})
    before = _state(acc)
    assert acc.try_new_batch(TP1, 1, None, b"x" * 10) is None and _state(acc) == before
    acc2, _, _ = make()
    acc2.count_memory_waiter(+1)
    assert acc2.try_new_batch(TP0, 1, None, b"x") is None and _state(acc2) == _state(make()[0])
    acc2.count_memory_waiter(-1)
    assert acc2.try_new_batch(TP0, 1, None, b"x") is not None
    acc2.close()
    before = _state(acc2)
    assert acc2.try_new_batch(TP1, 1, None, b"x") is None and _state(acc2) == before


def test_a_flush_waits_for_acknowledged_batches_until_their_futures_complete() -> None:
    """Between the two halves of a Produce answer's completion (the Sender sends a committing
    transaction's EndTxn in between) the batches are final but their futures are not done: a flush
    that starts then still waits for them, so a record's future is done when flush() returns."""
    acc, _, _ = make()
    future, _ = append(acc)
    batch = acc.drain(leader, {1})[1][0]
    outcome = [(batch, 0, -1)]
    acc.finalize_all(outcome)
    assert not acc.has_incomplete()  # the transaction may end
    assert acc.incomplete_batches() == [batch]
    acc.begin_flush()
    with pytest.raises(errors.TimeoutError):
        acc.await_flush_completion(0.05)
    assert not future.done()
    acc.finish_all(outcome)
    assert future.done() and acc.incomplete_batches() == []
    acc.begin_flush()
    acc.await_flush_completion(0)
