"""The asyncio consume-transform-produce example (aiokafka consumer + AsyncTransactionalProducer)
passes its own exactly-once check on the mock, with a worker process SIGKILLed mid-transaction.

The example runs two worker processes in one group, kills one with SIGKILL after its outputs were
sent and its offsets added to the transaction (no commit, no abort), starts it again under the same
transactional id, and verifies with a read_committed consumer that each input was transformed and
written exactly once, while a read_uncommitted consumer also sees the killed transaction's records.
"""

from __future__ import annotations

import io
import re

import pytest

from tests._support.examples import load_example

pytest.importorskip("aiokafka")  # a test dependency ([dev]); the library never imports it

@pytest.mark.parametrize("transaction_version", [1, 2], ids=["tv1", "tv2"])
def test_example_reports_each_input_exactly_once_after_a_kill(monkeypatch: pytest.MonkeyPatch,
                                                              transaction_version: int) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    out = io.StringIO()
    example = load_example("aio_consume_transform_produce")
    ok = example.run_demo(inputs=900, transaction_version=transaction_version, out=out)
    text = out.getvalue()
    assert ok, text
    assert "Killed alpha (SIGKILL) mid-transaction" in text
    assert "sees 900 outputs for 900 inputs: 0 missing, 0 duplicated, 0 not transformed" in text
    leftovers = re.search(r"a read_uncommitted consumer sees (\d+)", text)
    assert leftovers is not None and int(leftovers.group(1)) > 900, text  # the kill left records behind
