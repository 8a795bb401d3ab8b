"""Suite-wide hygiene, the order of a parallel run, and the fixtures several tiers share.

Some code under test (the CLI, ``txnproducer perf``) configures process-global logging as an
application would; resetting structlog after each test keeps one test's configuration from
changing what another test's log capture sees.

``make test`` runs the suite in parallel (pytest-xdist, ``--dist loadscope``: a module's tests, or a
class's, go to one worker together, so a module fixture is built once). The scheduler hands the
modules out in collection order, so tests marked ``slow`` (a minute or more of Spark or chaos each)
are moved to the front: each of their modules starts at once on a worker of its own instead of
ending the run alone (one per worker, then a quick module per worker, then the slow ones left:
see ``pytest_collection_modifyitems``). Tests marked ``timing`` (a wall-clock bound: the asyncio
loop's lag) go to the end, when those JVMs and the pure-Python session beside this one (Makefile)
are done and the machine is quietest.

Hypothesis runs without its per-example deadline (200 ms by default): on two CPUs shared by eight
workers a thread is paused for 250 ms or more about six times a minute (measured during ``make test``),
and an example caught by one fails its test as "unreliable test timings". What a property test asserts
is its property; time bounds live in benchmarks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import settings

settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def _scope(item: pytest.Item) -> str:
    """The unit ``--dist loadscope`` hands to one worker: the module, or the class (xdist's split)."""
    return item.nodeid.rsplit("::", 1)[0]


def _bound_s(unit: list[pytest.Item]) -> float:
    """The longest ``timeout`` a unit's tests declare: how long its authors expect it may take."""
    bounds = [float(m.args[0]) for item in unit for m in item.iter_markers("timeout") if m.args]
    return max(bounds, default=0.0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first, timing tests last (a stable sort: the rest keep their order); in a parallel
    run, the slow units longest-bounded first, one per worker, then a quick unit per worker, then each
    slow unit left followed by a quick one.

    Why the quick ones between: xdist gives a worker a unit more whenever its pending tests drop to two
    (a worker runs a test only once it knows the next, so a worker given a one-test module asks at
    once), and the next unit waits behind the one running. With the slow units all in front, a
    worker running one slow module took the next slow module too while other workers were free: the
    Spark source's 150 s of tests started at 253 s, behind a Spark restart scenario on the same
    worker, and ended the run alone. A quick unit after each slow one is what such a worker takes.
    """
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None,
                                 item.get_closest_marker("timing") is not None))
    workers = getattr(config, "workerinput", {}).get("workercount", 0)
    if workers < 2:
        return
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(_scope(item), []).append(item)
    slow = [u for u in units.values() if any(i.get_closest_marker("slow") for i in u)]
    quick = [u for u in units.values() if not any(i.get_closest_marker("slow") for i in u)]
    slow.sort(key=_bound_s, reverse=True)
    ordered = slow[:workers] + quick[:workers]
    rest = iter(quick[workers:])
    for unit in slow[workers:]:
        ordered += [unit, next(rest, [])]
    ordered += list(rest)
    items[:] = [item for unit in ordered for item in unit]


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Spark standalone cluster (a master, two workers) for the whole session: the cluster tier
    (tests/cluster) and its real-broker variant (tests/broker) share it, one at a time."""
    from tests._support.spark_standalone import StandaloneCluster

    cluster = StandaloneCluster(Path(tmp_path_factory.mktemp("standalone"))).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def telemetry() -> Iterator[Any]:
    """OpenTelemetry SDK providers with in-memory exporters, given to the code under test (never installed
    globally): tests/_support/otel.py. Skips the test without the SDK (the dev extra has it)."""
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")
    from tests._support.otel import captured

    with captured() as found:
        yield found
