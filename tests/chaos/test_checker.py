"""The chaos checker on hand-made runs: a clean run passes, and each anomaly kind is detected.

Why: a chaos run that reports "0 anomalies" is only worth something if the checker is shown to count
each kind when it is there. Every test builds a ledger (what producers were told) and what a reader
saw, and asserts the exact counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from tests._support.txn_checker import KINDS, check
from tests._support.txn_ledger import Ledger, Outcome, RecordId, TxnEntry

T = "out"
BOUND = 4.0  # delivery_timeout_ms of the futures, in seconds


@attrs.frozen
class Seen:
    """A record as kafka-python's consumer returns it (the fields the checker reads)."""

    topic: str
    partition: int
    offset: int
    value: bytes | None
    headers: Sequence[tuple[str, bytes]] = ()


class Future:
    """Completes a callback at once, like a RecordFuture that already resolved."""

    def __init__(self, offset: int | None, partition: int = 0, error: BaseException | None = None) -> None:
        self.offset, self.partition, self.error = offset, partition, error

    def add_callback(self, fn: Any) -> None:
        if self.error is not None:
            fn(None, self.error)
        else:
            fn(attrs.make_class("Meta", ["partition", "offset"])(self.partition, self.offset), None)


def txn(ledger: Ledger, txn_no: int, offsets: Sequence[int | None], outcome: Outcome, producer: str = "w0",
        partition: int = 0, calm: bool = False) -> TxnEntry:
    """A transaction of ``len(offsets)`` records sent to ``partition``; each future reported its offset
    (None: the future failed)."""
    entry = ledger.begin(producer, txn_no, f"tx-{producer}", 1, calm, "commit")
    for offset in offsets:
        error = RuntimeError("delivery failed") if offset is None else None
        ledger.sent(entry, Future(offset, partition, error), T, partition, BOUND)
    ledger.end(entry, outcome, "test")
    return entry


def seen(*records: tuple[str, int, int, int], partition: int = 0) -> dict[str, dict[int, list[Seen]]]:
    """Records (producer, txn, index, offset) visible in one partition of ``T``."""
    return {T: {partition: [Seen(T, partition, offset, RecordId(p, t, i).encode())
                            for p, t, i, offset in records]}}


def anomalies(ledger: Ledger, visible: dict[str, dict[int, list[Seen]]], **kw: Any) -> dict[str, int]:
    return check(ledger, visible, slack_s=1.0, **kw).anomalies()


def test_a_clean_run_has_no_anomaly() -> None:
    ledger = Ledger()
    txn(ledger, 0, [0, 1], Outcome.COMMITTED)
    txn(ledger, 1, [2], Outcome.ABORTED)  # written, then aborted: invisible
    txn(ledger, 2, [4, 5], Outcome.UNKNOWN)  # unknown outcome, all visible
    txn(ledger, 3, [7], Outcome.UNKNOWN)  # unknown outcome, nothing visible
    txn(ledger, 4, [9], Outcome.COMMITTED, calm=True)
    ledger.error("w0", 1, "commit_transaction", RuntimeError("abortable"), calm=False)
    report = check(ledger, seen(("w0", 0, 0, 0), ("w0", 0, 1, 1), ("w0", 2, 0, 4), ("w0", 2, 1, 5),
                                ("w0", 4, 0, 9)), slack_s=1.0)
    assert report.ok, report.format()
    assert set(report.counts) == set(KINDS) and "anomalies: none" in report.format()


def test_lost_records_of_a_committed_transaction_and_the_tear() -> None:
    ledger = Ledger()
    txn(ledger, 0, [0, 1, 2], Outcome.COMMITTED)
    report = check(ledger, seen(("w0", 0, 0, 0), ("w0", 0, 2, 2)), slack_s=1.0)
    assert report.anomalies() == {"lost": 1, "torn": 1}
    assert report.involved == {("w0", 0)}  # the transaction whose story to tell
    assert "w0#0.1: committed" in report.format()


def test_a_committed_transaction_entirely_lost() -> None:
    ledger = Ledger()
    txn(ledger, 0, [0, 1], Outcome.COMMITTED)
    assert anomalies(ledger, {T: {0: []}}) == {"lost": 2}


def test_an_unknown_outcome_must_be_all_or_nothing() -> None:
    ledger = Ledger()
    txn(ledger, 0, [0, 1], Outcome.UNKNOWN)
    assert anomalies(ledger, seen(("w0", 0, 1, 1))) == {"torn": 1}


def test_aborted_but_visible() -> None:
    ledger = Ledger()
    txn(ledger, 0, [0, 1], Outcome.ABORTED)
    assert anomalies(ledger, seen(("w0", 0, 0, 0), ("w0", 0, 1, 1))) == {"aborted_visible": 2}


def test_duplicated_record() -> None:
    ledger = Ledger()
    txn(ledger, 0, [0], Outcome.COMMITTED)
    assert anomalies(ledger, seen(("w0", 0, 0, 0), ("w0", 0, 0, 1))) == {"duplicated": 1}


def test_out_of_order_within_and_across_transactions() -> None:
    ledger = Ledger()
    txn(ledger, 0, [1, 0], Outcome.COMMITTED)  # index 1 before index 0
    txn(ledger, 1, [2], Outcome.COMMITTED, producer="w1")  # another producer interleaves: fine
    txn(ledger, 2, [4], Outcome.COMMITTED)
    txn(ledger, 3, [3], Outcome.COMMITTED)  # transaction 3 before transaction 2
    visible = seen(("w0", 0, 1, 0), ("w0", 0, 0, 1), ("w1", 1, 0, 2), ("w0", 3, 0, 3), ("w0", 2, 0, 4))
    assert anomalies(ledger, visible) == {"out_of_order": 2}


def test_future_reported_another_offset() -> None:
    ledger = Ledger()
    txn(ledger, 0, [5], Outcome.COMMITTED)
    assert anomalies(ledger, seen(("w0", 0, 0, 0))) == {"future_mismatch": 1}


def test_future_failed_but_the_record_is_visible() -> None:
    ledger = Ledger()
    txn(ledger, 0, [None], Outcome.COMMITTED)  # and a committed transaction must not have a failed future
    assert anomalies(ledger, seen(("w0", 0, 0, 0))) == {"future_mismatch": 2}


def test_record_in_another_partition_than_asked() -> None:
    ledger = Ledger()
    txn(ledger, 0, [0], Outcome.COMMITTED, partition=1)
    assert anomalies(ledger, seen(("w0", 0, 0, 0), partition=0)) == {"future_mismatch": 1}


def test_calls_and_futures_past_their_bound() -> None:
    ledger = Ledger()
    entry = txn(ledger, 0, [0, 1, 2], Outcome.COMMITTED)
    entry.records[1].resolved_at = entry.records[1].sent_at + BOUND + 1.5  # resolved late
    entry.records[2].resolved_at = None  # never resolved
    with ledger.timed("w0", 0, "commit_transaction", bound_s=0.0):
        pass  # within the slack
    ledger.calls.append(attrs.evolve(ledger.calls[0], elapsed_s=2.5, bound_s=1.0))  # 0.5 s over the slack
    visible = seen(("w0", 0, 0, 0), ("w0", 0, 1, 1), ("w0", 0, 2, 2))
    assert anomalies(ledger, visible) == {"blocked": 3}


def test_records_of_a_killed_process_are_judged_by_the_outcome_alone() -> None:
    """An orphaned record (its process was killed -9 before the future resolved) has no bound and no
    future to compare; whether it may be visible is still its transaction's outcome."""
    ledger = Ledger()
    unknown = txn(ledger, 0, [0, 1], Outcome.UNKNOWN)
    aborted = txn(ledger, 1, [2], Outcome.ABORTED)
    for entry in (unknown, aborted):
        for record in entry.records:
            record.acked, record.resolved_at, record.orphaned = None, None, True
    assert anomalies(ledger, seen(("w0", 0, 0, 0), ("w0", 0, 1, 1))) == {}
    assert anomalies(ledger, seen(("w0", 0, 0, 0), ("w0", 1, 0, 2))) == {"torn": 1, "aborted_visible": 1}
    unknown.records[0].partition = 1  # sent to partition 1, visible in 0: still wrong
    assert anomalies(ledger, seen(("w0", 0, 0, 0), ("w0", 0, 1, 1))) == {"future_mismatch": 1}


def test_records_no_ledger_accounts_for() -> None:
    ledger = Ledger()
    txn(ledger, 0, [0], Outcome.COMMITTED)
    visible = seen(("w0", 0, 0, 0), ("w0", 7, 0, 1), ("w0", 0, 3, 2))  # unknown transaction, index
    visible[T][0].append(Seen(T, 0, 3, b"not a workload value"))
    assert anomalies(ledger, visible) == {"unknown_record": 3}


def test_a_zombie_whose_commit_returned() -> None:
    ledger = Ledger()
    entry = txn(ledger, 0, [0], Outcome.COMMITTED)
    entry.fenced_before_commit = True
    assert anomalies(ledger, seen(("w0", 0, 0, 0))) == {"zombie_committed": 1}


def test_errors_while_calm_and_unexpected_errors() -> None:
    ledger = Ledger()
    ledger.error("w0", 3, "commit_transaction", RuntimeError("x"), calm=True)
    ledger.error("w1", None, "run", RuntimeError("y"), calm=False, expected=False)
    ledger.error("w1", None, "run", RuntimeError("z"), calm=True, expected=False)
    assert anomalies(ledger, {}) == {"failed_while_calm": 2, "unexpected_error": 2}


def test_hanging_transaction() -> None:
    assert anomalies(Ledger(), {}, hanging=["out-0 (LSO 3 < HW 5)"]) == {"hanging": 1}


# -- the exactly-once pipeline (eos_pipeline.origin_transform's outputs) ------------------------------------


def eos_in(*offsets: int) -> dict[int, list[Seen]]:
    return {0: [Seen("in", 0, o, b"v%d" % o) for o in offsets]}


def eos_out(*origins: tuple[int, int] | bytes) -> dict[int, list[Seen]]:
    """Outputs in partition 0: (input partition, input offset) as the transform writes them, or raw bytes."""
    out = []
    for offset, origin in enumerate(origins):
        if isinstance(origin, bytes):
            out.append(Seen("eos", 0, offset, origin))
            continue
        p, o = origin
        out.append(Seen("eos", 0, offset, b"%d:%d:v%d" % (p, o, o), [("origin", b"%d:%d" % (p, o))]))
    return {0: out}


@pytest.mark.parametrize(("inputs", "outputs", "expected"), [
    (eos_in(0, 1, 2), eos_out((0, 0), (0, 1), (0, 2)), {}),
    (eos_in(0, 1, 2), eos_out((0, 0), (0, 2)), {"eos_lost": 1}),
    (eos_in(0, 1), eos_out((0, 0), (0, 1), (0, 0)), {"eos_duplicated": 1}),
    (eos_in(0, 1), eos_out((0, 1), (0, 0)), {"eos_out_of_order": 1}),
    (eos_in(0), eos_out((0, 0), (0, 5), (1, 0), b"0:0:other", b"garbage"), {"eos_unknown": 4}),
], ids=["clean", "lost", "duplicated", "out_of_order", "unknown"])
def test_pipeline_output_each_input_exactly_once_in_order(
        inputs: dict[int, list[Seen]], outputs: dict[int, list[Seen]], expected: dict[str, int]) -> None:
    report = check(Ledger(), {}, slack_s=1.0, eos_input=inputs, eos_output=outputs,
                   eos_transactional_ids=["grp-p0"])
    assert report.anomalies() == expected
    assert report.involved_ids == ({"grp-p0"} if expected else set())
