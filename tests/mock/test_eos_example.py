"""The consume-transform-produce example (what ``make demo`` runs) passes its own check on the mock.

The example kills one processor mid-transaction and verifies, with a read_committed consumer, that
each input was transformed and written exactly once; this test runs it against the embedded
MockCluster in both transaction versions and checks that it says so.
"""

from __future__ import annotations

import io

import pytest

from tests._support.examples import load_example


@pytest.mark.parametrize("transaction_version", [1, 2], ids=["tv1", "tv2"])
def test_example_reports_each_input_exactly_once(monkeypatch: pytest.MonkeyPatch,
                                                 transaction_version: int) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    out = io.StringIO()
    example = load_example("consume_transform_produce")
    ok = example.run_demo(inputs=900, transaction_version=transaction_version, out=out)
    text = out.getvalue()
    assert ok, text
    assert "Killed alpha mid-transaction" in text
    assert "sees 900 outputs for 900 inputs: 0 missing, 0 duplicated, 0 not transformed" in text
