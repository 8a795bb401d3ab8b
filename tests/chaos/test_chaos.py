"""The chaos run CI makes: >= 2,000 transactions under a seeded random fault schedule, 0 anomalies.

Longer runs by hand: ``CHAOS_SEED=123 CHAOS_SECONDS=300 CHAOS_MAX_SECONDS=400 pytest -m chaos -s`` (every
variable: ``run.ChaosSettings.from_env``). A failure prints the seed, the anomaly counts with examples, and
the request story of the transactions involved. ``CHAOS_PLANT=<name>`` plants one of the bugs of
``planted_bugs.py`` for the run, to see what the checker flags (the test then fails).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.chaos.planted_bugs import PLANTED
from tests.chaos.run import ChaosSettings, run_chaos

SETTINGS = ChaosSettings.from_env()


@pytest.mark.slow
@pytest.mark.timeout(SETTINGS.max_seconds + 240)
def test_chaos_run_has_no_anomaly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plant = os.environ.get("CHAOS_PLANT")
    if plant:
        PLANTED[plant].plant(monkeypatch)
    result = run_chaos(SETTINGS, story_dir=tmp_path)
    print(result.summary())
    if not result.ok:
        pytest.fail(result.failure_text(), pytrace=False)
    assert result.transactions["total"] >= SETTINGS.transactions
