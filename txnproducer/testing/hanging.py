"""Hanging transactions for tests: a partition that holds a transaction its coordinator has forgotten.

Why: an open transaction pins its partition's last stable offset, and the coordinator normally ends
every transaction it started (commit, abort, timeout). KIP-664 was written for the ones it does not:
a partition leader holds a transaction the coordinator no longer tracks - after a coordinator bug or
lost marker, a TV1 producer whose partition was never added, a transactional id that expired - and
``read_committed`` consumers stop there until an operator writes the ABORT marker (WriteTxnMarkers).
The mock's coordinator loses nothing by itself, so tests make the two shapes an operator meets, the
two that ``find-hanging`` (Kafka's and ``txnproducer transactions find-hanging``) recognise:

* :func:`plant_orphan`: a transactional batch from a producer id that no transactional id maps to
  (ListTransactions filtered by that producer id finds nothing). Its records get timestamps ``age_ms``
  in the past: the leader's producer state keeps the batch's timestamp, which is what the tools
  compare with ``transaction.max.timeout.ms``.
* :func:`forget_partition`: the coordinator drops one partition of an ongoing transaction, so its
  markers never reach it (DescribeTransactions shows the id tracking other partitions, or none once
  the transaction ended) - the lost-marker case.

Both take the cluster state's lock (the caller's ``MockCluster`` method holds it).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import attrs
from kafka.record.default_records import DefaultRecordBatchBuilder

from .partition_log import parse_batches

if TYPE_CHECKING:  # pragma: no cover
    from .cluster_state import ClusterState

__all__ = ["PlantedTransaction", "forget_partition", "plant_orphan"]


@attrs.frozen
class PlantedTransaction:
    """The open transaction :func:`plant_orphan` left: who holds it and where it starts."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    start_offset: int
    last_timestamp: int


def plant_orphan(
    state: ClusterState, topic: str, partition: int, age_ms: int, records: int
) -> PlantedTransaction:
    """Append ``records`` transactional records of a fresh producer id (epoch 0) that no transactional
    id maps to, time-stamped ``age_ms`` ago; the transaction stays open (see the module docstring)."""
    log = state.partition_log(topic, partition)
    if log is None:
        raise ValueError(f"no partition {topic}-{partition}")
    if records < 1 or age_ms < 0:
        raise ValueError("records must be >= 1 and age_ms >= 0")
    producer_id = state.txn.allocate_producer_id()  # never handed to a transactional id
    timestamp = int(time.time() * 1000) - age_ms
    builder = DefaultRecordBatchBuilder(2, 0, True, producer_id, 0, 0, 2**31 - 1)
    for i in range(records):
        builder.append(i, timestamp, b"hanging-%d" % i, b"held by producer %d" % producer_id, [])
    result = log.append(parse_batches(bytes(builder.build())), strict_first_sequence=False)
    if result.error_code != 0:  # pragma: no cover - a fresh producer id cannot conflict
        raise RuntimeError(f"could not plant a transaction in {topic}-{partition}: {result}")
    state.notify_all()
    return PlantedTransaction(topic, partition, producer_id, 0, result.base_offset, timestamp)


def forget_partition(state: ClusterState, transactional_id: str, topic: str, partition: int) -> None:
    """Make the coordinator drop ``topic-partition`` from ``transactional_id``'s ongoing transaction:
    when it ends, no marker goes there, and the partition keeps the transaction open."""
    md = state.txn.metadata(transactional_id)
    if md is None or (topic, partition) not in md.partitions:
        raise ValueError(f"{transactional_id!r} has no ongoing transaction on {topic}-{partition}")
    del md.partitions[(topic, partition)]
    state.notify_all()
