"""The ``txnkafka`` source's options: Spark's Kafka source's names and meanings, parsed once on the driver.

Why Spark's names: a query moves from ``format("kafka")`` to ``format("txnkafka")`` by changing the
format name (docs/guide/spark.md has the table, option by option). What differs is said where it
is decided:

* ``kafka.isolation.level`` defaults to **read_committed** (Spark's consumer default is
  read_uncommitted): a pipeline reading what an exactly-once producer wrote must not see records of
  transactions that abort. ``read_uncommitted`` is allowed.
* There is no consumer group: executors read by assign + seek and the stream's offsets live in
  Spark's checkpoint, so the group options (``groupIdPrefix``, ``kafka.group.id``) are refused
  rather than ignored, as are the options Spark's source refuses itself
  (``kafka.auto.offset.reset``, the deserializers, ``kafka.enable.auto.commit``,
  ``kafka.interceptor.classes``).
* ``fetchOffset.numRetries`` / ``fetchOffset.retryIntervalMs`` are refused: the driver's offset
  lookups retry until ``kafka.default.api.timeout.ms`` (60 s), the one bound to set instead.
* ``kafkaConsumer.pollTimeoutMs`` (default 120000, Spark's ``spark.network.timeout``) bounds how
  long a task waits without its partition's position moving before it fails.
* An unknown option, or one that does not apply (``endingOffsets`` on a stream, the trigger limits
  on a batch read, a sink option such as ``topic``), is a :class:`~txnproducer.ConfigError` naming
  it: Spark ignores some of those silently; a misspelt option falling back to a default is the
  kind of bug found in production.

Every other ``kafka.*`` option is a consumer setting in Java spelling, validated here by
:class:`~txnproducer.ConsumerConfig` (every security protocol it supports; a Java-only setting such
as ``kafka.sasl.jaas.config`` or ``kafka.ssl.truststore.location`` gets the advice of what to set
instead). The options are sent to every executor with the query plan; secrets never appear in their
repr.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

import attrs
from kafka.structs import TopicPartition

from ...config import ProducerConfig
from ...consumer_config import ConsumerConfig
from ...errors import ConfigError
from ..kafka_options import split_options
from .offsets import EARLIEST, LATEST, parse_assign, parse_partition_numbers

__all__ = ["OffsetSpec", "SourceOptions", "Subscription", "parse_time_ms"]

#: lowercased (as PySpark hands them over) -> the name Spark documents, for messages
_NAMES = {n.lower(): n for n in (
    "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets", "startingTimestamp",
    "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy", "failOnDataLoss", "includeHeaders", "minPartitions",
    "maxRecordsPerPartition", "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
    "kafkaConsumer.pollTimeoutMs")}
_STREAM_ONLY = ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay")
_BATCH_ONLY = ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")
_GROUP = ("no consumer group: executors read by assign + seek and the stream's offsets are kept in"
          " Spark's checkpoint, not committed to Kafka")
_REFUSED = {
    "groupidprefix": f"groupIdPrefix names consumer groups; txnkafka has {_GROUP}",
    "fetchoffset.numretries": ("fetchOffset.numRetries: the driver's offset lookups retry until"
                               " kafka.default.api.timeout.ms (default 60000); set that instead"),
    "fetchoffset.retryintervalms": ("fetchOffset.retryIntervalMs: the driver's offset lookups back off by"
                                    " kafka.retry.backoff.ms until kafka.default.api.timeout.ms; set those"),
    "topic": "topic is an option of the txnkafka sink; a read names its topics with subscribe,"
             " subscribePattern or assign",
    "path": "txnkafka reads topics, not a path: use load() without one, and subscribe, subscribePattern"
            " or assign",
}
_REFUSED_KAFKA = {
    "group.id": f"kafka.group.id: txnkafka has {_GROUP}",
    "auto.offset.reset": ("kafka.auto.offset.reset is not supported: set startingOffsets to earliest or"
                          " latest;"
                          " a restarted query always resumes from its checkpoint"),
    "key.deserializer": "kafka.key.deserializer is not supported: keys are binary; deserialize with DataFrame"
                        " functions",
    "value.deserializer": "kafka.value.deserializer is not supported: values are binary; deserialize with"
                          " DataFrame functions",
    "enable.auto.commit": f"kafka.enable.auto.commit is not supported: txnkafka has {_GROUP}",
    "interceptor.classes": "kafka.interceptor.classes is not supported (an interceptor could change records)",
}
_ISOLATION = ("isolation.level", "isolation_level")
DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60_000
#: what the source sets for its consumers unless the user does (docs/guide/spark.md). A kept
#: consumer's fetch ahead (sent before a task ends, held by the broker until data comes or this
#: passes) delays the next task's fetch to that broker when it reads elsewhere: 100 ms, not 500.
CONSUMER_DEFAULTS = {"client.id": "txnkafka-source", "fetch.max.wait.ms": "100"}
_TIME_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_time_ms(text: str, option: str) -> int:
    """A Spark time string (``15m``, ``30s``, ``500ms``, ``1h``; a bare number is milliseconds)."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in ("", *_TIME_UNITS):
        raise ConfigError(f"txnkafka option {option} must be a time such as 15m, 30s or 500ms, got {text!r}")
    return int(int(match.group(1)) * _TIME_UNITS.get(match.group(2) or "ms", 1))


@attrs.frozen
class Subscription:
    """What to read: ``assign`` (fixed partitions), ``subscribe`` (topics) or ``subscribePattern``
    (topics whose whole name matches; new ones are picked up)."""

    kind: str
    topics: frozenset[str] = frozenset()
    pattern: str | None = None
    partitions: frozenset[TopicPartition] = frozenset()

    def describe(self) -> str:
        if self.kind == "assign":
            return "assign " + ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(self.partitions))
        if self.kind == "subscribe":
            return "subscribe " + ",".join(sorted(self.topics))
        return f"subscribePattern {self.pattern}"


@attrs.frozen
class OffsetSpec:
    """Where a read starts or ends: ``earliest``, ``latest``, ``offsets`` (per partition, -2/-1
    allowed), ``timestamps`` (per partition) or ``timestamp`` (every partition); ``option`` names
    the option it came from, for messages."""

    kind: str
    option: str = ""
    offsets: dict[TopicPartition, int] = attrs.field(factory=dict)
    timestamp: int = -1


def _spec(own: dict[str, str], prefix: str, default: str) -> OffsetSpec:
    """Spark's precedence: the global timestamp, then per-partition timestamps, then offsets."""
    if f"{prefix}timestamp" in own:
        name, text = f"{prefix}Timestamp", own[f"{prefix}timestamp"].strip()
        if not re.fullmatch(r"\d+", text):
            raise ConfigError(f"txnkafka option {name} must be a timestamp in ms since the epoch,"
                              f" got {text!r}")
        return OffsetSpec("timestamp", name, timestamp=int(text))
    if f"{prefix}offsetsbytimestamp" in own:
        name = f"{prefix}OffsetsByTimestamp"
        return OffsetSpec("timestamps", name, parse_partition_numbers(
            own[f"{prefix}offsetsbytimestamp"], name, timestamps=True))
    name = f"{prefix}Offsets"
    text = own.get(f"{prefix}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec(text.lower(), name)
    return OffsetSpec("offsets", name, parse_partition_numbers(text, name))


def _int(own: dict[str, str], key: str, minimum: int) -> int | None:
    if key not in own:
        return None
    try:
        value = int(own[key].strip())
    except ValueError:
        raise ConfigError(f"txnkafka option {_NAMES[key]} must be an integer, got {own[key]!r}") from None
    if value < minimum:
        raise ConfigError(f"txnkafka option {_NAMES[key]} must be >= {minimum}, got {value}")
    return value


def _bool(own: dict[str, str], key: str, default: bool) -> bool:
    text = own.get(key, str(default)).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"txnkafka option {_NAMES[key]} must be true or false, got {own[key]!r}")
    return text == "true"


def _subscription(own: dict[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in own]
    if len(given) != 1:
        which = "none" if not given else " and ".join(_NAMES[k] for k in given)
        raise ConfigError("txnkafka reads need exactly one of the options subscribe, subscribePattern,"
                          " assign;"
                          f" got {which}")
    key = given[0]
    text = own[key]
    if key == "assign":
        return Subscription("assign", partitions=parse_assign(text))
    if key == "subscribe":
        topics = frozenset(t.strip() for t in text.split(",") if t.strip())
        if not topics:
            raise ConfigError(f"txnkafka option subscribe names no topic: {text!r}")
        return Subscription("subscribe", topics=topics)
    pattern = text.strip()
    if not pattern:
        raise ConfigError("txnkafka option subscribePattern is empty")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"txnkafka option subscribePattern is not a regular expression: {pattern!r} ({exc})"
                          ) from None
    return Subscription("subscribePattern", pattern=pattern)


def _unknown(key: str) -> ConfigError:
    if key in _REFUSED:
        return ConfigError(f"txnkafka source option refused: {_REFUSED[key]}")
    hint = difflib.get_close_matches(key, list(_NAMES), n=1, cutoff=0.7)
    suggestion = f"; did you mean {_NAMES[hint[0]]}?" if hint else ""
    return ConfigError(f"unknown txnkafka source option {key!r}{suggestion} (the options: "
                       f"{', '.join(sorted(_NAMES.values()))}, and kafka.<consumer setting>)")


@attrs.frozen
class SourceOptions:
    """The parsed options (module docstring). ``consumer_settings``: the ``kafka.*`` options in
    Java spelling without the isolation level, plus :data:`CONSUMER_DEFAULTS` (secrets: never in
    the repr); ``read_committed``: the isolation level."""

    consumer_settings: dict[str, str] = attrs.field(repr=lambda s: repr(ProducerConfig.redacted(s)))
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    read_committed: bool = True
    no_match_latest: bool = False  # startingOffsetsByTimestampStrategy=latest
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int | None = None  # None: not given (15 minutes)
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS

    @classmethod
    def parse(cls, options: Mapping[str, Any], *, streaming: bool) -> SourceOptions:
        split = split_options(options)
        split.require_bootstrap()
        own = split.own
        for key in own:
            if key not in _NAMES:
                raise _unknown(key)
        misplaced = [k for k in (_BATCH_ONLY if streaming else _STREAM_ONLY) if k in own]
        if misplaced:
            where = "batch reads (spark.read)" if streaming else "streaming queries (spark.readStream)"
            raise ConfigError(f"txnkafka option {_NAMES[misplaced[0]]} applies to {where} only")
        settings, read_committed = _consumer_settings(split.kafka)
        starting = _spec(own, "starting", "earliest" if not streaming else "latest")
        ending = _spec(own, "ending", "latest")
        _check_bounds(starting, ending, streaming)
        strategy = own.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
        if strategy not in ("error", "latest"):
            raise ConfigError("txnkafka option startingOffsetsByTimestampStrategy must be error or latest,"
                              f" got {own['startingoffsetsbytimestampstrategy']!r}")
        most = _int(own, "maxoffsetspertrigger", 1)
        least = _int(own, "minoffsetspertrigger", 1)
        if most is not None and least is not None and least > most:
            raise ConfigError(f"txnkafka option minOffsetsPerTrigger ({least}) is higher than"
                              f" maxOffsetsPerTrigger ({most})")
        delay = own.get("maxtriggerdelay")
        return cls(
            consumer_settings=settings,
            subscription=_subscription(own),
            starting=starting,
            ending=ending,
            read_committed=read_committed,
            no_match_latest=strategy == "latest",
            fail_on_data_loss=_bool(own, "failondataloss", True),
            include_headers=_bool(own, "includeheaders", False),
            min_partitions=_int(own, "minpartitions", 1),
            max_records_per_partition=_int(own, "maxrecordsperpartition", 1),
            max_offsets_per_trigger=most,
            min_offsets_per_trigger=least,
            max_trigger_delay_ms=None if delay is None else parse_time_ms(delay, "maxTriggerDelay"),
            poll_timeout_ms=_int(own, "kafkaconsumer.polltimeoutms", 1) or DEFAULT_POLL_TIMEOUT_MS,
        )

    @property
    def trigger_limits(self) -> bool:
        """Whether an option of admission control is given (PySpark 4.2+ only)."""
        return (self.max_offsets_per_trigger is not None or self.min_offsets_per_trigger is not None
                or self.max_trigger_delay_ms is not None)

    def consumer_config(self) -> ConsumerConfig:
        """The executors' consumer settings: no group, and a position out of range is the
        reader's to handle (``failOnDataLoss``), never a silent reset."""
        return ConsumerConfig.from_mapping({**self.consumer_settings, "auto.offset.reset": "none"})


def _consumer_settings(kafka: dict[str, str]) -> tuple[dict[str, str], bool]:
    settings = dict(kafka)
    for key in list(settings):
        refused = _REFUSED_KAFKA.get(key.lower().replace("_", "."))
        if refused is not None:
            raise ConfigError(f"txnkafka source option refused: {refused}")
    level = "read_committed"
    for key in _ISOLATION:
        if key in settings:
            level = settings.pop(key).strip().lower()
    if level not in ("read_committed", "read_uncommitted"):
        raise ConfigError(f"kafka.isolation.level must be read_committed or read_uncommitted, got {level!r}")
    for name, value in CONSUMER_DEFAULTS.items():
        if name not in settings and name.replace(".", "_") not in settings:
            settings[name] = value
    ConsumerConfig.from_mapping(settings)  # validate now, on the driver
    return settings, level == "read_committed"


def _check_bounds(starting: OffsetSpec, ending: OffsetSpec, streaming: bool) -> None:
    """Spark's rules: a batch read starts at no ``latest`` and ends at no ``earliest``; per-partition
    starts and ends name the same partitions, and no start is past its end."""
    if streaming:
        return
    if starting.kind == "latest" or (starting.kind == "offsets" and LATEST in starting.offsets.values()):
        raise ConfigError(f"txnkafka option {starting.option}: a batch read cannot start at latest (-1)")
    if ending.kind == "earliest" or (ending.kind == "offsets" and EARLIEST in ending.offsets.values()):
        raise ConfigError(f"txnkafka option {ending.option}: a batch read cannot end at earliest (-2)")
    if starting.kind == ending.kind and starting.kind in ("offsets", "timestamps"):
        if set(starting.offsets) != set(ending.offsets):
            raise ConfigError(f"txnkafka options {starting.option} and {ending.option} must name the same"
                              " partitions")
        for tp, first in starting.offsets.items():
            last = ending.offsets[tp]
            if first >= 0 and last >= 0 and first > last:
                raise ConfigError(f"txnkafka option {starting.option} for {tp.topic}-{tp.partition} ({first})"
                                  f" is past {ending.option} ({last})")
