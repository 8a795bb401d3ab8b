"""What a consumer sees: read a topic under an isolation level, compare the last stable offset with
the high watermark, ask the coordinator about a transaction.

Shared by the mock, broker and spark tiers so that "exactly once" is checked the same way against
MockCluster and against a real Kafka: through kafka-python's consumer and the wire, never through a
shortcut only one of them has.
"""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaConsumer
from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.structs import TopicPartition

from txnproducer.testing.wire_client import WireClient

__all__ = ["CommittedReader", "assert_no_open_transaction", "end_offsets", "read_all", "read_values",
           "transaction_state", "wire_to"]


class CommittedReader:
    """One kafka-python ``read_committed`` consumer of one partition, kept open: read up to the last
    stable offset now, and again later - to see it stop at an open transaction, then move on once the
    transaction ended. ``client``: kafka-python settings (security)."""

    def __init__(self, bootstrap: str, topic: str, partition: int, wait_s: float = 30.0,
                 **client: Any) -> None:
        self.tp = TopicPartition(topic, partition)
        self.wait_s = wait_s
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                      enable_auto_commit=False, auto_offset_reset="earliest", group_id=None,
                                      fetch_max_wait_ms=50, **client)
        self.consumer.assign([self.tp])
        self.consumer.seek_to_beginning(self.tp)
        self.values: list[bytes] = []

    def end(self) -> int:
        """The read_committed end offset: the last stable offset."""
        return int(self.consumer.end_offsets([self.tp])[self.tp])

    def read_to_end(self) -> int:
        """Read until the position reaches the last stable offset (bounded by ``wait_s``); return the
        position."""
        end = self.end()
        deadline = time.monotonic() + self.wait_s
        while self.consumer.position(self.tp) < end:
            assert time.monotonic() < deadline, f"stuck at {self.consumer.position(self.tp)} < {end}"
            for records in self.consumer.poll(timeout_ms=200).values():
                self.values.extend(r.value for r in records)
        return int(self.consumer.position(self.tp))

    def close(self) -> None:
        self.consumer.close()


def end_offsets(bootstrap: str, topic: str, partitions: int,
                isolation_level: str = "read_uncommitted", **client: Any) -> dict[int, int]:
    """ListOffsets latest per partition: the high watermark (read_uncommitted) or the last stable
    offset (read_committed). ``client``: kafka-python settings (security) for the consumer."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level,
                             enable_auto_commit=False, **client)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: offset for tp, offset in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def read_all(bootstrap: str, topic: str, partitions: int, isolation_level: str = "read_committed",
             wait_s: float = 60.0, **client: Any) -> dict[int, list[Any]]:
    """Every record a kafka-python consumer with ``isolation_level`` sees in ``topic``, per partition,
    up to the end offsets it finds when it starts (the last stable offset under read_committed).
    Fails when that takes longer than ``wait_s``. ``client``: kafka-python settings (security)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level,
                             enable_auto_commit=False, auto_offset_reset="earliest", fetch_max_wait_ms=50,
                             **client)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        seen: dict[int, list[Any]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + wait_s
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"{topic} not fully read within {wait_s}s: {ends}"
            for tp, records in consumer.poll(timeout_ms=200).items():
                seen[tp.partition].extend(records)
        return seen
    finally:
        consumer.close()


def read_values(bootstrap: str, topic: str, partitions: int, wait_s: float = 60.0,
                **client: Any) -> list[bytes]:
    """The values a read_committed consumer sees in ``topic``, partition after partition."""
    seen = read_all(bootstrap, topic, partitions, "read_committed", wait_s, **client)
    return [r.value for p in range(partitions) for r in seen[p]]


def assert_no_open_transaction(bootstrap: str, topic: str, partitions: int, **client: Any) -> None:
    """No transaction holds ``topic`` back: the last stable offset equals the high watermark."""
    lso = end_offsets(bootstrap, topic, partitions, "read_committed", **client)
    hw = end_offsets(bootstrap, topic, partitions, "read_uncommitted", **client)
    assert lso == hw, f"{topic}: a transaction is open (LSO {lso}, HW {hw})"


def wire_to(bootstrap: str, timeout: float = 10.0) -> WireClient:
    """A bare protocol connection to the first bootstrap broker (on one node: every coordinator)."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return WireClient(host, int(port), timeout=timeout)


def transaction_state(bootstrap: str, txn_id: str) -> str:
    """The coordinator's state of ``txn_id`` (DescribeTransactions), e.g. ``Ongoing``; the first
    bootstrap broker must be the coordinator (a one-node cluster)."""
    with wire_to(bootstrap) as wire:
        response = wire.send(DescribeTransactionsRequest[0](transactional_ids=[txn_id]))
    state: str = response.transaction_states[0].transaction_state
    return state
