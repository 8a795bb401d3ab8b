"""Input for the txnkafka source's tests, written once for MockCluster and a real Kafka, and the
reference reader they are compared with.

* :func:`write_layout`: one partition with a known layout of transactions - committed records,
  commit and abort markers, aborted records at known offsets - for the read's failure modes
  (a marker at a range's start, middle or end; a range of markers only; of aborted records only; a
  start inside an aborted transaction).
* :func:`write_interleaved`: several transactional producers whose transactions interleave on every
  partition, every other one aborted, with null keys, null values and headers, in a codec.
* :func:`confluent_read_committed`: what confluent-kafka's (librdkafka's) read_committed consumer
  reads, record for record - the reference the source must equal.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from txnproducer import TransactionalProducer

__all__ = ["LAYOUT", "Record", "confluent_read_committed", "write_interleaved", "write_layout"]


@dataclass(frozen=True, order=True)
class Record:
    """What the reader compares: partition, offset, key, value, headers, timestamp (ms)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


#: write_layout's partition 0: the offsets of each kind
LAYOUT = {
    "committed": [0, 1, 2, 7, 9, 10, 11],
    "commit_markers": [3, 8, 12],
    "aborted": [4, 5],
    "abort_markers": [6],
    "end": 13,  # the log end; with ``leave_open``, an open transaction's first record
}


def _producer(bootstrap: str, codec: str = "none", **settings: Any) -> TransactionalProducer:
    return TransactionalProducer(
        bootstrap_servers=bootstrap,
        transactional_id=f"src-{uuid.uuid4().hex[:8]}",
        compression_type=codec,
        linger_ms=0,
        max_block_ms=30_000,
        request_timeout_ms=10_000,
        **settings,
    )


def write_layout(bootstrap: str, topic: str, *, leave_open: bool = False) -> TransactionalProducer | None:
    """Partition 0 of ``topic`` as :data:`LAYOUT` says, by one producer (so the offsets are exact):
    commit [0 1 2] + marker 3, abort [4 5] + marker 6, commit [7] + marker 8, commit [9 10 11] +
    marker 12; record values are ``c<offset>`` (committed) and ``a<offset>`` (aborted). With
    ``leave_open`` a transaction stays open from offset 13, and its producer is returned to end it."""
    p = _producer(bootstrap)
    p.init_transactions()

    def txn(offsets: list[int], commit: bool) -> None:
        p.begin_transaction()
        for o in offsets:
            value = b"%s%d" % (b"c" if commit else b"a", o)
            p.send(topic, value, key=value, partition=0)
        p.flush()  # in the log before the end: an abort must leave its records and marker behind
        if commit:
            p.commit_transaction()
        else:
            p.abort_transaction()

    txn([0, 1, 2], True)
    txn([4, 5], False)
    txn([7], True)
    txn([9, 10, 11], True)
    if leave_open:
        p.begin_transaction()
        p.send(topic, b"open13", partition=0)
        p.flush()
        return p
    p.close(10)
    return None


def write_interleaved(
    bootstrap: str, topic: str, partitions: int, codec: str = "none", producers: int = 3, rounds: int = 4
) -> None:
    """Transactions of ``producers`` producers interleaving on every partition, every other one
    aborted; each transaction writes a record with a null key, one with a null value, one with
    headers (one of them with a null value) and ordinary ones, on every partition."""
    made = [_producer(bootstrap, codec) for _ in range(producers)]
    try:
        for p in made:
            p.init_transactions()
        for round_ in range(rounds):
            for i, p in enumerate(made):
                p.begin_transaction()
                for n in range(3 * partitions):
                    value = b"r%d-p%d-n%d" % (round_, i, n)
                    kind = n % 4
                    p.send(
                        topic,
                        None if kind == 1 else value + b"-v" * n,
                        key=None if kind == 0 else b"k%d" % n,
                        partition=n % partitions,
                        headers=[("h1", b"x" * n), ("h2", None)] if kind == 2 else None,
                    )
                p.flush()
            for i, p in enumerate(made):  # the transactions end in another order than they began
                if (round_ + i) % 2:
                    p.abort_transaction()
                else:
                    p.commit_transaction()
    finally:
        for p in made:
            p.close(10)


def confluent_read_committed(
    bootstrap: str, topic: str, partitions: int, *, security: dict[str, str] | None = None
) -> list[Record]:
    """Every record confluent-kafka's read_committed consumer reads from ``topic``, in order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"ref-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            **(security or {}),
        }
    )
    out: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        finished: set[int] = set()
        deadline = time.monotonic() + 60
        while len(finished) < partitions:
            assert time.monotonic() < deadline, f"confluent-kafka did not reach the end of {topic}"
            for m in consumer.consume(1000, timeout=0.5):
                if m.error() is not None:
                    if m.error().code() == -191:  # _PARTITION_EOF
                        finished.add(m.partition())
                        continue
                    raise AssertionError(f"confluent-kafka: {m.error()}")
                headers = tuple((k, v) for k, v in (m.headers() or []))
                out.append(Record(m.partition(), m.offset(), m.key(), m.value(), headers, m.timestamp()[1]))
    finally:
        consumer.close()
    return sorted(out)
