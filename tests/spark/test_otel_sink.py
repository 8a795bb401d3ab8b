"""The txnkafka sink traced, without Spark: task attempts' spans (executors) and the batch's commit span
(driver) share the batch id, and the driver's span links to the tasks' through the commit messages.

The task and driver halves run in this process (tests/_support/sink_protocol.py), as they would in two
Python workers; the spans are exported by the SDK's in-memory exporter.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (the [spark] extra)")
pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")

import attrs

from tests._support.otel import Telemetry
from tests._support.sink_protocol import TOPIC, assert_settled, attempt, committer
from txnproducer import errors
from txnproducer.otel import instrument, names
from txnproducer.spark.sink.options import SinkOptions
from txnproducer.testing import MockCluster

ROWS = [b"v%d" % i for i in range(4)]
BATCH, QUERY = 7, "query-1"


def _by(spans: list[Any], **attributes: Any) -> list[Any]:
    return [s for s in spans if all((s.attributes or {}).get(k) == v for k, v in attributes.items())]


def test_task_and_batch_spans_share_the_batch_id_and_are_linked(
        cluster: MockCluster, options: SinkOptions, telemetry: Telemetry) -> None:
    instrument(tracer_provider=telemetry.tracer_provider, metrics=False)  # the fixture uninstruments
    first = attempt(options, BATCH, 0, 0, ROWS[:2], query=QUERY)
    orphan = attempt(options, BATCH, 1, 0, [b"lost"], query=QUERY)  # failed after it prepared: not reported
    second = attempt(options, BATCH, 1, 1, ROWS[2:], query=QUERY)
    with committer(options) as driver:
        driver.commit([first, second], BATCH)
    assert_settled(cluster, TOPIC, ROWS)

    spans = telemetry.spans()
    tasks = telemetry.spans(names.SPAN_SPARK_TASK)
    assert len(tasks) == 3
    for task in tasks:
        a = dict(task.attributes or {})
        assert (a[names.SPARK_BATCH_ID], a[names.SPARK_QUERY_ID]) == (BATCH, QUERY)
        assert a[names.SPARK_PREFIX] == options.transactional_id_prefix and a[names.SPARK_SUPERSEDED] is False
        # the attempt's transaction is a child of its task span, prepared and left to the driver
        (txn,) = telemetry.children(task, names.SPAN_TRANSACTION)
        assert (txn.attributes or {})[names.OUTCOME] == names.OUTCOME_PREPARED
        assert (txn.attributes or {})[names.TRANSACTIONAL_ID] == a[names.TRANSACTIONAL_ID]
    # each commit message carries its task span's context
    reported = {m.trace_context for m in (first, second)}
    reporters = _by(tasks, **{names.SPARK_ATTEMPT: 0, names.SPARK_PARTITION_ID: 0}) + _by(
        tasks, **{names.SPARK_ATTEMPT: 1})
    assert reported == {f"00-{c.trace_id:032x}-{c.span_id:016x}-{int(c.trace_flags):02x}"
                        for c in (t.context for t in reporters)}

    (batch,) = _by(telemetry.spans(names.SPAN_SPARK_BATCH), **{names.SPARK_BATCH_ID: BATCH})
    b = dict(batch.attributes or {})
    assert (b[names.SPARK_QUERY_ID], b[names.SPARK_DECISION]) == (QUERY, "commit")
    assert b[names.SPARK_TRANSACTION_COUNT] == 2
    linked = {link.context.span_id: dict(link.attributes or {}) for link in batch.links}
    reported_tasks = [t for t in tasks if (t.attributes or {})[names.TRANSACTIONAL_ID] in
                      (first.state.transactional_id, second.state.transactional_id)]  # type: ignore[union-attr]
    assert set(linked) == {t.context.span_id for t in reported_tasks}
    who = sorted((v[names.SPARK_PARTITION_ID], v[names.SPARK_ATTEMPT]) for v in linked.values())
    assert who == [(0, 0), (1, 1)]
    # the driver's work is inside its span: the two completions, then the fenced orphan
    completions = telemetry.children(batch, names.SPAN_COMPLETE)
    assert len(completions) == 2 and all(s.status.is_unset for s in completions)
    assert {(s.attributes or {})[names.TRANSACTIONAL_ID] for s in completions} == {
        first.state.transactional_id, second.state.transactional_id}  # type: ignore[union-attr]
    (fence,) = telemetry.children(batch, names.SPAN_SPARK_FENCE)
    assert (fence.attributes or {})[names.SPARK_FENCED_COUNT] == 1
    (fenced_init,) = telemetry.children(fence, names.SPAN_INIT)
    assert orphan.state is not None
    assert (fenced_init.attributes or {})[names.TRANSACTIONAL_ID] == orphan.state.transactional_id
    assert batch.context.trace_id not in {t.context.trace_id for t in tasks}  # linked, not one trace
    assert len(spans) == len(set(s.context.span_id for s in spans))


_PROVIDED: dict[str, Any] = {}


def _providers() -> tuple[Any, Any]:
    """What the sink option otel.providers names in the test below (one per Python worker in Spark)."""
    return _PROVIDED["tracer"], None


def test_the_providers_option_traces_without_instrument(cluster: MockCluster, options: SinkOptions,
                                                        telemetry: Telemetry) -> None:
    _PROVIDED["tracer"] = telemetry.tracer_provider
    traced = attrs.evolve(options, otel_providers=f"{__name__}:_providers")
    message = attempt(traced, BATCH, 0, 0, ROWS, query=QUERY)
    with committer(traced) as driver:
        driver.abort([message], BATCH)
    (task,) = telemetry.spans(names.SPAN_SPARK_TASK)
    (batch,) = telemetry.spans(names.SPAN_SPARK_BATCH)
    assert (batch.attributes or {})[names.SPARK_DECISION] == "abort"
    assert [link.context.span_id for link in batch.links] == [task.context.span_id]
    assert telemetry.children(task, names.SPAN_TRANSACTION)  # the sink's producers got the providers
    (completion,) = telemetry.children(batch, names.SPAN_COMPLETE)
    assert (completion.attributes or {}).get(names.PREPARED_PRODUCER_ID) is not None


def test_the_providers_option_is_checked_on_the_driver() -> None:
    base = {"kafka.bootstrap.servers": "127.0.0.1:9", "topic": TOPIC}
    for bad in ("no-colon", "no.such.module:fn", f"{__name__}:_PROVIDED"):
        with pytest.raises(errors.ConfigError, match=r"otel\.providers"):
            SinkOptions.parse({**base, "otel.providers": bad}, streaming=False)
    assert SinkOptions.parse({**base, "otel.providers": f"{__name__}:_providers"},
                             streaming=False).otel_providers == f"{__name__}:_providers"
