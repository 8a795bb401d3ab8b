"""Partition offsets as Spark's Kafka source writes them: ``{"topic": {"0": 23, "1": -1}}``.

Why Spark's own JSON: the same shape is what a user writes in ``startingOffsets``/``endingOffsets``
(``-2`` the earliest offset, ``-1`` the latest), in ``assign`` (``{"topic": [0, 1]}``) and in
``startingOffsetsByTimestamp`` (timestamps in place of offsets), and it is what Structured
Streaming keeps in the checkpoint's ``offsets/`` log for each micro-batch - so a query's options,
its checkpoint and ``txnproducer spark status`` all read one format, and a reader of a checkpoint
that knows Spark's Kafka source knows ours. An offset in the checkpoint is the position *after*
the batch: the next offset to read, as the Java consumer's ``position()``; under read_committed it
may be a marker's or an aborted record's offset (module ``planning``: never data loss).

The checkpoint's JSON is written canonically (topics sorted, partitions in numeric order): Spark
decides "no new data" by comparing two offsets' JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kafka.structs import TopicPartition

from ...errors import ConfigError

__all__ = ["EARLIEST", "LATEST", "PartitionOffsets", "from_checkpoint", "parse_assign",
           "parse_partition_numbers", "to_checkpoint"]

#: the special offsets of ``startingOffsets``/``endingOffsets`` JSON (Spark's, the ListOffsets API's)
EARLIEST = -2
LATEST = -1

PartitionOffsets = dict[TopicPartition, int]

_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_TIMESTAMP_EXAMPLE = '{"topicA":{"0":1700000000000,"1":1700000000000}}'


def _load(text: str, option: str, example: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ConfigError(f"txnkafka option {option} is not JSON: expected e.g. {example},"
                          f" got {text!r}") from None


def parse_partition_numbers(text: str, option: str, *, timestamps: bool = False) -> PartitionOffsets:
    """``{"topic": {"partition": number}}`` of an option (offsets, or timestamps with
    ``timestamps``): ConfigError naming the option and showing the expected shape."""
    example = _TIMESTAMP_EXAMPLE if timestamps else _EXAMPLE
    value = _load(text, option, example)
    wrong = ConfigError(f"txnkafka option {option}: expected e.g. {example}, got {text!r}")
    if not isinstance(value, dict):
        raise wrong
    out: PartitionOffsets = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict) or not topic:
            raise wrong
        for part, number in parts.items():
            if not _is_int(number) or not str(part).isdigit():
                raise wrong
            if timestamps and number < 0:
                raise ConfigError(f"txnkafka option {option}: timestamp {number} of {topic}-{part}"
                                  " is negative")
            if not timestamps and number < EARLIEST:
                raise ConfigError(
                    f"txnkafka option {option}: offset {number} of {topic}-{part} is not an offset:"
                    " use an offset >= 0, -2 (earliest) or -1 (latest)"
                )
            out[TopicPartition(topic, int(part))] = int(number)
    if not out:
        raise ConfigError(f"txnkafka option {option} names no partition: expected e.g. {example}")
    return out


def parse_assign(text: str) -> frozenset[TopicPartition]:
    """The ``assign`` option: ``{"topicA": [0, 1], "topicB": [2, 4]}``."""
    example = '{"topicA":[0,1],"topicB":[2,4]}'
    value = _load(text, "assign", example)
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"txnkafka option assign: expected e.g. {example}, got {text!r}")
    out: set[TopicPartition] = set()
    for topic, parts in value.items():
        if not topic or not isinstance(parts, list) or not all(_is_int(p) and p >= 0 for p in parts):
            raise ConfigError(f"txnkafka option assign: expected e.g. {example}, got {text!r}")
        out.update(TopicPartition(topic, p) for p in parts)
    if not out:
        raise ConfigError(f"txnkafka option assign names no partition: expected e.g. {example}")
    return frozenset(out)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def to_checkpoint(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The offsets as Spark's Kafka source's JSON object, canonically ordered (module docstring)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_checkpoint(value: Mapping[str, Any] | None) -> PartitionOffsets:
    """Offsets from a checkpoint's JSON object (``{}`` or None: no partition yet)."""
    out: PartitionOffsets = {}
    for topic, parts in (value or {}).items():
        if not isinstance(parts, Mapping):
            raise ValueError(f"not a txnkafka (Spark Kafka source) offset: {dict(value or {})!r}")
        for part, offset in parts.items():
            out[TopicPartition(str(topic), int(part))] = int(offset)
    return out


def describe(partitions: Iterable[TopicPartition], limit: int = 8) -> str:
    """``t-0, t-1, ...`` for messages (at most ``limit`` named)."""
    names = [f"{tp.topic}-{tp.partition}" for tp in sorted(partitions)]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more
