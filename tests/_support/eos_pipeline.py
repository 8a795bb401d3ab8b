"""Consume-transform-produce scenarios: processors on threads, inputs, and the exactly-once check.

The mock tier (``tests/mock/test_eos_*.py``) and the broker tier (``tests/broker/test_eos_broker.py``)
run the same scenario - processors in one group, one killed mid-transaction and restarted, another
joining - and check it the same way: every input appears exactly once in the read_committed output,
in input order per partition. The transform writes one output per input on the output partition of
the same number, carrying the input's partition and offset, which is what makes that checkable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs
from kafka import KafkaProducer
from kafka.structs import TopicPartition

from txnproducer.eos import OutputRecord, TransactionalProcessor

__all__ = ["ProcessorThreads", "assert_each_input_once_in_order", "origin_columns_transform",
           "origin_transform", "parse_origin", "produce_inputs"]


def origin_transform(out_topic: str) -> Callable[[Any], list[OutputRecord]]:
    """One output per input, on the output partition of the same number (keeps per-input order),
    valued ``"<in partition>:<in offset>:<input value>"`` with an ``origin`` header."""

    def transform(record: Any) -> list[OutputRecord]:
        origin = f"{record.partition}:{record.offset}"
        return [OutputRecord(out_topic, value=f"{origin}:{record.value.decode()}".encode(),
                             partition=record.partition, headers=[("origin", origin.encode())])]

    return transform


def origin_columns_transform(out_topic: str) -> Callable[[Any], list[OutputRecord]]:
    """:func:`origin_transform` as a column transform (``transform_columns``: a PartitionBatch in)."""

    def transform(batch: Any) -> list[OutputRecord]:
        p = batch.partition
        return [OutputRecord(out_topic, value=b"%d:%d:%s" % (p, o, v), partition=p,
                             headers=[("origin", b"%d:%d" % (p, o))])
                for o, v in zip(batch.offsets, batch.values, strict=True)]

    return transform


def parse_origin(record: Any) -> tuple[int, int, bytes] | None:
    """(input partition, input offset, input value) of an output of :func:`origin_transform`, or None
    when the value or its ``origin`` header is not what that transform writes."""
    parts = (record.value or b"").split(b":", 2)
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    if dict(record.headers or ()).get("origin") != b"%s:%s" % (parts[0], parts[1]):
        return None
    return int(parts[0]), int(parts[1]), parts[2]


def produce_inputs(bootstrap: str, topic: str, start: int, stop: int, partitions: int) -> None:
    """Inputs ``start..stop-1`` as plain (non-transactional) records, input ``i`` on ``i % partitions``."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    try:
        for i in range(start, stop):
            producer.send(topic, value=str(i).encode(), partition=i % partitions)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)


def assert_each_input_once_in_order(seen: dict[int, list[Any]], partitions: int, total: int) -> None:
    """``seen`` (output partition -> records, as read with read_committed) holds each of the
    ``total`` inputs exactly once, in input order per partition."""
    origins: dict[tuple[int, int], int] = {}
    for out_partition, records in seen.items():
        last_offset = -1
        for record in records:
            text = record.value.decode()
            origin = parse_origin(record)
            assert origin is not None, f"not an output of origin_transform: {record!r}"
            in_partition, in_offset, number = origin[0], origin[1], int(origin[2])
            assert in_partition == out_partition, text
            assert number % partitions == in_partition, text
            assert in_offset > last_offset, f"order broken or duplicate in partition {out_partition}: {text}"
            last_offset = in_offset
            origins[(in_partition, in_offset)] = origins.get((in_partition, in_offset), 0) + 1
    assert len(origins) == total, f"lost inputs: {total - len(origins)}"
    assert set(origins.values()) == {1}


@attrs.define(eq=False)
class ProcessorThreads:
    """Runs processor instances on threads; the test waits on what they committed.

    ``committed`` is tracked from each processor's ``on_commit`` (the offsets a commit included), so
    waiting needs no polling of the cluster; every wait is a bounded wait on one condition, woken by
    commits, assignments and failures.
    """

    bootstrap: str
    in_topic: str
    out_topic: str
    group: str
    consumer: dict[str, Any]
    producer: dict[str, Any]
    wait_s: float
    cond: threading.Condition = attrs.field(factory=threading.Condition, init=False)
    errors: list[BaseException] = attrs.field(factory=list, init=False)
    threads: dict[str, threading.Thread] = attrs.field(factory=dict, init=False)
    processors: dict[str, TransactionalProcessor] = attrs.field(factory=dict, init=False)
    committed: dict[TopicPartition, int] = attrs.field(factory=dict, init=False)
    commits: int = attrs.field(default=0, init=False)

    def on_commit(self, offsets: dict[TopicPartition, Any]) -> None:
        with self.cond:
            self.commits += 1
            for tp, meta in offsets.items():
                self.committed[tp] = max(self.committed.get(tp, 0), int(meta.offset))
            self.cond.notify_all()

    def on_assigned(self, _partitions: set[Any]) -> None:
        with self.cond:
            self.cond.notify_all()

    def build(self, name: str, **overrides: Any) -> TransactionalProcessor:
        """A processor named ``name`` (transactional id ``<group>-<name>``), not started."""
        if not {"transform_batch", "transform_columns"} & set(overrides):
            overrides.setdefault("transform", origin_transform(self.out_topic))
        overrides.setdefault("max_records_per_txn", 300)
        overrides.setdefault("max_txn_time_ms", 200)
        overrides.setdefault("poll_timeout_ms", 50)
        proc = TransactionalProcessor(
            self.in_topic,
            consumer_config={"group_id": self.group, "bootstrap_servers": self.bootstrap, **self.consumer},
            producer_config={"bootstrap_servers": self.bootstrap, **self.producer},
            instance_name=name,
            on_commit=self.on_commit,
            on_assigned=self.on_assigned,
            **overrides,
        )
        self.processors[name] = proc
        return proc

    def start(self, name: str, **overrides: Any) -> TransactionalProcessor:
        """Build ``name`` and run it on a thread; an exception from ``run()`` is kept in ``errors``."""
        proc = self.build(name, **overrides)

        def body() -> None:
            try:
                proc.run()
            except BaseException as exc:
                with self.cond:
                    self.errors.append(exc)
                    self.cond.notify_all()
            finally:
                with self.cond:
                    self.cond.notify_all()

        thread = threading.Thread(target=body, name=f"processor-{name}", daemon=True)
        self.threads[name] = thread
        thread.start()
        return proc

    def committed_total(self) -> int:
        return sum(self.committed.values())

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float | None = None,
                 allow_errors: bool = False) -> None:
        with self.cond:
            ok = self.cond.wait_for(lambda: (bool(self.errors) and not allow_errors) or predicate(),
                                    timeout=self.wait_s if timeout is None else timeout)
            assert allow_errors or not self.errors, f"a processor failed: {self.errors!r}"
            assert ok, f"timed out waiting until {what}; committed={self.committed}"

    def stop_all(self, timeout: float = 20.0) -> None:
        stoppers = [threading.Thread(target=p.stop, args=(timeout,)) for p in self.processors.values()]
        for s in stoppers:
            s.start()
        for s in stoppers:
            s.join(timeout + 10)
        for t in self.threads.values():
            t.join(timeout + 10)
            assert not t.is_alive(), f"{t.name} did not stop"
