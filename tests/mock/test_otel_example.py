"""examples/otel_tracing.py runs on the MockCluster and shows what docs/guide/observability.md says an
operator sees."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")

from tests._support.examples import load_example


def test_the_example_exports_spans_and_metrics_and_renders_the_traces(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    out = io.StringIO()
    ok = load_example("otel_tracing").run_demo(out=out)
    text = out.getvalue()
    assert ok, text
    # the console exporters' output
    assert "span ended: commit_transaction" in text and "span ended: EndTxn" in text
    assert "metric: txnproducer.transactions {'txnproducer.outcome': 'committed'} 1" in text
    assert "metric: txnproducer.transactions {'txnproducer.outcome': 'aborted'} 1" in text
    assert "metric: kafka.producer.records_sent  5" in text
    # the rendered trees
    trees = text.split("The traces:\n", 1)[1]
    assert "└─ transaction [internal" in trees and "records=5 outcome=committed" in trees
    assert "records=1 outcome=aborted abort_reason=application" in trees
    assert trees.count("process orders-") == 5
    assert "5 committed records consumed, each continuing its producer's trace: True" in text
