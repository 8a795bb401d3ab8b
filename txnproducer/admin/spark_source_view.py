"""``txnproducer spark status --checkpoint-dir``: how far a streaming query has read its Kafka input.

A Structured Streaming query keeps its progress in its checkpoint, not in Kafka: the ``offsets/``
log holds, per micro-batch, the offsets each source will have read when the batch is done (written
before the batch runs), and ``commits/`` marks the batches whose sink committed. The ``txnkafka``
source writes Spark's Kafka source's JSON there (``{"topic": {"0": 42}}``, the next offset to read
of each partition), so this view works for a query on ``format("kafka")`` too. It joins them with
Kafka's side - each partition's last stable offset (what a read_committed query can reach) and high
watermark - and says:

* **committed**: the offsets of the last committed micro-batch - what the query has read and written
  for good; **lag**: the last stable offset minus it (offsets, markers included: on a transactional
  topic a lag of a few offsets may hold no record at all);
* **planned**: a micro-batch recorded in ``offsets/`` and not yet in ``commits/`` - in flight, or
  left by a driver that stopped; a restarted query reads exactly that range again.

Reading is all it does. The directory must be readable where the command runs (a local path; for a
checkpoint on HDFS or object storage, a copy of its ``offsets/`` and ``commits/``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from txnproducer.errors import ConfigError

from .connection import AdminConnection
from .list_offsets import stable_and_end_offsets
from .metadata import fetch_layout
from .results import TopicPartition

__all__ = ["SourcePartition", "SparkSourceProgress", "read_checkpoint", "spark_source_progress"]

_UNKNOWN_TOPIC = 3


@attrs.frozen
class SourcePartition:
    """One input partition: ``committed`` (None: not in the last committed batch, e.g. new since),
    ``planned`` (the batch in flight's end, None without one), the last stable offset and high
    watermark now (-1: the partition does not exist any more)."""

    source: int
    partition: TopicPartition
    committed: int | None
    planned: int | None
    last_stable: int
    high_watermark: int

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.last_stable < 0:
            return None
        return max(self.last_stable - self.committed, 0)


@attrs.frozen
class SparkSourceProgress:
    """The view (module docstring). ``committed_batch``/``planned_batch``: micro-batch ids (None:
    none); ``partitions``: every partition of a Kafka source the checkpoint names."""

    checkpoint: str
    committed_batch: int | None
    planned_batch: int | None
    partitions: tuple[SourcePartition, ...]
    verdict: str


def _batches(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def _kafka_offsets(line: str) -> dict[TopicPartition, int] | None:
    """A source's line of an ``offsets/`` file, if it is Kafka offsets (another source's is not)."""
    try:
        value: Any = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or not value:
        return None
    out: dict[TopicPartition, int] = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            return None
        if not all(str(p).isdigit() and isinstance(o, int) for p, o in parts.items()):
            return None
        out.update({TopicPartition(str(topic), int(p)): int(o) for p, o in parts.items()})
    return out


def read_checkpoint(checkpoint: str, batch: int) -> list[dict[TopicPartition, int] | None]:
    """The sources' offsets of micro-batch ``batch`` (None for a source that is not Kafka's)."""
    path = Path(checkpoint) / "offsets" / str(batch)
    lines = path.read_text().splitlines()
    if not lines or not lines[0].startswith("v"):
        raise ConfigError(f"{path} is not a Structured Streaming offset log entry")
    return [_kafka_offsets(line) for line in lines[2:]]  # version, batch metadata, one line per source


def spark_source_progress(conn: AdminConnection, checkpoint: str) -> SparkSourceProgress:
    """The view of the query whose checkpoint directory is ``checkpoint`` (module docstring)."""
    root = Path(checkpoint)
    planned_batches = _batches(root / "offsets")
    if not planned_batches:
        raise ConfigError(f"{checkpoint} holds no offsets/ log: is it a streaming query's checkpoint"
                          " (its checkpointLocation), and has the query run a micro-batch?")
    committed_batch = next(iter(reversed(_batches(root / "commits"))), None)
    last_planned = planned_batches[-1]
    committed = read_checkpoint(checkpoint, committed_batch) if committed_batch is not None else []
    planned = read_checkpoint(checkpoint, last_planned) if last_planned != committed_batch else []
    sources = max(len(committed), len(planned))
    rows: list[tuple[int, TopicPartition, int | None, int | None]] = []
    for source in range(sources):
        done = committed[source] if source < len(committed) else None
        ahead = planned[source] if source < len(planned) else None
        for tp in sorted(set(done or {}) | set(ahead or {})):
            rows.append((source, tp, (done or {}).get(tp), (ahead or {}).get(tp)))
    deadline = conn.deadline()
    partitions = sorted({tp for _, tp, _, _ in rows})
    names = sorted({tp.topic for tp in partitions})
    topics = fetch_layout(conn, names, deadline).topics if partitions else {}
    alive = [tp for tp in partitions
             if topics[tp.topic].error != _UNKNOWN_TOPIC and tp.partition in topics[tp.topic].partitions]
    ends = stable_and_end_offsets(conn, alive, deadline) if alive else {}
    result = tuple(SourcePartition(source, tp, done, ahead, *ends.get(tp, (-1, -1)))
                   for source, tp, done, ahead in rows)
    in_flight = None if last_planned == committed_batch else last_planned
    return SparkSourceProgress(checkpoint, committed_batch, in_flight, result,
                               _verdict(committed_batch, in_flight, result))


def _verdict(committed: int | None, planned: int | None, partitions: Sequence[SourcePartition]) -> str:
    gone = [str(p.partition) for p in partitions if p.last_stable < 0]
    lags = [p.lag for p in partitions if p.lag is not None]
    behind = sum(lags)
    parts = []
    if committed is None:
        parts.append("no micro-batch committed yet.")
    elif not partitions:
        parts.append(f"micro-batch {committed} committed; the checkpoint names no Kafka partition.")
    elif behind == 0:
        parts.append(f"caught up: micro-batch {committed} committed everything up to the last stable"
                     " offsets.")
    else:
        worst = max((p for p in partitions if p.lag), key=lambda p: p.lag or 0)
        parts.append(f"{behind} offset(s) behind the last stable offsets after micro-batch {committed}"
                     f" (most on {worst.partition}: {worst.lag}).")
    if planned is not None:
        parts.append(f"micro-batch {planned} is planned and not committed: in flight, or left by a driver"
                     " that stopped (a restarted query reads the same offsets again).")
    if gone:
        parts.append(f"partition(s) {', '.join(gone)} no longer exist: the query fails on them unless"
                     " failOnDataLoss=false.")
    return " ".join(parts)
