"""The chaos checker catches bugs planted in the library (see ``planted_bugs.py``).

Why: the chaos run's "0 anomalies" means something only if the same run, with the library broken in a
realistic way, reports anomalies. Each case is a short run (two producers, no pipeline, a few seconds of
the faults that make the bug show) with the bug planted; the checker must flag it. Whether a short run
gives the bug its chance depends on thread timing: a dropped retry needs a retriable answer to a Produce
of a transaction that then commits, and the chaos aborts about one transaction in ten for other reasons
(or leaves its outcome unknown), which takes the damage with it. So a run is repeated, at most
``ATTEMPTS`` times, until the checker flags the bug; a checker that misses it fails every attempt.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.planted_bugs import FIRED, PLANTED
from tests.chaos.run import ChaosSettings, run_chaos

# what the checker flags for each bug (a run may flag more): a dropped batch shows as records missing
# from a committed transaction (lost, torn) or as a future that reported no place (future_mismatch)
FLAGGED = {
    "wrong_epoch": ("failed_while_calm",),
    "end_txn_early": ("lost",),
    "drop_retry": ("lost", "torn", "future_mismatch"),
}
ATTEMPTS = 5


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_checker_flags_a_planted_bug(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bug = PLANTED[name]
    settings = ChaosSettings(seed=20261124, transactions=200, seconds=4.0, max_seconds=30.0, producers=2,
                             processors=0, kinds=bug.kinds, calm_transactions=3)
    bug.plant(monkeypatch)
    fired = 0
    for _attempt in range(ATTEMPTS):
        FIRED.pop(name, None)
        result = run_chaos(settings, story_dir=tmp_path)
        print(f"{name}: fired {FIRED.get(name, 0)} times; {result.summary()}")
        fired += FIRED.get(name, 0)
        if FIRED.get(name, 0) and any(result.report.counts[kind] > 0 for kind in FLAGGED[name]):
            break
    assert fired > 0, f"the planted bug never did its damage in {ATTEMPTS} runs"
    assert any(result.report.counts[kind] > 0 for kind in FLAGGED[name]), result.failure_text()
