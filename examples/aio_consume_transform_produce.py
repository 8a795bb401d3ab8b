"""Exactly-once consume-transform-produce on asyncio: aiokafka's consumer, txnproducer's producer.

What it shows: two worker *processes* ("alpha" and "beta") in one consumer group read an input
topic with ``aiokafka.AIOKafkaConsumer``, upper-case every record and write it to an output topic
with ``txnproducer.aio.AsyncTransactionalProducer``; outputs and input offsets commit in one
transaction, the offsets sent with the consumer's KIP-447 group metadata (a worker the group has
moved on from is fenced instead of committing stale progress). Halfway through, alpha is killed
with SIGKILL mid-transaction - its outputs are in the output log and its offsets added to the
transaction, no commit, no abort, no LeaveGroup - and started again with the same name, so the same
transactional id: its ``init_transactions()`` fences the dead process and the coordinator aborts
what it left open. A read_committed consumer of the output then finds each input exactly once.

The worker loop (``worker()``) is what a service would run:

    async with producer.transaction():            # aborted on any error or cancellation
        for record in batch:
            await producer.send(out_topic, transform(record), ...)
        await producer.send_offsets_to_transaction(next_offsets, consumer)   # KIP-447 fencing

plus two things a consume-transform-produce loop needs around it: after an abort it rewinds the
consumer to the committed offsets (its position already moved past the aborted inputs), and a
rebalance listener waits for the transaction in progress before partitions are handed over.

Run ``python examples/aio_consume_transform_produce.py [--inputs N]``: against
``$KAFKA_BOOTSTRAP_SERVERS`` when set (Kafka >= 2.5), otherwise an in-process ``MockCluster``. Needs
``pip install aiokafka``. ``run_demo()`` is the entry point for other callers (True when the output
is exactly right); ``python ... worker --bootstrap ... --name alpha ...`` is one worker process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any, TextIO

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

from txnproducer import AbortableError
from txnproducer.aio import AsyncTransactionalProducer

HERE = Path(__file__).resolve()
if str(HERE.parent) not in sys.path:  # the sync example's helpers, also when loaded by path
    sys.path.insert(0, str(HERE.parent))
from consume_transform_produce import (  # noqa: E402 - the cluster, topics, inputs and the check
    check_output,
    create_topics,
    demo_arguments,
    kafka,
    produce_inputs,
)

TIMEOUT_S = 90.0  # bound on every wait below: the demo never hangs


# --- one worker process ---------------------------------------------------------------------------


class _WaitForTransaction(ConsumerRebalanceListener):  # type: ignore[misc]
    """Partitions are handed over only once the transaction in progress has ended."""

    def __init__(self, lock: asyncio.Lock) -> None:
        self._lock = lock

    async def on_partitions_revoked(self, revoked: Any) -> None:
        async with self._lock:
            pass

    async def on_partitions_assigned(self, assigned: Any) -> None:
        pass


def _say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def _rewind(consumer: AIOKafkaConsumer) -> None:
    """Back to the committed offsets: an aborted transaction's inputs must be read again."""
    for tp in consumer.assignment():
        committed = await consumer.committed(tp)
        if committed is None:
            await consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, committed)


async def worker(bootstrap: str, in_topic: str, out_topic: str, group: str, name: str,
                 session_timeout_ms: int) -> None:
    """Consume, upper-case, produce, commit - until "stop" on stdin. "crash" on stdin: stop
    mid-transaction (outputs sent, offsets added) and say so; the parent then kills the process."""
    commands: set[str] = set()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def read_commands() -> None:
        while line := await reader.readline():
            commands.add(line.decode().strip())
            _say(event="ack", name=name, command=line.decode().strip())

    command_task = asyncio.create_task(read_commands())
    in_txn = asyncio.Lock()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, isolation_level="read_committed",
        enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=max(100, session_timeout_ms // 10), max_poll_interval_ms=3 * session_timeout_ms)
    consumer.subscribe([in_topic], listener=_WaitForTransaction(in_txn))
    producer = AsyncTransactionalProducer(bootstrap_servers=bootstrap, transactional_id=f"{group}-{name}",
                                          linger_ms=5, transaction_timeout_ms=30_000)
    await producer.init_transactions()  # fences an earlier process with this name
    await consumer.start()
    _say(event="started", name=name)
    try:
        while "stop" not in commands:
            batch = await consumer.getmany(timeout_ms=200, max_records=200)
            if not batch:
                continue
            async with in_txn:
                try:
                    async with producer.transaction():
                        offsets = {}
                        for tp, records in batch.items():
                            for r in records:
                                await producer.send(out_topic, value=r.value.upper(),
                                                    key=f"{tp.partition}:{r.offset}".encode(),
                                                    partition=tp.partition)
                            # the position, not the last offset + 1: past the input's commit
                            # markers and aborted records, so that the group shows no lag
                            offsets[tp] = await consumer.position(tp)
                        await producer.send_offsets_to_transaction(offsets, consumer)
                        if "crash" in commands:
                            await producer.flush()
                            _say(event="mid-transaction", name=name)
                            await asyncio.Event().wait()  # killed here
                except AbortableError as exc:  # e.g. CommitFailedError: the group moved on
                    _say(event="aborted", name=name, error=type(exc).__name__)
                    await _rewind(consumer)
                    continue
            _say(event="committed", name=name,
                 offsets={f"{tp.topic}:{tp.partition}": off for tp, off in offsets.items()})
    finally:
        command_task.cancel()
        await consumer.stop()
        await producer.close()


# --- the demo: start, kill, restart, check -------------------------------------------------------------


class Worker:
    """One worker process and what it has reported."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process, progress: Progress) -> None:
        self.name = name
        self.proc = proc
        self.mid_transaction = asyncio.Event()
        self.started = asyncio.Event()
        self.acked: set[str] = set()
        self.ack = asyncio.Event()
        self._reading = asyncio.create_task(self._read(progress))

    async def _read(self, progress: Progress) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "started":
                self.started.set()
            elif event.get("event") == "ack":
                self.acked.add(event["command"])
                self.ack.set()
            elif event.get("event") == "mid-transaction":
                self.mid_transaction.set()
            elif event.get("event") == "committed":
                progress.committed(event["offsets"])

    async def command(self, text: str) -> None:
        """Send a command; return once the worker has it."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()
        deadline = time.monotonic() + TIMEOUT_S
        while text not in self.acked and self.proc.returncode is None:
            self.ack.clear()
            await asyncio.wait_for(self.ack.wait(), max(0.0, deadline - time.monotonic()))

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ConnectionError):
                await self.command("stop")
            try:
                await asyncio.wait_for(self.proc.wait(), TIMEOUT_S)
            except asyncio.TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        await self._reading


class Progress:
    """The highest input offset committed per partition, by any worker."""

    def __init__(self) -> None:
        self.offsets: dict[str, int] = {}
        self.changed = asyncio.Event()

    def committed(self, offsets: dict[str, int]) -> None:
        for key, offset in offsets.items():
            self.offsets[key] = max(self.offsets.get(key, 0), offset)
        self.changed.set()

    def total(self) -> int:
        return sum(self.offsets.values())

    async def wait(self, what: str, predicate: Any) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while not predicate():
            self.changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {TIMEOUT_S}s waiting until {what}: {self.offsets}")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)


async def _spawn(name: str, args: list[str], progress: Progress) -> Worker:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(HERE), "worker", "--name", name, *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    worker = Worker(name, proc, progress)
    await asyncio.wait_for(worker.started.wait(), TIMEOUT_S)
    return worker


async def _scenario(servers: str, is_mock: bool, inputs: int, out: TextIO) -> tuple[str, dict[Any, int]]:
    tag = uuid.uuid4().hex[:8]
    in_topic, out_topic, group = f"actp-in-{tag}", f"actp-out-{tag}", f"actp-demo-{tag}"
    create_topics(servers, in_topic, out_topic)
    half = inputs // 2
    await asyncio.to_thread(produce_inputs, servers, in_topic, 0, half)
    print(f"Produced {half} inputs to {in_topic}", file=out)
    session_ms = 2000 if is_mock else 6000  # a real broker's group.min.session.timeout.ms is 6 s
    args = ["--bootstrap", servers, "--in-topic", in_topic, "--out-topic", out_topic, "--group", group,
            "--session-timeout-ms", str(session_ms)]
    progress = Progress()
    alpha = await _spawn("alpha", args, progress)
    beta = await _spawn("beta", args, progress)
    workers = [alpha, beta]
    try:
        await progress.wait("a third of the inputs are committed", lambda: progress.total() >= inputs // 3)
        await alpha.command("crash")  # dies mid-transaction at its next batch (once it has the command) ...
        ends = await asyncio.to_thread(produce_inputs, servers, in_topic, half, inputs)  # ... which comes
        print(f"Produced {inputs - half} more inputs", file=out)
        await asyncio.wait_for(alpha.mid_transaction.wait(), TIMEOUT_S)
        alpha.proc.send_signal(signal.SIGKILL)
        await alpha.proc.wait()
        print(f"Killed alpha (SIGKILL) mid-transaction after {progress.total()} inputs were committed "
              "(its outputs are in the log, its offsets added; no commit, no abort)", file=out)
        workers.append(await _spawn("alpha", args, progress))  # same transactional id: fences the dead one
        print("Restarted alpha: init_transactions fenced the killed process; its transaction is aborted",
              file=out)
        await progress.wait("every input is committed", lambda: all(
            progress.offsets.get(f"{tp.topic}:{tp.partition}") == n for tp, n in ends.items()))
    finally:
        await asyncio.gather(*(w.stop() for w in workers))
    return out_topic, ends


def run_demo(bootstrap: str | None = None, inputs: int = 3000, transaction_version: int = 2,
             out: TextIO | None = None) -> bool:
    """Run the whole scenario and print what happened; True if the output holds each input once."""
    out = out if out is not None else sys.stdout
    with kafka(bootstrap, transaction_version, out) as (servers, is_mock):
        out_topic, ends = asyncio.run(_scenario(servers, is_mock, inputs, out))
        return check_output(servers, out_topic, ends, inputs, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command")
    one = sub.add_parser("worker", help="run one worker process (the demo starts these)")
    for flag in ("--bootstrap", "--in-topic", "--out-topic", "--group", "--name"):
        one.add_argument(flag, required=True)
    one.add_argument("--session-timeout-ms", type=int, default=6000)
    demo_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)  # aiokafka's and kafka-python's own logging: quiet
    if args.command == "worker":
        asyncio.run(worker(args.bootstrap, args.in_topic, args.out_topic, args.group, args.name,
                           args.session_timeout_ms))
        return 0
    return 0 if run_demo(args.bootstrap, args.inputs, args.transaction_version) else 1


if __name__ == "__main__":
    sys.exit(main())
