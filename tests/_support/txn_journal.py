"""A ledger that survives kill -9: producers in other processes write what they were told to a journal.

Why: the real-broker chaos tier kills producer processes with SIGKILL, as an operator or the kernel's
OOM killer would. What such a process was told up to the moment it died is what the checker must judge
it by, so :class:`JournalLedger` appends every observation of the :class:`~tests._support.txn_ledger.Ledger`
to a file as it happens - one JSON line, one ``os.write`` on an ``O_APPEND`` descriptor, so a line is in
the kernel's page cache before the call that produced it returns, and a kill -9 loses nothing written.
The parent process then :func:`replay` s the journal into its own ledger, deciding what the kill means
for whatever was still open:

* a transaction whose ``commit_transaction()`` had been called (and had not returned) is UNKNOWN: the
  coordinator may have committed it;
* any other open transaction is ABORTED: no commit was asked for, so the successor instance's
  ``init_transactions()`` (or the transaction timeout) aborts it;
* a record whose future had not resolved is *orphaned*: no bound applies and no future can be compared.

A record's future is journaled from its callback, which runs on the Sender thread when the batch is
acknowledged - before the Sender sends the EndTxn that makes it visible - so an acknowledged and
committed record's offset is always in the journal.

The journal also says which transaction number and instance the next process of the same logical
producer starts at (:func:`resume_point`), so record ids stay unique across the kills.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from tests._support.txn_ledger import CallTiming, ErrorEvent, Ledger, Outcome, SentRecord, TxnEntry

__all__ = ["JournalLedger", "replay", "resume_point"]


class JournalLedger(Ledger):
    """A :class:`Ledger` that also appends each observation to ``path`` (see the module docstring).

    Every process writing the journal opens it with :meth:`process_started` and, when it ends normally,
    :meth:`process_exited`: a segment without that last line is a process that was killed.
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._write_lock = threading.Lock()

    def _write(self, **event: Any) -> None:
        line = (json.dumps(event, separators=(",", ":")) + "\n").encode()
        with self._write_lock:
            os.write(self._fd, line)

    def process_started(self, pid: int) -> None:
        self._write(e="process", pid=pid, t=time.monotonic())

    def process_exited(self) -> None:
        self._write(e="exit", t=time.monotonic())
        os.close(self._fd)

    def begin(self, producer: str, txn: int, transactional_id: str, instance: int, calm: bool,
              intent: str) -> TxnEntry:
        entry = super().begin(producer, txn, transactional_id, instance, calm, intent)
        self._write(e="begin", txn=txn, tid=transactional_id, instance=instance, calm=calm, intent=intent,
                    t=entry.began_at)
        return entry

    def sent(self, entry: TxnEntry, future: Any, topic: str, partition: int | None, bound_s: float) -> None:
        super().sent(entry, future, topic, partition, bound_s)
        index = len(entry.records) - 1
        self._write(e="sent", txn=entry.txn, i=index, topic=topic, partition=partition, bound=bound_s,
                    t=entry.records[index].sent_at)

        def journal(metadata: Any, exc: BaseException | None) -> None:
            if exc is not None:
                self._write(e="failed", txn=entry.txn, i=index, error=repr(exc), t=time.monotonic())
            else:
                self._write(e="acked", txn=entry.txn, i=index, p=metadata.partition, o=metadata.offset,
                            t=time.monotonic())

        future.add_callback(journal)

    def end(self, entry: TxnEntry, outcome: Outcome, reason: str) -> None:
        super().end(entry, outcome, reason)
        self._write(e="end", txn=entry.txn, outcome=outcome.value, reason=reason, t=entry.ended_at)

    def timed(self, producer: str, txn: int | None, call: str, bound_s: float) -> Any:
        return _JournalTimer(self, producer, txn, call, bound_s)

    def error(self, producer: str, txn: int | None, call: str, exc: BaseException, calm: bool,
              expected: bool = True) -> None:
        super().error(producer, txn, call, exc, calm, expected)
        self._write(e="error", txn=txn, call=call, error=repr(exc), calm=calm, expected=expected)


class _JournalTimer:
    """Times one call like ``Ledger.timed`` and journals its start (a commit that started and never
    returned is what makes a killed transaction UNKNOWN) and its timing."""

    def __init__(self, ledger: JournalLedger, producer: str, txn: int | None, call: str,
                 bound_s: float) -> None:
        self._ledger, self._producer, self._txn = ledger, producer, txn
        self._call, self._bound = call, bound_s
        self._start = 0.0

    def __enter__(self) -> _JournalTimer:
        self._start = time.monotonic()
        self._ledger._write(e="call_start", txn=self._txn, call=self._call, t=self._start)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        elapsed = time.monotonic() - self._start
        timing = CallTiming(self._producer, self._txn, self._call, elapsed, self._bound,
                            None if exc is None else repr(exc))
        self._ledger.calls.append(timing)  # list.append is atomic; the worker is the only caller
        self._ledger._write(e="call", txn=timing.txn, call=timing.call, elapsed=timing.elapsed_s,
                            bound=timing.bound_s, error=timing.error)


def _events(path: Path) -> list[dict[str, Any]]:
    """The journal's events; a line cut short (it cannot be with one write per line, but a full disk
    could do it) is left out."""
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def resume_point(path: Path) -> tuple[int, int]:
    """(next transaction number, instances so far) for the next process writing ``path``."""
    begins = [e for e in _events(path) if e["e"] == "begin"] if path.exists() else []
    if not begins:
        return 0, 0
    return max(e["txn"] for e in begins) + 1, max(e["instance"] for e in begins)


def replay(path: Path, ledger: Ledger, producer: str, killed: dict[int, float]) -> list[str]:
    """Add the journal of logical producer ``producer`` to ``ledger``; ``killed`` maps the pid of each
    process killed -9 to the time.monotonic() of the kill. Open transactions and unresolved futures of a
    process without an exit line are settled as the module docstring says. Returns what is wrong with the
    journal itself: a process that neither exited nor was killed (it crashed), or one that exited with a
    transaction still open."""
    problems: list[str] = []
    entries: dict[int, TxnEntry] = {}
    segment: list[TxnEntry] = []  # the current process's transactions
    commit_started: set[int] = set()
    pid: int | None = None

    def close_segment(exited: bool) -> None:
        open_txns = [e for e in segment if e.outcome is Outcome.OPEN]
        if exited and open_txns:
            problems.append(f"{producer} (pid {pid}) exited with transaction {open_txns[0].txn} open")
        if not exited:
            if pid not in killed:
                problems.append(f"{producer} (pid {pid}) ended without an exit line and was not killed")
            died = killed.get(pid or -1, time.monotonic())
            for entry in segment:
                _settle(entry, died, entry.txn in commit_started)
        segment.clear()

    for event in _events(path):
        kind, txn = event["e"], event.get("txn")
        if kind == "process":
            if pid is not None:
                close_segment(exited=False)
            pid = event["pid"]
        elif kind == "exit":
            close_segment(exited=True)
            pid = None
        elif kind == "begin":
            entry = TxnEntry(producer, txn, event["tid"], event["instance"], event["calm"], event["intent"],
                             began_at=event["t"])
            entries[txn] = entry
            segment.append(entry)
        elif kind == "sent":
            entries[txn].records.append(SentRecord(event["topic"], event["partition"], event["t"],
                                                   event["bound"]))
        elif kind in ("acked", "failed"):
            record = entries[txn].records[event["i"]]
            record.resolved_at = event["t"]
            if kind == "acked":
                record.acked = (event["p"], event["o"])
            else:
                record.error = event["error"]
        elif kind == "end":
            entry = entries[txn]
            entry.outcome, entry.reason = Outcome(event["outcome"]), event["reason"]
            entry.ended_at = event["t"]
        elif kind == "call_start" and event["call"] == "commit_transaction" and txn is not None:
            commit_started.add(txn)
        elif kind == "call":
            ledger.calls.append(CallTiming(producer, txn, event["call"], event["elapsed"], event["bound"],
                                           event["error"]))
        elif kind == "error":
            ledger.errors.append(ErrorEvent(producer, txn, event["call"], event["error"], event["calm"],
                                            event["expected"]))
    if pid is not None:
        close_segment(exited=False)
    for entry in entries.values():
        ledger.add(entry)
    return problems


def _settle(entry: TxnEntry, died: float, commit_asked: bool) -> None:
    """A transaction of a process killed -9 (see the module docstring)."""
    for record in entry.records:
        if record.resolved_at is None:
            record.orphaned = True
    if entry.outcome is Outcome.OPEN:
        entry.outcome = Outcome.UNKNOWN if commit_asked else Outcome.ABORTED
        entry.reason = ("process killed -9 during commit_transaction()" if commit_asked
                        else "process killed -9 before a commit was asked for")
        entry.ended_at = died
