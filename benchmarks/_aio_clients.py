"""The asyncio clients of the benchmark: S1-S3 through ``await``, one event loop per run.

    python benchmarks/_clients.py --client txnproducer-aio --scenario S2 --bootstrap 127.0.0.1:9092 --topic t

Three clients, each in its own process like the others (``_clients.py`` dispatches here):

* ``txnproducer-aio``: ``txnproducer.aio.AsyncTransactionalProducer``.
* ``confluent-aio``: confluent-kafka's ``confluent_kafka.aio.AIOProducer`` (librdkafka, its blocking
  calls run in a thread pool; ``produce()`` buffers up to 1000 messages before handing them to
  librdkafka, and ``commit_transaction()`` flushes that buffer first).
* ``aiokafka``: aiokafka's ``AIOKafkaProducer`` with a ``transactional_id`` (pure Python, no thread).

The loop is ``run_workload``'s, awaited: ``begin; await send x N; await commit``, timing each commit.
Each client awaits ``send`` only until the record is queued (never its delivery), as the sync
loop does. Same settings as the sync clients: acks=all, linger 5 ms, each library's defaults.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from typing import Any

from txnproducer.perf import PerfResult, peak_rss_bytes, producer_diagnostics

AIO_CLIENTS = ("txnproducer-aio", "confluent-aio", "aiokafka")
LINGER_MS = 5
BLOCK_TIMEOUT_S = 60.0


class OursAio:
    name = "txnproducer-aio"

    def __init__(self, bootstrap: str, transactional_id: str) -> None:
        from txnproducer.aio import AsyncTransactionalProducer

        self.producer = AsyncTransactionalProducer(
            bootstrap_servers=bootstrap, transactional_id=transactional_id, linger_ms=LINGER_MS,
            max_block_ms=int(BLOCK_TIMEOUT_S * 1000))

    async def init(self) -> None:
        await self.producer.init_transactions()

    async def prepare(self, topic: str) -> None:
        await self.producer.partitions_for(topic)

    async def begin(self) -> None:
        self.producer.begin_transaction()

    async def send(self, topic: str, value: bytes, partition: int | None = None) -> None:
        await self.producer.send(topic, value, partition=partition)

    async def commit(self) -> None:
        await self.producer.commit_transaction()

    async def close(self) -> None:
        await self.producer.close()


class ConfluentAio:
    name = "confluent-aio"

    def __init__(self, bootstrap: str, transactional_id: str) -> None:
        from confluent_kafka.aio import AIOProducer

        self.producer = AIOProducer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                                     "linger.ms": LINGER_MS, "acks": "all"})

    async def init(self) -> None:
        await self.producer.init_transactions(BLOCK_TIMEOUT_S)

    async def prepare(self, topic: str) -> None:
        await self.producer.list_topics(topic, BLOCK_TIMEOUT_S)  # fills librdkafka's metadata cache

    async def begin(self) -> None:
        await self.producer.begin_transaction()

    async def send(self, topic: str, value: bytes, partition: int | None = None) -> None:
        # the delivery future it returns is not awaited
        if partition is None:
            await self.producer.produce(topic, value)
        else:
            await self.producer.produce(topic, value, partition=partition)

    async def commit(self) -> None:
        await self.producer.commit_transaction(BLOCK_TIMEOUT_S)

    async def close(self) -> None:
        await self.producer.close()


class AioKafka:
    name = "aiokafka"

    def __init__(self, bootstrap: str, transactional_id: str) -> None:
        from aiokafka import AIOKafkaProducer

        self.producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id,
                                         linger_ms=LINGER_MS, acks="all", enable_idempotence=True,
                                         request_timeout_ms=int(BLOCK_TIMEOUT_S * 1000))

    async def init(self) -> None:
        await self.producer.start()  # aiokafka's start() finds the coordinator and inits the producer id

    async def prepare(self, topic: str) -> None:
        await self.producer.partitions_for(topic)

    async def begin(self) -> None:
        await self.producer.begin_transaction()

    async def send(self, topic: str, value: bytes, partition: int | None = None) -> None:
        await self.producer.send(topic, value, partition=partition)  # its delivery future is not awaited

    async def commit(self) -> None:
        await self.producer.commit_transaction()

    async def close(self) -> None:
        await self.producer.stop()


def make_aio_client(name: str, bootstrap: str, transactional_id: str) -> Any:
    classes = {c.name: c for c in (OursAio, ConfluentAio, AioKafka)}
    if name not in classes:
        raise ValueError(f"unknown asyncio client {name!r}; one of {', '.join(AIO_CLIENTS)}")
    return classes[name](bootstrap, transactional_id)


async def run_async_workload(client: Any, topic: str, num_records: int, record_size: int,
                             records_per_txn: int, max_seconds: float, warmup_transactions: int = 0,
                             spread: int | None = None) -> PerfResult:
    """``txnproducer.perf.run_workload``'s loop with ``await`` (records_per_txn only), after
    ``warmup_transactions`` untimed ones; ``spread``: record i of a transaction to partition i % spread."""
    payload = os.urandom(record_size)
    t0 = time.monotonic()
    await client.init()
    await client.prepare(topic)  # the topic's metadata, before the clock (perf.TxnClient.prepare)
    init_s = time.monotonic() - t0
    parts = [None if spread is None else i % spread for i in range(records_per_txn)]
    for _ in range(warmup_transactions):
        await client.begin()
        for partition in parts:
            await client.send(topic, payload, partition)
        await client.commit()
    latencies: list[float] = []
    sent = transactions = 0
    cpu_start, app_cpu_start = time.process_time(), time.thread_time()
    start = time.monotonic()
    deadline = start + max_seconds if max_seconds else math.inf
    while sent < num_records:
        await client.begin()
        for partition in parts[:min(records_per_txn, num_records - sent)]:
            await client.send(topic, payload, partition)
            sent += 1
        commit_start = time.monotonic()
        await client.commit()
        now = time.monotonic()
        latencies.append((now - commit_start) * 1000.0)
        transactions += 1
        if now >= deadline:
            break
    elapsed = time.monotonic() - start
    return PerfResult(client=client.name, records=sent, transactions=transactions, record_size=record_size,
                      elapsed_s=elapsed, commit_latencies_ms=latencies, peak_rss_bytes=peak_rss_bytes(),
                      init_s=init_s, cpu_s=time.process_time() - cpu_start,
                      app_cpu_s=time.thread_time() - app_cpu_start)


def run_aio(name: str, bootstrap: str, transactional_id: str, topic: str, num_records: int,
            record_size: int, records_per_txn: int, max_seconds: float, warmup_transactions: int = 0,
            spread: int | None = None) -> PerfResult:
    """One run of an asyncio client on a fresh event loop (constructed inside it: confluent's
    AIOProducer binds to the running loop)."""

    async def main() -> PerfResult:
        client = make_aio_client(name, bootstrap, transactional_id)
        try:
            result = await run_async_workload(client, topic, num_records, record_size, records_per_txn,
                                              max_seconds, warmup_transactions, spread)
            if isinstance(client, OursAio):
                result.extra.update(producer_diagnostics(client.producer))
        finally:
            await client.close()
        result.peak_rss_bytes = peak_rss_bytes()
        return result

    return asyncio.run(main())
