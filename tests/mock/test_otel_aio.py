"""AsyncTransactionalProducer gives the sync producer's spans, each in the context of the task that called
it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")

from tests._support.aio import run
from tests._support.otel import Telemetry
from txnproducer.aio import AsyncTransactionalProducer
from txnproducer.otel import names, transaction_span
from txnproducer.testing import MockCluster


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1) as mock:
        mock.create_topic("known", partitions=1)
        yield mock


def test_each_tasks_transaction_is_a_child_of_that_tasks_span(cluster: MockCluster,
                                                              telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    producers = [AsyncTransactionalProducer(bootstrap_servers=cluster.bootstrap_servers,
                                            transactional_id=f"aio-{i}", record_spans=True,
                                            **telemetry.providers) for i in range(2)]
    started = {}

    opened: list[int] = []
    both_open = asyncio.Event()  # (asyncio.Barrier is 3.11+)

    async def handle(i: int) -> None:
        producer = producers[i]
        with tracer.start_as_current_span(f"request {i}") as request:
            started[i] = request.get_span_context()
            await producer.init_transactions()
            async with producer.transaction():
                # the first send to a topic waits for its metadata (send() is tried again): one span
                future = await producer.send(f"new-topic-{i}", b"v")
                await producer.send("known", b"w")
                assert transaction_span(producer) is not None
                opened.append(i)
                if len(opened) == 2:
                    both_open.set()
                await both_open.wait()  # both transactions open at once, in two tasks
            await future

    async def main() -> None:
        try:
            await asyncio.gather(handle(0), handle(1))
        finally:
            for p in producers:
                await p.close()

    run(main())
    transactions = telemetry.spans(names.SPAN_TRANSACTION)
    assert len(transactions) == 2
    for txn in transactions:
        i = int(str((txn.attributes or {})[names.TRANSACTIONAL_ID])[-1])
        assert txn.parent is not None and txn.parent.span_id == started[i].span_id
        assert (txn.attributes or {})[names.OUTCOME] == names.OUTCOME_COMMITTED
        sends = telemetry.children(txn)
        assert sorted(s.name for s in sends) == sorted(
            [names.send_span_name(f"new-topic-{i}"), names.send_span_name("known"), names.SPAN_COMMIT])
        assert all(s.status.is_unset for s in sends)
        inits = [s for s in telemetry.spans(names.SPAN_INIT)
                 if s.parent and s.parent.span_id == started[i].span_id]
        assert len(inits) == 1
