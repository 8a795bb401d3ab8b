"""The chaos checker catches bugs planted in the library (see ``planted_bugs.py``).

Why: the chaos run's "0 anomalies" means something only if the same run, with the library broken in a
realistic way, reports anomalies. Each case is a short run (two producers, no pipeline, a few seconds of
the faults that make the bug show) with the bug planted; the checker must flag it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.planted_bugs import PLANTED
from tests.chaos.run import ChaosSettings, run_chaos

# what the checker flags for each bug (a run may flag more)
FLAGGED = {
    "wrong_epoch": "failed_while_calm",
    "end_txn_early": "lost",
    "drop_retry": "lost",
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_checker_flags_a_planted_bug(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bug = PLANTED[name]
    settings = ChaosSettings(seed=20261124, transactions=200, seconds=4.0, max_seconds=30.0, producers=2,
                             processors=0, kinds=bug.kinds, calm_transactions=3)
    bug.plant(monkeypatch)
    result = run_chaos(settings, story_dir=tmp_path)
    print(f"{name}: {result.summary()}")
    assert result.report.counts[FLAGGED[name]] > 0, result.failure_text()
