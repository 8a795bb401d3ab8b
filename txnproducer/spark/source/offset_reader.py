"""The driver's questions to Kafka: which partitions to read, their offsets (Spark's ``KafkaOffsetReader``).

Why the admin tools' connection (:mod:`txnproducer.admin.connection`): it is a synchronous request
path on the producer's network client - every security protocol, an authentication failure reported
at once as :class:`~txnproducer.AuthenticationError` naming the broker, every wait bounded by
``kafka.default.api.timeout.ms`` - and the driver's questions are a handful of requests per
micro-batch: Metadata (:func:`~txnproducer.admin.metadata.fetch_layout`: the topics and their
partitions, a pattern matched against every topic the principal may describe) and ListOffsets
(:func:`~txnproducer.admin.list_offsets.list_offsets`). Spark's own source asks the same questions
through Kafka's Admin client since Spark 3.1, for the same reason: no consumer group, no fetching.

An unreachable cluster is a :class:`~txnproducer.TimeoutError` naming the bootstrap servers after
``kafka.default.api.timeout.ms``; a topic the principal may not describe is an
:class:`~txnproducer.admin.AdminAuthorizationError` naming the ACL.

The "latest" offset is the isolation level's: the last stable offset under read_committed (a range
never ends inside an open transaction, so a task never waits for one to finish), else the high
watermark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka.structs import TopicPartition

from ...admin.connection import AdminConnection
from ...admin.list_offsets import list_offsets
from ...admin.metadata import fetch_layout
from ...admin.results import TopicPartition as AdminPartition
from ...admin.settings import CONNECTION_KEYS, AdminSettings
from ...consumer_config import ConsumerConfig
from ...errors import ConfigError
from .offsets import EARLIEST, LATEST, PartitionOffsets, describe
from .options import OffsetSpec, SourceOptions

__all__ = ["OffsetReader", "admin_settings"]

_UNKNOWN_TOPIC = 3  # UNKNOWN_TOPIC_OR_PARTITION


def admin_settings(consumer_settings: Mapping[str, str]) -> AdminSettings:
    """The connection settings among the consumer's (every other setting concerns fetching)."""
    normalized = ConsumerConfig.normalize_keys(consumer_settings)
    connection = {k: v for k, v in normalized.items() if k in CONNECTION_KEYS}
    timeout = ConsumerConfig.from_mapping(consumer_settings).default_api_timeout_ms
    return AdminSettings.from_mapping({**connection, "default.api.timeout.ms": timeout})


class OffsetReader:
    """Partitions and offsets for one source (a batch read's planning, or a stream's lifetime);
    connects on first use; :meth:`close` it (a context manager)."""

    def __init__(self, options: SourceOptions, *, batch: bool) -> None:
        self.options = options
        self._batch = batch
        self._conn: AdminConnection | None = None

    def __enter__(self) -> OffsetReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self) -> AdminConnection:
        if self._conn is None:
            self._conn = AdminConnection(admin_settings(self.options.consumer_settings))
        return self._conn

    # -- partitions --------------------------------------------------------------------------------

    def partitions(self) -> set[TopicPartition]:
        """The partitions the subscription covers now. ``assign``: as given (a missing one fails at
        the offset lookup, named); ``subscribe``: the partitions of the named topics that exist - a
        batch read of a topic that does not exist is a ConfigError naming it (a stream waits for it,
        as Spark's does); ``subscribePattern``: every topic whose whole name matches."""
        sub = self.options.subscription
        if sub.kind == "assign":
            return set(sub.partitions)
        conn = self._connection()
        deadline = conn.deadline()
        if sub.kind == "subscribe":
            topics = fetch_layout(conn, sorted(sub.topics), deadline).topics
            missing = sorted(t for t, lay in topics.items() if lay.error == _UNKNOWN_TOPIC)
            if missing and self._batch:
                raise ConfigError(f"txnkafka: topic(s) {', '.join(missing)} of option subscribe do not exist"
                                  " (UNKNOWN_TOPIC_OR_PARTITION)")
        else:
            pattern = re.compile(str(sub.pattern))
            topics = {n: t for n, t in fetch_layout(conn, None, deadline).topics.items()
                      if pattern.fullmatch(n) and not t.internal}
        return {TopicPartition(name, p) for name, topic in topics.items()
                if topic.error != _UNKNOWN_TOPIC for p in topic.partitions}

    # -- offsets -----------------------------------------------------------------------------------

    def _list(self, wanted: Mapping[TopicPartition, int]) -> PartitionOffsets:
        if not wanted:
            return {}
        conn = self._connection()
        found = list_offsets(conn, {AdminPartition(tp.topic, tp.partition): ts for tp, ts in wanted.items()},
                             conn.deadline(), read_committed=self.options.read_committed)
        return {TopicPartition(tp.topic, tp.partition): offset for tp, offset in found.items()}

    def earliest(self, partitions: Iterable[TopicPartition]) -> PartitionOffsets:
        """The log start offset of each partition."""
        return self._list(dict.fromkeys(partitions, EARLIEST))

    def latest(self, partitions: Iterable[TopicPartition]) -> PartitionOffsets:
        """The end of each partition for the isolation level (module docstring)."""
        return self._list(dict.fromkeys(partitions, LATEST))

    def by_timestamp(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        """The first offset at or after each timestamp (None: no record is that recent)."""
        found = self._list(timestamps)
        return {tp: (offset if offset >= 0 else None) for tp, offset in found.items()}

    def resolve(self, spec: OffsetSpec, partitions: set[TopicPartition], *, starting: bool,
                report: Callable[[str], None]) -> PartitionOffsets:
        """``spec`` as an offset per partition. Per-partition offsets must name exactly the
        partitions read (Spark's rule), -2/-1 become the earliest/latest offset, and one outside the
        partition's log is data loss (``report``; going on, the log's start or end); a timestamp
        with no record at or after it is, for a start, an error
        (``startingOffsetsByTimestampStrategy=error``, Spark's default) or the latest offset
        (``latest``), and for an end the latest offset."""
        if spec.kind == "earliest":
            return self.earliest(partitions)
        if spec.kind == "latest":
            return self.latest(partitions)
        if spec.kind in ("offsets", "timestamps") and set(spec.offsets) != partitions:
            raise ConfigError(
                f"txnkafka option {spec.option} must name every partition read (-2: earliest, -1: latest);"
                f" it names {describe(spec.offsets)}, the read covers {describe(partitions) or 'none'}"
            )
        if spec.kind == "offsets":
            out = self._within_logs(spec, {tp: o for tp, o in spec.offsets.items() if o >= 0}, report)
            out.update(self.earliest(tp for tp, o in spec.offsets.items() if o == EARLIEST))
            out.update(self.latest(tp for tp, o in spec.offsets.items() if o == LATEST))
            return out
        wanted = spec.offsets if spec.kind == "timestamps" else dict.fromkeys(partitions, spec.timestamp)
        found = self.by_timestamp(wanted)
        unmatched = sorted(tp for tp, offset in found.items() if offset is None)
        if unmatched and starting and not self.options.no_match_latest:
            raise ConfigError(
                f"txnkafka option {spec.option}: no record of {describe(unmatched)} has a timestamp at or"
                " after"
                f" {_timestamps(wanted, unmatched)}; set startingOffsetsByTimestampStrategy=latest to start"
                " those partitions at their latest offset instead"
            )
        out = {tp: offset for tp, offset in found.items() if offset is not None}
        out.update(self.latest(unmatched))
        return out


    def _within_logs(self, spec: OffsetSpec, offsets: PartitionOffsets,
                     report: Callable[[str], None]) -> PartitionOffsets:
        first, last = self.earliest(offsets), self.latest(offsets)
        out = dict(offsets)
        for tp, offset in sorted(offsets.items()):
            if offset < first[tp]:
                report(f"{spec.option} for {tp.topic}-{tp.partition} is {offset}, below the start of its log"
                       f" ({first[tp]}): the records before it were deleted")
                out[tp] = first[tp]
            elif offset > last[tp]:
                report(f"{spec.option} for {tp.topic}-{tp.partition} is {offset}, past the end of its log"
                       f" ({last[tp]})")
                out[tp] = last[tp]
        return out


def _timestamps(wanted: Mapping[TopicPartition, int], partitions: list[TopicPartition]) -> Any:
    values = sorted({wanted[tp] for tp in partitions})
    return values[0] if len(values) == 1 else values
