"""The HTTP endpoint example writes each order atomically: complete or absent, also when the client
hangs up mid-request (the handler is cancelled inside ``producer.transaction()``, which aborts).

The example sends 30 orders concurrently to its asyncio server - 24 valid, 3 invalid half-way
through (after three lines were sent), 3 from clients that hang up 2 ms after sending, while the
handler is still writing lines (25 ms of per-line work on the same event loop) - and reads both
topics with a read_committed consumer.
"""

from __future__ import annotations

import io

import pytest

from tests._support.examples import load_example


def test_every_order_is_complete_or_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    out = io.StringIO()
    ok = load_example("aio_atomic_endpoint").run_demo(out=out)
    text = out.getvalue()
    assert ok, text
    assert "24 valid orders answered [201], 3 invalid answered [400], 3 clients hung up" in text
    assert "sees 24 orders; line counts per order: [5]" in text
    assert "3 of the hung-up orders were aborted" in text
