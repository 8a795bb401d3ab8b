"""Test matrix: every supported Python (3.10-3.13), both hot paths. ``make test-all`` runs it.

Sessions (``nox -l`` lists them; ``nox -s quick-3.13`` runs one):

- ``tests-3.X``: what ``make test`` runs, on Python 3.X: the whole suite on the compiled hot path,
  then the producer, consumer, batching and codec tiers (``tests/tiers.py`` ``PURE``) on the pure-Python
  path. Needs Java 17 for the Spark tests, as ``make test`` does.
- ``quick-3.X(kafka_python='newest'|'oldest')``: the ``PURE`` tiers on both paths, without PySpark, against
  the newest kafka-python the dependency allows or the oldest (``tests/tiers.py`` ``KAFKA_PYTHON_OLDEST``;
  that one also runs ``KAFKA_PYTHON_API``, the tiers that use most of kafka-python's message classes):
  what CI runs on the Python it does not run the whole suite on (``.ci/run``).

Each session builds the compiled extension for its Python in place (the files carry the ABI tag, so the
builds of several Pythons sit side by side) and refuses to run the compiled tiers on pure Python
(``TXNPRODUCER_REQUIRE_ACCEL``), so a failed build cannot pass as compiled. Extra pytest arguments go
after ``--``: ``nox -s quick-3.12 -- -x -k consumer``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).resolve().parent))  # nox loads this file by path
from tests.tiers import KAFKA_PYTHON_API, KAFKA_PYTHON_OLDEST, PARALLEL, PURE, WHOLE_SUITE_MARKERS

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
WORKERS = os.environ.get("WORKERS", "4")

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests"]
nox.options.error_on_missing_interpreters = True


def _run_tiers(session: nox.Session, whole_suite: bool, extra: tuple[str, ...] = ()) -> None:
    xdist = ["-q", "-n", WORKERS, *PARALLEL, *session.posargs]
    describe = ("import kafka; from txnproducer._internal import accel; "
                "print('hot path:', accel.describe(), '- kafka-python', kafka.__version__)")
    session.run("python", "-c", describe)
    compiled = {"TXNPRODUCER_REQUIRE_ACCEL": "1"}
    if whole_suite:
        session.run("pytest", *xdist, "-m", WHOLE_SUITE_MARKERS, env=compiled)
    else:
        session.run("pytest", *xdist, *PURE, *extra, env=compiled)
    session.run("pytest", *xdist, *PURE, env={"TXNPRODUCER_PURE_PYTHON": "1"})


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole suite on the compiled path, the PURE tiers on the pure-Python path."""
    session.install("-e", ".[dev,spark]")
    _run_tiers(session, whole_suite=True)


@nox.session(python=PYTHONS)
@nox.parametrize("kafka_python", ["newest", "oldest"])
def quick(session: nox.Session, kafka_python: str) -> None:
    """The PURE tiers (producer, consumer, batching, codecs) on both paths, without PySpark, against the
    newest or the oldest kafka-python the dependency allows."""
    session.install("-e", ".[dev]")
    if kafka_python == "oldest":
        session.install(f"kafka-python=={KAFKA_PYTHON_OLDEST}")
        _run_tiers(session, whole_suite=False, extra=KAFKA_PYTHON_API)
    else:
        _run_tiers(session, whole_suite=False)
