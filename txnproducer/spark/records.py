"""Turning a Spark row into a Kafka record, with the column contract of Spark's Kafka sink.

Columns: ``value`` (binary or string, required), ``key`` (binary or string), ``topic`` (string;
falls back to the ``topic`` option), ``partition`` (int; else the producer's partitioner), and
``headers`` (array of ``struct<key: string, value: binary>``). Checked per row because a row with
no topic anywhere is a user error that must fail the task, not be dropped.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError

__all__ = ["KafkaRecord", "check_columns", "row_to_record"]

KafkaRecord = tuple[str, Any, Any, "int | None", "list[tuple[str, bytes | None]]"]

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


def _field(row: Any, name: str) -> Any:
    try:
        return row[name]
    except (KeyError, ValueError, IndexError):
        return None


def _bytes(value: Any) -> Any:
    if isinstance(value, bytearray):
        return bytes(value)
    return value  # bytes, str (the producer encodes UTF-8) or None


def row_to_record(row: Any, default_topic: str | None) -> KafkaRecord:
    topic = _field(row, "topic") or default_topic
    if not topic:
        raise ConfigError(f"row has no topic and the option topic is not set: {row!r}")
    partition = _field(row, "partition")
    headers: list[tuple[str, bytes | None]] = []
    for header in _field(row, "headers") or []:
        headers.append((str(header["key"]), _bytes(header["value"])))
    return (str(topic), _bytes(_field(row, "key")), _bytes(_field(row, "value")),
            None if partition is None else int(partition), headers)
