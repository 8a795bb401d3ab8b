"""The hand-written exactly-once loop of the producer guide ("Your own loop") runs as documented.

``examples/exactly_once_loop.py`` runs the guide's loop function in two instances of one group on a
MockCluster, with one commit refused (ILLEGAL_GENERATION: the abort-and-rewind path), and checks with a
read_committed reader that every input was written exactly once. The guide shows that very function:
this test fails when the two drift apart.
"""

from __future__ import annotations

import inspect
import io
from pathlib import Path

import pytest

from tests._support.examples import load_example

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "producer.md"


def test_the_guide_shows_the_examples_loop() -> None:
    loop = inspect.getsource(load_example("exactly_once_loop").upper_case_loop)
    assert loop in GUIDE.read_text(), "the guide shows another loop than examples/exactly_once_loop.py's"


def test_the_loop_writes_each_input_once_through_an_abort(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    out = io.StringIO()
    ok = load_example("exactly_once_loop").run_demo(inputs=1200, out=out)
    text = out.getvalue()
    assert ok, text
    assert "aborted transactions: 1" in text
    assert "sees 1200 outputs for 1200 inputs: 0 missing, 0 duplicated" in text
