"""What transactional producers did and were told: the ledger a chaos checker judges a run by.

Why a ledger apart from the producers: after a run the checker compares what a read_committed reader
sees with what each application was *told* (a commit returned, an abort returned, a record's future
reported an offset, a call came back within its bound). The ledger holds only those observations, in
terms of the public API, so the same checker judges a run against MockCluster or against a real
cluster (``tests/_support/txn_checker.py``).

Every record's value names its producer, transaction and index (:class:`RecordId`), which is what lets
the checker tell lost, duplicated, torn and reordered transactions apart. A transaction's outcome is
what the application may rely on:

* ``COMMITTED``: ``commit_transaction()`` returned - every record visible exactly once;
* ``ABORTED``: ``abort_transaction()`` returned, or the transaction failed before a commit was asked
  for, or the commit failed with an ``AbortableError`` (the library's word that it cannot commit), or
  the instance was fenced by a successor before it asked to commit - nothing visible;
* ``UNKNOWN``: the commit was asked for and did not return (it kept timing out, or failed fatally:
  the coordinator may have committed before its answer was lost) - all or nothing.
"""

from __future__ import annotations

import enum
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import attrs

__all__ = ["CallTiming", "ErrorEvent", "Ledger", "Outcome", "RecordId", "SentRecord", "TxnEntry"]

_VALUE = re.compile(rb"^([A-Za-z0-9_.-]+)/(\d+)/(\d+)$")


@attrs.frozen(order=True)
class RecordId:
    """(producer, transaction number, index in the transaction): encoded as a record's value."""

    producer: str
    txn: int
    index: int

    def encode(self) -> bytes:
        return f"{self.producer}/{self.txn}/{self.index}".encode()

    @classmethod
    def decode(cls, value: bytes | None) -> RecordId | None:
        """The id a value encodes, or None for a value no workload producer wrote."""
        match = _VALUE.match(value or b"")
        if match is None:
            return None
        return cls(match[1].decode(), int(match[2]), int(match[3]))

    def __str__(self) -> str:
        return f"{self.producer}#{self.txn}.{self.index}"


class Outcome(enum.Enum):
    OPEN = "open"  # still running; none is left once the workload has stopped
    COMMITTED = "committed"
    ABORTED = "aborted"
    UNKNOWN = "unknown"


@attrs.define
class SentRecord:
    """One ``send()`` that returned a future, and what the future said."""

    topic: str
    partition: int | None  # the partition asked for; None when the partitioner chose
    sent_at: float  # time.monotonic() when send() returned
    bound_s: float  # the future must resolve within this (delivery_timeout_ms)
    acked: tuple[int, int] | None = None  # (partition, offset) a successful future reported
    error: str | None = None  # repr of a failed future's exception
    resolved_at: float | None = None
    # the application's process was killed (-9) before the future resolved: it reported nothing, and no
    # bound applies; the transaction's outcome still decides whether the record may be visible
    orphaned: bool = False


@attrs.define
class TxnEntry:
    """One transaction of one logical producer (``producer`` survives instance replacements)."""

    producer: str
    txn: int
    transactional_id: str
    instance: int  # which instance of the producer ran it (a new one after every fatal error)
    calm: bool  # begun after the faults stopped: it must not fail at all
    intent: str = "commit"  # "commit" or "abort": what the application meant to do
    records: list[SentRecord] = attrs.field(factory=list)
    outcome: Outcome = Outcome.OPEN
    reason: str = ""
    fenced_before_commit: bool = False  # a successor's init_transactions() returned before the commit
    began_at: float = attrs.field(factory=time.monotonic)
    ended_at: float | None = None
    start_pos: int | None = None  # request-log positions (see Ledger.position), for the story
    end_pos: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.producer, self.txn


@attrs.frozen
class CallTiming:
    """A blocking producer call, how long it took, and the bound its documentation gives."""

    producer: str
    txn: int | None
    call: str
    elapsed_s: float
    bound_s: float
    error: str | None


@attrs.frozen
class ErrorEvent:
    """An exception an application saw; ``expected`` is False for what the docs/guide/errors.md table
    does not let a correct application see (the checker counts those)."""

    producer: str
    txn: int | None
    call: str
    error: str
    calm: bool
    expected: bool


class Ledger:
    """Thread-safe record of transactions, call timings and errors.

    ``position`` (optional) returns a point in the cluster's request log (MockCluster:
    ``cluster.requests.next_seq``); transactions remember where they began and ended so that a failure
    report can show the requests around them.
    """

    def __init__(self, position: Callable[[], int] | None = None) -> None:
        self._lock = threading.Lock()
        self._position = position
        self._txns: dict[tuple[str, int], TxnEntry] = {}
        self.calls: list[CallTiming] = []
        self.errors: list[ErrorEvent] = []

    def position(self) -> int | None:
        return None if self._position is None else self._position()

    # -- written by the workload --------------------------------------------------------------------

    def begin(self, producer: str, txn: int, transactional_id: str, instance: int, calm: bool,
              intent: str) -> TxnEntry:
        entry = TxnEntry(producer, txn, transactional_id, instance, calm, intent, start_pos=self.position())
        with self._lock:
            self._txns[entry.key] = entry
        return entry

    def sent(self, entry: TxnEntry, future: Any, topic: str, partition: int | None, bound_s: float) -> None:
        """Record a send() that returned ``future``; its callback fills in what the future reports."""
        record = SentRecord(topic, partition, time.monotonic(), bound_s)
        with self._lock:
            entry.records.append(record)

        def on_done(metadata: Any, exc: BaseException | None) -> None:
            record.resolved_at = time.monotonic()
            if exc is not None:
                record.error = repr(exc)
            else:
                record.acked = (metadata.partition, metadata.offset)

        future.add_callback(on_done)

    def end(self, entry: TxnEntry, outcome: Outcome, reason: str) -> None:
        with self._lock:
            entry.outcome = outcome
            entry.reason = reason
            entry.ended_at = time.monotonic()
            entry.end_pos = self.position()

    def timed(self, producer: str, txn: int | None, call: str, bound_s: float) -> _Timer:
        """``with ledger.timed(...)``: time one call (also when it raises)."""
        return _Timer(self, producer, txn, call, bound_s)

    def error(self, producer: str, txn: int | None, call: str, exc: BaseException, calm: bool,
              expected: bool = True) -> None:
        with self._lock:
            self.errors.append(ErrorEvent(producer, txn, call, repr(exc), calm, expected))

    def add(self, entry: TxnEntry) -> None:
        """Take a transaction observed elsewhere (another process's journal, ``txn_journal.py``)."""
        with self._lock:
            self._txns[entry.key] = entry

    # -- read by the checker -------------------------------------------------------------------------

    def transactions(self) -> list[TxnEntry]:
        with self._lock:
            return list(self._txns.values())

    def get(self, producer: str, txn: int) -> TxnEntry | None:
        with self._lock:
            return self._txns.get((producer, txn))

    def counts(self) -> dict[str, int]:
        """Transactions per outcome (and in total)."""
        out = {o.value: 0 for o in Outcome}
        for entry in self.transactions():
            out[entry.outcome.value] += 1
        out["total"] = sum(out.values())
        return out


class _Timer:
    def __init__(self, ledger: Ledger, producer: str, txn: int | None, call: str, bound_s: float) -> None:
        self._ledger, self._producer, self._txn = ledger, producer, txn
        self._call, self._bound = call, bound_s
        self._start = 0.0

    def __enter__(self) -> _Timer:
        self._start = time.monotonic()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        timing = CallTiming(self._producer, self._txn, self._call, time.monotonic() - self._start,
                            self._bound, None if exc is None else repr(exc))
        with self._ledger._lock:
            self._ledger.calls.append(timing)


def iter_records(entries: list[TxnEntry]) -> Iterator[tuple[RecordId, TxnEntry, SentRecord]]:
    """Every sent record with its id and transaction."""
    for entry in entries:
        for index, record in enumerate(entry.records):
            yield RecordId(entry.producer, entry.txn, index), entry, record
