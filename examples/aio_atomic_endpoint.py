"""An HTTP endpoint that writes several records atomically: all of an order's records, or none.

What it shows: a service on asyncio answers ``POST /orders`` with a JSON order; the handler writes
one record per order line to ``order-lines`` and a summary to ``orders`` in one Kafka transaction
with ``txnproducer.aio.AsyncTransactionalProducer``. A read_committed consumer sees every record of
an order or none of it: an order that fails validation half-way (after some lines were sent) is
aborted, and so is one whose client hangs up - the handler task is cancelled, and cancellation
inside ``async with producer.transaction()`` aborts.

A producer runs one transaction at a time, so the service keeps a small pool of producers
(``txnproducer.aio.AsyncTransactionalProducerPool``), each with its own stable transactional id
(``orders-api-<instance>-<n>``), and a request borrows one for its transaction.

The server here is plain asyncio (``asyncio.start_server`` and a minimal HTTP/1.1 reader) so that
the example needs nothing but txnproducer. With FastAPI the handler is the same code::

    @app.post("/orders")
    async def create_order(order: dict) -> dict:
        async with pool.transaction() as producer:
            for line in order["lines"]:
                await producer.send("order-lines", json.dumps(line).encode(), key=order["id"].encode())
            await producer.send("orders", json.dumps(summary(order)).encode(), key=order["id"].encode())
        return {"id": order["id"], "lines": len(order["lines"])}

(create the pool in the app's lifespan handler: ``await pool.init_transactions()`` / ``await
pool.close()``).

Run ``python examples/aio_atomic_endpoint.py``: it starts an embedded MockCluster (or uses
``$KAFKA_BOOTSTRAP_SERVERS``), the server on a free port of 127.0.0.1, sends 30 orders concurrently -
a few invalid, a few from clients that hang up mid-request - and checks what a read_committed
consumer sees. ``run_demo()`` returns True when every accepted order is complete and nothing else is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import Iterator
from typing import Any, TextIO

from txnproducer.aio import AsyncTransactionalProducerPool

TOPICS = ("orders", "order-lines")


class BadOrder(ValueError):
    pass


async def create_order(pool: AsyncTransactionalProducerPool, order: dict[str, Any]) -> dict[str, Any]:
    """The endpoint: every line and the summary in one transaction (aborted on any error)."""
    key = str(order.get("id", "")).encode()
    async with pool.transaction() as producer:
        total = 0
        for line in order.get("lines", []):
            if not isinstance(line.get("qty"), int) or line["qty"] <= 0:
                raise BadOrder(f"order {order.get('id')}: bad quantity in {line}")  # lines already sent
            total += line["qty"]
            await producer.send("order-lines", json.dumps(line).encode(), key=key)
            await asyncio.sleep(0.005)  # stands for per-line work (pricing, a lookup, ...)
        await producer.send("orders", json.dumps({"id": order.get("id"), "total": total}).encode(), key=key)
    return {"id": order.get("id"), "lines": len(order.get("lines", []))}


# --- a minimal HTTP/1.1 server and client (FastAPI/uvicorn would do this part) -------------------------


async def _handle(pool: AsyncTransactionalProducerPool, reader: asyncio.StreamReader,
                  writer: asyncio.StreamWriter) -> None:
    try:
        request_line = await reader.readline()
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if not request_line.startswith(b"POST /orders "):
            status, answer = 404, {"error": "not found"}
        else:
            handler = asyncio.ensure_future(create_order(pool, json.loads(body)))
            hangup = asyncio.ensure_future(reader.read(1))  # b"" when the client goes away
            done, _ = await asyncio.wait({handler, hangup}, return_when=asyncio.FIRST_COMPLETED)
            if handler not in done:  # the client hung up: cancel the request (aborts its transaction)
                handler.cancel()
                with contextlib.suppress(asyncio.CancelledError, BadOrder):
                    await handler
                return
            hangup.cancel()
            try:
                status, answer = 201, handler.result()
            except BadOrder as exc:
                status, answer = 400, {"error": str(exc)}
        payload = json.dumps(answer).encode()
        writer.write(b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                     % (status, len(payload), payload))
        await writer.drain()
    finally:
        writer.close()


async def post(port: int, order: dict[str, Any], hang_up_after_s: float | None = None) -> int | None:
    """POST an order; the HTTP status, or None when this client hung up first."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps(order).encode()
    writer.write(b"POST /orders HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    try:
        if hang_up_after_s is not None:
            await asyncio.sleep(hang_up_after_s)
            return None
        status_line = await reader.readline()
        return int(status_line.split()[1])
    finally:
        writer.close()


# --- the demo --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def kafka(out: TextIO) -> Iterator[str]:
    servers = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if servers:
        print(f"Using Kafka at {servers}", file=out)
        yield servers
        return
    from txnproducer.testing import MockCluster

    with MockCluster(num_brokers=1) as cluster:
        for topic in TOPICS:
            cluster.create_topic(topic, partitions=3)
        print("Using an embedded MockCluster", file=out)
        yield cluster.bootstrap_servers


def _orders(run: str) -> list[tuple[dict[str, Any], str]]:
    """30 orders: (order, what the client does) - most valid, some invalid, some hung up on."""
    orders = []
    for n in range(30):
        lines = [{"sku": f"sku-{n}-{i}", "qty": 1 + i} for i in range(5)]
        kind = "ok"
        if n % 10 == 3:
            lines[3]["qty"] = 0  # invalid: found after three lines were sent
            kind = "invalid"
        elif n % 10 == 7:
            kind = "hang-up"
        orders.append(({"id": f"{run}-{n}", "lines": lines}, kind))
    return orders


def _read_committed(servers: str, topic: str) -> list[Any]:
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=servers, isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=2000)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        return list(consumer)
    finally:
        consumer.close()


async def _serve_and_post(servers: str, run: str) -> dict[str, list[tuple[str, int | None]]]:
    pool = AsyncTransactionalProducerPool(size=4, transactional_id_prefix=f"orders-api-{run}",
                                          bootstrap_servers=servers, linger_ms=1)
    await pool.init_transactions()
    server = await asyncio.start_server(lambda r, w: _handle(pool, r, w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        orders = _orders(run)
        statuses = await asyncio.gather(*(post(port, o, 0.002 if kind == "hang-up" else None)
                                          for o, kind in orders))
    finally:
        server.close()
        await server.wait_closed()
        await pool.close()
    result: dict[str, list[tuple[str, int | None]]] = {}
    for (order, kind), status in zip(orders, statuses, strict=True):
        result.setdefault(kind, []).append((order["id"], status))
    return result


def run_demo(out: TextIO | None = None) -> bool:
    out = out if out is not None else sys.stdout
    run = uuid.uuid4().hex[:6]
    with kafka(out) as servers:
        outcome = asyncio.run(_serve_and_post(servers, run))
        summaries = [json.loads(r.value) for r in _read_committed(servers, "orders")]
        lines = [r for r in _read_committed(servers, "order-lines")]
    mine = {s["id"] for s in summaries if s["id"].startswith(run)}
    lines_per_order: dict[str, int] = {}
    for record in lines:
        order_id = record.key.decode()
        if order_id.startswith(run):
            lines_per_order[order_id] = lines_per_order.get(order_id, 0) + 1
    accepted = {oid for oid, status in outcome["ok"] if status == 201}
    print(f"{len(outcome['ok'])} valid orders answered {sorted({s for _, s in outcome['ok']})}, "
          f"{len(outcome['invalid'])} invalid answered {sorted({s for _, s in outcome['invalid']})}, "
          f"{len(outcome['hang-up'])} clients hung up", file=out)
    print(f"A read_committed consumer sees {len(mine)} orders; line counts per order: "
          f"{sorted(set(lines_per_order.values()))}", file=out)
    invalid = {oid for oid, _ in outcome["invalid"]}
    ok = (accepted == {oid for oid, _ in outcome["ok"]}
          and all(status == 400 for _, status in outcome["invalid"])
          and mine == accepted | (mine & {oid for oid, _ in outcome["hang-up"]})
          and not mine & invalid
          and set(lines_per_order) == mine and set(lines_per_order.values()) <= {5})
    aborted = len(outcome["hang-up"]) - len(mine & {oid for oid, _ in outcome["hang-up"]})
    print(f"{aborted} of the hung-up orders were aborted (cancelled mid-transaction), the others had "
          "committed before the client left", file=out)
    print("OK: every order is complete or absent." if ok else "UNEXPECTED output.", file=out)
    return ok


if __name__ == "__main__":
    sys.exit(0 if run_demo() else 1)
