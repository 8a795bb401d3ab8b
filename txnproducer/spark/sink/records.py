"""Turning Spark's rows into Kafka records, with the column contract of Spark's Kafka sink.

Columns: ``value`` (binary or string, required), ``key`` (binary or string), ``topic`` (string;
falls back to the ``topic`` option), ``partition`` (int; else the producer's partitioner), and
``headers`` (array of ``struct<key: string, value: binary>``).

Why Arrow: the sink is a Spark 4 Arrow writer, so a task receives its rows as pyarrow
``RecordBatch``es, column by column. Turning each column into a Python list is one C call, and the
send loop then touches nothing but the producer; building a ``Row`` per record (what a row-based
Python data source gets) cost more than the send itself. A row with no topic anywhere is a user
error that fails the task, not a record dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ...errors import ConfigError
from ...producer import TransactionalProducer

__all__ = ["check_columns", "send_batches"]

_ALLOWED = {"key", "value", "topic", "partition", "headers"}


def check_columns(names: list[str], default_topic: str | None) -> None:
    """Fail on the driver for a schema the sink cannot write."""
    lowered = [n.lower() for n in names]
    if "value" not in lowered:
        raise ConfigError(f"txnkafka needs a 'value' column; the DataFrame has {names}")
    extra = sorted(set(lowered) - _ALLOWED)
    if extra:
        raise ConfigError(f"txnkafka does not know the column(s) {extra}; allowed: {sorted(_ALLOWED)}")
    if "topic" not in lowered and default_topic is None:
        raise ConfigError("txnkafka needs a 'topic' column or the option topic")


def _column(batch: Any, name: str, as_bytes: bool = False) -> list[Any] | None:
    """The column ``name`` as a Python list (None if absent). ``as_bytes``: a string column comes
    as bytes - the same Arrow buffers read as binary (no copy), so no str is decoded here only to
    be encoded again by the producer."""
    import pyarrow as pa

    for i, field_name in enumerate(batch.schema.names):
        if field_name.lower() == name:
            column = batch.column(i)
            if as_bytes and pa.types.is_string(column.type):
                column = column.cast(pa.binary())
            elif as_bytes and pa.types.is_large_string(column.type):
                column = column.cast(pa.large_binary())
            return list(column.to_pylist())
    return None


def _headers(raw: list[dict[str, Any]] | None) -> list[tuple[str, bytes | None]] | None:
    if not raw:
        return None
    return [(str(h["key"]), h["value"]) for h in raw]


def send_batches(producer: TransactionalProducer, batches: Iterable[Any], default_topic: str | None,
                 after_first: Callable[[TransactionalProducer], None] | None = None) -> int:
    """Send every row of ``batches`` (pyarrow RecordBatches) in the producer's open transaction;
    return how many were sent. ``after_first`` runs once the first batch was handed to the
    producer (the tests' fault hook)."""
    send = producer.send
    count = 0
    for batch in batches:
        rows = batch.num_rows
        if rows == 0:
            continue
        values = _column(batch, "value", as_bytes=True)
        if values is None:
            raise ConfigError(f"txnkafka needs a 'value' column; the rows have {batch.schema.names}")
        keys = _column(batch, "key", as_bytes=True) or [None] * rows
        topics = _column(batch, "topic")
        partitions = _column(batch, "partition")
        headers = _column(batch, "headers")
        if topics is None and partitions is None and headers is None and default_topic:
            for key, value in zip(keys, values, strict=True):  # the common case: one topic, keys and values
                send(default_topic, value, key=key)
        else:
            for i in range(rows):
                topic = (topics[i] if topics is not None else None) or default_topic
                if not topic:
                    raise ConfigError(
                        f"row {count + i} has no topic and the option topic is not set"
                        f" (key {keys[i]!r})")
                send(topic, values[i], key=keys[i],
                     partition=None if partitions is None else partitions[i],
                     headers=None if headers is None else _headers(headers[i]))
        count += rows
        if after_first is not None:
            after_first(producer)
            after_first = None
    return count
