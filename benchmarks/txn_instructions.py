"""Instructions per transaction of our client, counted by valgrind: what a change costs, without noise.

    python benchmarks/txn_instructions.py [--shape 1|10|10x6] [--aio] [--bootstrap HOST:PORT]
        [--tree LABEL=DIR ...] [--transactions N]

Why beside ``txn_cpu.py``: on a shared 2-CPU machine the CPU time of one run of small transactions moves
20-30 % from run to run, so a change worth 2-5 % needs many alternated rounds before it shows. The
instructions the client executes barely move: valgrind's ``callgrind`` counts them (user space only - the
kernel's side of a system call is not in it; ``txn_cpu.py`` shows what fewer system calls save). This runs
``txn_cpu.py`` under callgrind twice, with ``--transactions`` and with ten times as many, and divides the
difference by the transactions between them: start-up, imports, ``init_transactions()`` and the warm-up cancel
out. Without ``--bootstrap`` the broker is a MockCluster in another process, which valgrind does not follow
(its instructions are not counted). Under valgrind the client runs about 50x slower, so ``linger_ms`` is 1 s
here (``txn_cpu.py --linger-ms``): a transaction's records still go out together, with its commit, as at
native speed with 5 ms. ``--tree LABEL=DIR`` (repeatable) counts another source tree's client (``PYTHONPATH``,
its compiled extension built in place), for before and after in one command.

Prints one JSON object per tree. Needs ``valgrind`` on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TXN_CPU = ROOT / "benchmarks" / "txn_cpu.py"
LINGER_MS = 1000
_COLLECTED = re.compile(r"^==\d+== Collected : (\d+)\s*$", re.MULTILINE)


def collected(valgrind_output: str) -> int:
    """The instructions callgrind reports for the traced process (its ``Collected`` line)."""
    found = _COLLECTED.findall(valgrind_output)
    if len(found) != 1:
        raise ValueError(f"expected one callgrind 'Collected' line, found {len(found)}")
    return int(found[0])


def per_transaction(fewer: int, more: int, transactions: int) -> int:
    """Instructions of one transaction from two counts ``transactions`` apart."""
    if transactions <= 0 or more <= fewer:
        raise ValueError(f"the longer run must count more instructions ({fewer} then {more})")
    return (more - fewer) // transactions


def count(tree: Path | None, args: argparse.Namespace, transactions: int) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, str(TXN_CPU),
               "--shape", args.shape, "--transactions", str(transactions), "--warmup-transactions",
               str(args.warmup_transactions), "--linger-ms", str(LINGER_MS)]
    if args.aio:
        command.append("--aio")
    if args.bootstrap:
        command += ["--bootstrap", args.bootstrap]
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"txn_cpu.py under valgrind failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return collected(done.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="a running Kafka; default: a standalone MockCluster subprocess")
    parser.add_argument("--shape", choices=("1", "10", "10x6"), default="1")
    parser.add_argument("--aio", action="store_true", help="AsyncTransactionalProducer, not the sync one")
    parser.add_argument("--transactions", type=int, default=100,
                        help="the shorter run's transactions (the longer one runs ten times as many)")
    parser.add_argument("--warmup-transactions", type=int, default=100)
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR",
                        help="count another source tree's client (repeatable; default: this one)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("txn_instructions.py needs valgrind on PATH")
    trees: list[tuple[str, Path | None]] = [("this", None)] if not args.tree else []
    for spec in args.tree:
        label, _, directory = spec.partition("=")
        if not label or not directory:
            raise SystemExit(f"--tree takes LABEL=DIR, got {spec!r}")
        trees.append((label, Path(directory).resolve()))
    longer = 10 * args.transactions
    for label, tree in trees:
        instructions = per_transaction(count(tree, args, args.transactions), count(tree, args, longer),
                                       longer - args.transactions)
        print(json.dumps({"tree": label, "shape": args.shape, "aio": args.aio,
                          "instructions_per_txn": instructions}), flush=True)


if __name__ == "__main__":
    main()
