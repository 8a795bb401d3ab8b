"""How the command line shows results: ``kafka-transactions.sh``'s tables, or JSON with ``--json``.

The tables keep the Java tool's column names and order, so scripts and habits written for it carry
over; what the Java tool does not show (why a transaction is hanging, which producer holds a partition's
last stable offset) follows the table as lines of its own. JSON is ``results.to_jsonable`` of the same
values, one document per command.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from .abort import AbortResult, FenceAbortPlan, MarkerAbortPlan
from .client import TransactionList
from .results import HangingTransaction, PartitionProducers, TransactionDescription, to_jsonable
from .spark_source_view import SparkSourceProgress
from .spark_view import SparkSinkStatus

__all__ = [
    "as_json",
    "description_table",
    "hanging_table",
    "listing_table",
    "producers_table",
    "spark_source_text",
    "spark_text",
    "table",
]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns as wide as their widest cell, separated by two spaces."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


def as_json(value: Any) -> str:
    return json.dumps(to_jsonable(value), indent=2, sort_keys=True)


def _none(value: int | None) -> object:
    return "None" if value is None else value


def listing_table(found: TransactionList) -> str:
    rows = [(t.transactional_id, t.coordinator_id, t.producer_id, t.state) for t in found.listings]
    text = table(("TransactionalId", "Coordinator", "ProducerId", "TransactionState"), rows)
    return "\n".join([text, *(f"note: {n}" for n in found.notes)])


def description_table(descriptions: Sequence[TransactionDescription], now_ms: int | None = None) -> str:
    now = int(time.time() * 1000) if now_ms is None else now_ms
    rows = [
        (
            d.coordinator_id,
            d.transactional_id,
            d.producer_id,
            d.producer_epoch,
            d.state,
            d.timeout_ms,
            _none(d.start_time_ms),
            _none(d.duration_ms(now)),
            ",".join(str(p) for p in d.partitions),
        )
        for d in descriptions
    ]
    return table(
        (
            "CoordinatorId",
            "TransactionalId",
            "ProducerId",
            "ProducerEpoch",
            "TransactionState",
            "TransactionTimeoutMs",
            "CurrentTransactionStartTimeMs",
            "TransactionDurationMs",
            "TopicPartitions",
        ),
        rows,
    )


def producers_table(found: PartitionProducers) -> str:
    rows = [
        (
            p.producer_id,
            p.producer_epoch,
            -1 if p.coordinator_epoch is None else p.coordinator_epoch,
            p.last_sequence,
            p.last_timestamp,
            _none(p.txn_start_offset),
        )
        for p in found.producers
    ]
    text = table(
        (
            "ProducerId",
            "ProducerEpoch",
            "LatestCoordinatorEpoch",
            "LastSequence",
            "LastTimestamp",
            "CurrentTransactionStartOffset",
        ),
        rows,
    )
    head = f"{found.partition} on broker {found.broker_id}"
    if found.last_stable_offset is not None and found.high_watermark is not None:
        head += f": last stable offset {found.last_stable_offset}, high watermark {found.high_watermark}"
        holder = found.lso_holder
        if holder is not None:
            head += (
                f"; held by the open transaction of producer {holder.producer_id} (epoch"
                f" {holder.producer_epoch}, from offset {holder.txn_start_offset})"
            )
    return f"{head}\n{text}"


def hanging_table(found: Sequence[HangingTransaction]) -> str:
    rows = [
        (
            h.partition.topic,
            h.partition.partition,
            h.producer_id,
            h.producer_epoch,
            -1 if h.coordinator_epoch is None else h.coordinator_epoch,
            h.start_offset,
            h.last_timestamp,
            h.duration_ms // 60_000,
        )
        for h in found
    ]
    text = table(
        (
            "Topic",
            "Partition",
            "ProducerId",
            "ProducerEpoch",
            "CoordinatorEpoch",
            "StartOffset",
            "LastTimestamp",
            "Duration(min)",
        ),
        rows,
    )
    return "\n".join([text, *(f"{h.partition} producer {h.producer_id}: {h.reason}" for h in found)])


def plan_text(plan: MarkerAbortPlan | FenceAbortPlan) -> str:
    return f"plan: {plan.describe()}"


def abort_text(result: AbortResult) -> str:
    return f"done: {result.outcome}"


def spark_text(status: SparkSinkStatus) -> str:
    lines = [f"query prefix {status.prefix!r} (state topic {status.state_topic!r})"]
    d = status.decision
    if d is None:
        lines.append("latest decision: none")
    else:
        lines.append(
            f"latest decision: batch {d['batch']} {d['outcome']} ({d['stage']}), {len(d['states'])}"
            f" prepared transaction(s), state topic offset {d['offset']}"
        )
    rows = [
        (
            t.transactional_id,
            t.state,
            t.producer_id,
            t.producer_epoch,
            _none(t.batch),
            _none(t.attempt),
            "yes" if t.decided else "no",
            ",".join(str(p) for p in t.partitions) or "-",
            ",".join(str(p) for p in t.holds) or "-",
        )
        for t in status.transactions
    ]
    lines.append(
        table(
            (
                "TransactionalId",
                "TransactionState",
                "ProducerId",
                "ProducerEpoch",
                "Batch",
                "Attempt",
                "Decided",
                "TopicPartitions",
                "HoldsLSO",
            ),
            rows,
        )
    )
    lines.extend(
        f"{tp}: last stable offset {lso}, high watermark {hw}"
        for tp, (lso, hw) in sorted(status.offsets.items())
    )
    lines.extend(f"note: {n}" for n in status.notes)
    lines.append(f"verdict: {status.verdict}")
    return "\n".join(lines)


def spark_source_text(progress: SparkSourceProgress) -> str:
    """A streaming query's Kafka input: committed and planned offsets against Kafka's ends."""
    lines = [f"checkpoint {progress.checkpoint}: committed micro-batch {_none(progress.committed_batch)},"
             f" planned {_none(progress.planned_batch)}"]
    rows = [(p.source, p.partition, _none(p.committed), _none(p.planned), p.last_stable, p.high_watermark,
             _none(p.lag)) for p in progress.partitions]
    headers = ("Source", "TopicPartition", "Committed", "Planned", "LastStableOffset", "HighWatermark", "Lag")
    lines.append(table(headers, rows))
    lines.append(f"input: {progress.verdict}")
    return "\n".join(lines)
