"""One chaos producer in a process of its own, so that the real-broker tier can kill it -9.

    python -m tests.chaos.producer_process --bootstrap HOST:PORT,... --name w0 --transactional-id chaos-w0 \\
        --journal /tmp/w0.jsonl --seed 123 --deadline <time.monotonic()> --topics '{"t": [6, 1.0]}' \\
        --settings '{"request_timeout_ms": 15000}' --calm-transactions 5

Runs the CI chaos tier's :class:`~tests._support.chaos_workload.ProducerWorker` (the same transactions,
the same error handling) with a :class:`~tests._support.txn_journal.JournalLedger`, so everything it was
told is on disk when it dies. A restarted process of the same logical producer continues the journal at
the next transaction number (record ids stay unique) with a new producer instance, whose
``init_transactions()`` fences what the killed one left open. The line ``calm`` on stdin (or stdin
closing) starts the calm phase: a few more transactions, which must not fail, then a clean exit.

:class:`ProducerProcess` is the parent's handle on one logical producer: start, kill -9 (remembering the
pid and when, for :func:`~tests._support.txn_journal.replay`), start again, calm, wait.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from tests._support.chaos_workload import ProducerWorker, RunControl, WorkloadConfig
from tests._support.txn_journal import JournalLedger, resume_point

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ProducerProcess", "main"]


class ProducerProcess:
    """The parent's side of one logical producer (``name``, ``transactional_id``); its journal and its
    processes' output are files in ``workdir``."""

    def __init__(self, name: str, transactional_id: str, bootstrap: str, workdir: Path,
                 topics: Mapping[str, tuple[int, float]], settings: Mapping[str, Any], calm_transactions: int,
                 deadline: float, rng: random.Random) -> None:
        self.name = name
        self.transactional_id = transactional_id
        self.journal = workdir / f"{name}.journal.jsonl"
        self._log_path = workdir / f"{name}.out"
        self._args = ["--bootstrap", bootstrap, "--name", name, "--transactional-id", transactional_id,
                      "--journal", str(self.journal), "--deadline", repr(deadline),
                      "--topics", json.dumps({t: list(spec) for t, spec in topics.items()}),
                      "--settings", json.dumps(dict(settings)), "--calm-transactions", str(calm_transactions)]
        self._rng = rng
        self.process: subprocess.Popen[bytes] | None = None
        self.kills: dict[int, float] = {}  # pid -> time.monotonic() of its kill -9
        self.starts = 0

    def start(self) -> None:
        assert not self.alive, f"{self.name} is running"
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, PYTHONPATH=path)
        with open(self._log_path, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.chaos.producer_process", *self._args,
                 "--seed", str(self._rng.randrange(2**32))],
                stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> float:
        """kill -9; returns when it is gone (time.monotonic() of the kill)."""
        assert self.process is not None
        at = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self.kills[self.process.pid] = at
        return at

    def calm(self) -> None:
        """Tell the process the faults stopped (it runs its calm transactions and exits)."""
        if not self.alive:
            return
        stdin: IO[bytes] | None = self.process.stdin if self.process is not None else None
        if stdin is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                stdin.write(b"calm\n")
                stdin.flush()
                stdin.close()

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None when it is still running after ``timeout``."""
        if self.process is None:
            return None
        try:
            return self.process.wait(max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def output_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no output)"


def _watch_stdin(control: RunControl) -> None:
    for line in sys.stdin:
        if line.strip() == "calm":
            break
    control.calm.set()  # also when the parent went away: finish rather than run on alone


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--journal", required=True, type=Path)
    parser.add_argument("--seed", required=True, type=int)
    parser.add_argument("--deadline", required=True, type=float, help="time.monotonic() to give up at")
    parser.add_argument("--topics", required=True, help="JSON: topic -> [partitions, weight]")
    parser.add_argument("--settings", default="{}", help="JSON: producer settings")
    parser.add_argument("--calm-transactions", type=int, default=5)
    args = parser.parse_args(argv)

    next_txn, instances = resume_point(args.journal)
    ledger = JournalLedger(args.journal)
    ledger.process_started(os.getpid())
    topics = {topic: (int(spec[0]), float(spec[1])) for topic, spec in json.loads(args.topics).items()}
    config = WorkloadConfig(args.bootstrap, topics, calm_transactions=args.calm_transactions,
                            producer=json.loads(args.settings))
    control = RunControl(deadline=args.deadline)
    threading.Thread(target=_watch_stdin, args=(control,), name="stdin", daemon=True).start()
    worker = ProducerWorker(args.name, args.transactional_id, config, ledger, random.Random(args.seed),
                            control, first_txn=next_txn, instances=instances)
    worker.run()  # on this thread: the process is the worker
    ledger.process_exited()
    return 0


if __name__ == "__main__":
    sys.exit(main())
