"""The compiled start of a batch (the accelerator's ``Appender.start``) held to its reference,
``RecordAccumulator.try_new_batch``: for every record the compiled send path hands it, the same answer
(the future, the wake-up, "full"), the same new batch slot by slot and the same accumulator state; and
None, with nothing changed, wherever try_new_batch answers None (append() decides those).

Each case runs on two accumulators made alike, one through each path; their fake clocks agree, so even
a batch's ``created`` must match.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_accumulator import TP0, TP1, append, leader, make
from txnproducer._internal.accel import SPEEDUPS
from txnproducer._internal.batching.accumulator import RecordAccumulator
from txnproducer._internal.batching.batch import ProducerBatch, RecordFuture
from txnproducer._internal.protocol.record_batch import BatchEncoder

pytestmark = pytest.mark.skipif(SPEEDUPS is None,
                                reason="the compiled extension is not built (pure-Python path)")

TS = 1_700_000_000_000
UNSET = object()
Scenario = Callable[[RecordAccumulator], None]


def _pair(scenario: Scenario | None = None, **settings: Any) -> tuple[RecordAccumulator, RecordAccumulator]:
    """(compiled, reference): made alike, the same scenario run on each."""
    pair = (make(**settings)[0], make(**settings)[0])
    assert pair[0].start_batch == pair[0].appender.start, "the compiled start is not enabled"
    for acc in pair:
        if scenario is not None:
            scenario(acc)
    return pair


def _batch(batch: ProducerBatch) -> dict[str, Any]:
    """Every slot; the builder by what it holds (its bytes once built are the encoders' own test)."""
    got = {name: getattr(batch, name, UNSET) for name in ProducerBatch.__slots__ if name != "builder"}
    builder = batch.builder
    got["builder"] = None if builder is None else (type(builder), builder.size())
    return got


def _future(future: RecordFuture) -> tuple[Any, ...]:
    return (future._index, future._timestamp, future._key_size, future._value_size, future._callbacks)


def _state(acc: RecordAccumulator) -> tuple[Any, ...]:
    """What a start changes: the queues and their batches, memory, the incomplete batches, the
    partitions' next reservations."""
    return ({tp: [_batch(b) for b in dq] for tp, dq in acc._batches.items()}, acc.used_memory,
            [(b.tp, b.reserved) for b in acc._incomplete], dict(acc._start_reservation))


def _same_start(compiled: RecordAccumulator, reference: RecordAccumulator, tp: Any, key: bytes | None,
                value: bytes | None) -> Any:
    got = compiled.start_batch(tp, TS, key, value)
    want = reference.try_new_batch(tp, TS, key, value)
    if want is None:
        assert got is None
    else:
        assert got is not None and got[1:] == want[1:]
        assert _future(got[0]) == _future(want[0])
        assert got[0]._batch is compiled._batches[tp][-1] and want[0]._batch is reference._batches[tp][-1]
    assert _state(compiled) == _state(reference)
    return got


def _drained(acc: RecordAccumulator) -> None:
    append(acc, TP0)
    acc.drain(leader, {1})


def _retried(acc: RecordAccumulator) -> None:
    """TP0's last batch is a sent one back for a retry (closed, in its queue): a new one goes behind it."""
    append(acc, TP0)
    (sent,) = acc.drain(leader, {1})[1]
    acc.reenqueue(sent)


def _grown(acc: RecordAccumulator) -> None:
    """TP0's last batch grew past its first reservation: the next one starts that large."""
    for _ in range(40):
        append(acc, TP0, value=b"g" * 1000)
    acc.drain(leader, {1})


@pytest.mark.parametrize("scenario", [None, _drained, _retried, _grown],
                         ids=["first-batch-ever", "after-a-drained-batch", "behind-a-retried-batch",
                              "after-a-grown-batch"])
def test_a_start_is_try_new_batchs(scenario: Scenario | None) -> None:
    compiled, reference = _pair(scenario, batch_size=100_000 if scenario is _grown else 1024)
    _same_start(compiled, reference, TP0, b"key", b"v" * 10)
    _same_start(compiled, reference, TP0, None, b"w")  # open now: None from both (append's case)
    _same_start(compiled, reference, TP1, None, None)


@pytest.mark.parametrize(("buffer_memory", "reserved"), [(2 * 65536, 65536), (2 * 65536 - 2, 16384)])
def test_a_grown_reservation_is_taken_while_at_most_half_of_what_is_free(buffer_memory: int,
                                                                       reserved: int) -> None:
    """The partition's grown reservation (65,536 here) starts its next batch only while it is at most
    half of the free memory; otherwise the batch starts at the first reservation and grows."""
    def grown_and_completed(acc: RecordAccumulator) -> None:
        for _ in range(40):
            append(acc, TP0, value=b"g" * 1000)
        (sent,) = acc.drain(leader, {1})[1]
        acc.complete(sent, 0, -1)  # its memory is free again
        assert acc._start_reservation[TP0] == 65536 and acc.used_memory == 0

    compiled, reference = _pair(grown_and_completed, batch_size=100_000, buffer_memory=buffer_memory)
    _same_start(compiled, reference, TP0, None, b"v")
    assert compiled._batches[TP0][-1].reserved == reserved


@given(key=st.one_of(st.none(), st.sampled_from([0, 1, 62, 63, 64, 65, 8191, 8192, 9000]).map(b"k".__mul__)),
       value=st.one_of(st.none(), st.sampled_from([0, 63, 64, 500, 1000, 1100, 5000]).map(b"v".__mul__)))
def test_sizes_at_every_varint_step_and_past_the_batch(key: bytes | None, value: bytes | None) -> None:
    """A record's size decides the reservation, "full", and past max_request_size the answer None."""
    compiled, reference = _pair(batch_size=1024, max_request_size=6000)
    _same_start(compiled, reference, TP0, key, value)


def test_memory_exhausted_waiters_and_closed_are_left_to_append() -> None:
    def full_memory(acc: RecordAccumulator) -> None:
        append(acc, TP0, value=b"x" * 800)  # takes the 1,000 bytes
        acc.drain(leader, {1})

    compiled, reference = _pair(full_memory, buffer_memory=1000, batch_size=10_000)
    assert _same_start(compiled, reference, TP1, None, b"x" * 10) is None

    compiled, reference = _pair()
    for acc in (compiled, reference):
        acc.count_memory_waiter(+1)
    assert _same_start(compiled, reference, TP0, None, b"x") is None
    for acc in (compiled, reference):
        acc.count_memory_waiter(-1)
        acc.close()
    assert _same_start(compiled, reference, TP0, None, b"x") is None


@pytest.mark.parametrize("looks_by", [float("inf"), 0.0, None], ids=["sender-waits", "sender-looks-now",
                                                                     "no-rule"])
def test_the_wake_up_rule(looks_by: float | None) -> None:
    """A first batch that may linger until the Sender looks anyway wakes nobody; a batch behind a full
    one (sendable once its backoff ends), or without the rule, always wakes the Sender."""
    settings: dict[str, Any] = {} if looks_by is None else {"sender_looks_by": lambda: looks_by}
    compiled, reference = _pair(**settings)
    got = _same_start(compiled, reference, TP0, None, b"v")
    assert got[1] is (looks_by != 0.0)  # inf: the Sender is not waiting in its poll
    compiled, reference = _pair(_retried, **settings)
    assert _same_start(compiled, reference, TP0, None, b"v")[1] is True


def test_a_batch_class_or_encoder_it_does_not_know_turns_the_compiled_start_off() -> None:
    """A ProducerBatch with another slot (its __init__ value unknown to the C code) or the pure-Python
    encoder: configure_start answers False and try_new_batch starts every batch."""
    assert SPEEDUPS is not None
    acc = make()[0]

    class Wider(ProducerBatch):
        __slots__ = ("extra",)

    args = (acc._start_reservation, acc._clock, float(acc._max_wait_s), acc.linger_s, 100, 61, 1000, 16384, 0,
            -1, b"\x00", __import__("collections").deque)
    wider = SPEEDUPS.Appender(acc, {}, SPEEDUPS.Mutex(), 1024, Wider, RecordFuture)
    assert wider.configure_start(*args, acc._encoder) is False
    pure = SPEEDUPS.Appender(acc, {}, SPEEDUPS.Mutex(), 1024, ProducerBatch, RecordFuture)
    assert pure.configure_start(*args, BatchEncoder) is False
    with pytest.raises(RuntimeError, match="configure_start"):
        pure.start(TP0, TS, None, b"v")
    assert make()[0].start_batch.__name__ == "start"  # this build: compiled


def test_append_starts_a_batch_through_the_compiled_start_as_its_own_code_would() -> None:
    """append() (a send that does not go through the compiled SendPath: a value serializer, a custom
    partitioner) starts a batch through the compiled start when it has no headers; the result is what
    its own Python code gives (here with the compiled start taken away), headers or not."""
    compiled, reference = _pair(_drained)
    reference._compiled_start = None
    calls: list[Any] = []
    start = compiled._compiled_start
    assert start is not None
    compiled._compiled_start = lambda *args: calls.append(args) or start(*args)
    for headers in ([], [("h", b"1")]):
        for tp in (TP0, TP1):
            got = compiled.append(tp, TS, b"k", b"v" * 5, headers, 1.0)
            want = reference.append(tp, TS, b"k", b"v" * 5, headers, 1.0)
            assert got[1] == want[1] and _future(got[0]) == _future(want[0])
            assert _state(compiled) == _state(reference)
        for acc in (compiled, reference):
            acc.drain(leader, {1, 2})
    assert [args[0] for args in calls] == [TP0, TP1]  # the records without headers only
