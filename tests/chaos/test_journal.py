"""The journal of producer processes: what a process killed -9 was told comes back, and the kill is settled.

Why: the real-broker chaos tier judges killed producers by their journals; a journal that lost lines, or a
replay that called a transaction whose commit was under way ABORTED (the coordinator may have committed
it), would make that tier report anomalies that are not there, or miss ones that are.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from tests._support.txn_journal import JournalLedger, replay, resume_point
from tests._support.txn_ledger import Ledger, Outcome

ROOT = Path(__file__).resolve().parents[2]


class Future:
    """Resolves its callbacks when told to (``resolve``), like a RecordFuture on the Sender thread."""

    def __init__(self) -> None:
        self.callbacks: list[Any] = []

    def add_callback(self, fn: Any) -> None:
        self.callbacks.append(fn)

    def resolve(self, partition: int, offset: int) -> None:
        meta = attrs.make_class("Meta", ["partition", "offset"])(partition, offset)
        for fn in self.callbacks:
            fn(meta, None)


def test_a_process_that_exits_is_replayed_as_it_was_told(tmp_path: Path) -> None:
    path = tmp_path / "w0.jsonl"
    ledger = JournalLedger(path)
    ledger.process_started(1)
    entry = ledger.begin("w0", 0, "tx-w0", 1, False, "commit")
    future = Future()
    ledger.sent(entry, future, "out", 2, 45.0)
    future.resolve(2, 17)
    with ledger.timed("w0", 0, "commit_transaction", 30.0):
        pass
    ledger.end(entry, Outcome.COMMITTED, "commit_transaction() returned")
    ledger.error("w0", 0, "flush", TimeoutError("short wait"), calm=False)
    ledger.process_exited()

    replayed = Ledger()
    assert replay(path, replayed, "w0", killed={}) == []
    [txn] = replayed.transactions()
    assert (txn.transactional_id, txn.outcome, txn.reason) == ("tx-w0", Outcome.COMMITTED,
                                                               "commit_transaction() returned")
    [record] = txn.records
    assert (record.topic, record.partition, record.acked, record.orphaned) == ("out", 2, (2, 17), False)
    assert [(c.call, c.bound_s, c.error) for c in replayed.calls] == [("commit_transaction", 30.0, None)]
    assert [(e.call, e.calm) for e in replayed.errors] == [("flush", False)]
    assert resume_point(path) == (1, 1)


CHILD = """
import os, signal, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tests._support.txn_journal import JournalLedger
from tests._support.txn_ledger import Outcome

class Never:
    def add_callback(self, fn):
        pass

class Now:
    def add_callback(self, fn):
        fn(type("M", (), {{"partition": 0, "offset": 5}})(), None)

ledger = JournalLedger(Path({path!r}))
ledger.process_started(os.getpid())
done = ledger.begin("w0", 0, "tx-w0", 1, False, "commit")
ledger.sent(done, Now(), "out", 0, 45.0)
ledger.end(done, Outcome.COMMITTED, "commit_transaction() returned")
committing = ledger.begin("w0", 1, "tx-w0", 1, False, "commit")
ledger.sent(committing, Now(), "out", 0, 45.0)
ledger.sent(committing, Never(), "out", 1, 45.0)
timer = ledger.timed("w0", 1, "commit_transaction", 30.0)
timer.__enter__()  # commit asked for, never returns
sending = ledger.begin("w1", 2, "tx-w0", 2, False, "commit")  # a second instance of the process
ledger.sent(sending, Never(), "out", 0, 45.0)
print("ready", flush=True)
signal.pause()  # until the test kills this process
"""


def test_a_process_killed_mid_commit_leaves_an_unknown_and_an_aborted_transaction(tmp_path: Path) -> None:
    path = tmp_path / "w0.jsonl"
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(ROOT), path=str(path))],
                             stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    killed_at = time.monotonic()
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)

    replayed = Ledger()
    assert replay(path, replayed, "w0", killed={child.pid: killed_at}) == []
    done, committing, sending = sorted(replayed.transactions(), key=lambda e: e.txn)
    assert done.outcome is Outcome.COMMITTED and done.records[0].acked == (0, 5)
    # its commit was under way: the coordinator may have committed it
    assert committing.outcome is Outcome.UNKNOWN and committing.ended_at == killed_at
    assert [(r.acked, r.orphaned) for r in committing.records] == [((0, 5), False), (None, True)]
    # no commit was asked for: the successor's init_transactions() aborts it
    assert sending.outcome is Outcome.ABORTED and sending.records[0].orphaned
    assert resume_point(path) == (3, 2)


def test_a_process_that_neither_exited_nor_was_killed_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "w0.jsonl"
    ledger = JournalLedger(path)
    ledger.process_started(4242)
    ledger.begin("w0", 0, "tx-w0", 1, False, "commit")
    ledger.process_started(4343)  # the next process: 4242 ended without an exit line
    ledger.begin("w0", 1, "tx-w0", 2, False, "abort")
    ledger.process_exited()
    problems = replay(path, Ledger(), "w0", killed={})
    assert problems == ["w0 (pid 4242) ended without an exit line and was not killed",
                        "w0 (pid 4343) exited with transaction 1 open"]
