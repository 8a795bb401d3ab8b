"""``spark.readStream.format("txnkafka")``: a micro-batch stream whose offsets live in Spark's checkpoint.

Spark drives this object on the driver, in a Python worker that lives as long as the query:
``initialOffset`` (a new query: ``startingOffsets``, default latest, resolved once and written to
the checkpoint by Spark), then per trigger ``latestOffset`` (the end of the next micro-batch),
``partitions(start, end)`` (its tasks) and ``commit(end)``. The offsets are Spark's Kafka source's
JSON (:mod:`.offsets`): a restarted query resumes from the checkpoint, and a micro-batch planned but
not committed before a driver died is read again with the very same ranges - what makes
``readStream.format("txnkafka")`` -> ``writeStream.format("txnkafka")`` exactly once. Nothing is
committed to Kafka (no consumer group).

Under read_committed a micro-batch ends at each partition's last stable offset: every record below
it is decided, so a task never waits for an open transaction, and a transaction still open is read by
a later micro-batch once it commits (or skipped, aborted). New partitions and, with
``subscribePattern``, new topics are picked up at the next trigger, read from their first offset;
partitions that disappear, new ones that do not start at 0 and offsets that go back are data loss
(:mod:`.planning`).

Admission control (PySpark 4.2+: ``latestOffset(start, limit)``): ``maxOffsetsPerTrigger`` caps a
micro-batch's offsets, shared among partitions by what each has waiting; ``minOffsetsPerTrigger``
waits for that many (at most ``maxTriggerDelay``, 15 minutes, after the last micro-batch), skipped
under ``Trigger.AvailableNow``, which reads up to the offsets found when the query started
(``prepareForTriggerAvailableNow``). Spark's ``Trigger.Once`` and any engine call with
``ReadAllAvailable`` read everything. PySpark 4.1 has no admission control in its Python API: it
calls ``latestOffset()`` without a start or a limit, so those three options are refused there with
an error naming the version they need, rather than ignored.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from kafka.structs import TopicPartition
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from ..._internal.log import get_logger
from ...admin.errors import UnknownPartitionError
from ...errors import ConfigError
from .data_loss import DataLossReport
from .offset_reader import OffsetReader
from .offsets import PartitionOffsets, from_checkpoint, to_checkpoint
from .options import DEFAULT_MAX_TRIGGER_DELAY_MS, SourceOptions
from .planning import delay_batch, rate_limit, split_ranges, stream_ranges
from .reader import read_partition

__all__ = ["ADMISSION_CONTROL", "TxnKafkaStreamReader"]

try:  # PySpark 4.2+
    from pyspark.sql.streaming import datasource as _limits

    ADMISSION_CONTROL = True
    _AvailableNow: Any = _limits.SupportsTriggerAvailableNow
except ImportError:  # PySpark 4.1: latestOffset() takes no start and no limit
    _limits = None  # type: ignore[assignment]
    ADMISSION_CONTROL = False
    _AvailableNow = object

_log = get_logger("txnproducer.spark")
_LIMIT_OPTIONS = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")


def _now_ms() -> int:
    return int(time.time() * 1000)


class TxnKafkaStreamReader(DataSourceStreamReader, _AvailableNow):  # type: ignore[misc]
    """The reader of ``spark.readStream.format("txnkafka")`` (module docstring)."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        if not ADMISSION_CONTROL and options.trigger_limits:
            import pyspark

            raise ConfigError(
                f"txnkafka options {', '.join(_LIMIT_OPTIONS)} need PySpark 4.2+ (admission control in the"
                f" Python Data Source API); this is PySpark {pyspark.__version__}, which reads all available"
                " offsets in every micro-batch"
            )
        self.options = options
        self.schema = schema
        self._kafka: OffsetReader | None = None
        self._report = DataLossReport(options.fail_on_data_loss)
        self._last_trigger_ms = 0  # as Spark's: the first micro-batch is never delayed
        self._available_now = False
        self._target: PartitionOffsets | None = None  # Trigger.AvailableNow: the offsets to reach
        self._latest: PartitionOffsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_kafka"] = None  # connections stay on the driver (the object goes to executors)
        return state

    @property
    def kafka(self) -> OffsetReader:
        if self._kafka is None:
            self._kafka = OffsetReader(self.options, batch=False)
        return self._kafka

    # -- offsets -----------------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, dict[str, int]]:
        partitions = self.kafka.partitions()
        offsets = self.kafka.resolve(self.options.starting, partitions, starting=True, report=self._report)
        _log.info("txn.spark_source_started", subscription=self.options.subscription.describe(),
                  partitions=len(offsets))
        return to_checkpoint(offsets)

    def latestOffset(self, start: dict[str, Any] | None = None,
                     limit: Any = None) -> dict[str, dict[str, int]]:
        if self._available_now and self._target is not None:
            latest = self._target
        else:
            latest = self.kafka.latest(self.kafka.partitions())
            if self._available_now:
                self._target = latest
        self._latest = latest
        if start is None or limit is None or isinstance(limit, _limits.ReadAllAvailable):
            return to_checkpoint(latest)
        begin = from_checkpoint(start)
        new = [tp for tp in latest if tp not in begin]
        if new:
            begin = {**self._earliest(new), **begin}
        opts = self.options
        least = limit.min_rows if isinstance(limit, _limits.ReadMinRows) else opts.min_offsets_per_trigger
        most = limit.max_rows if isinstance(limit, _limits.ReadMaxRows) else opts.max_offsets_per_trigger
        if least is not None and not self._available_now:
            now = _now_ms()
            delay = self.options.max_trigger_delay_ms or DEFAULT_MAX_TRIGGER_DELAY_MS
            if delay_batch(least, begin, latest, now, self._last_trigger_ms, delay):
                return dict(start)  # fewer than minOffsetsPerTrigger waiting: no micro-batch yet
            self._last_trigger_ms = now
        if most is not None:
            latest = rate_limit(most, begin, {tp: o for tp, o in latest.items() if tp in begin})
        return to_checkpoint(latest)

    def getDefaultReadLimit(self) -> Any:
        if self.options.max_offsets_per_trigger is not None:
            return _limits.ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return _limits.ReadMinRows(self.options.min_offsets_per_trigger)
        return _limits.ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        return None if not self._latest else to_checkpoint(self._latest)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def _earliest(self, partitions: list[TopicPartition]) -> PartitionOffsets:
        """The first offsets of partitions new since the last micro-batch (one that vanished
        meanwhile is left out: :func:`~.planning.stream_ranges` reports it)."""
        try:
            return self.kafka.earliest(partitions)
        except UnknownPartitionError:
            found: PartitionOffsets = {}
            for tp in partitions:
                try:
                    found.update(self.kafka.earliest([tp]))
                except UnknownPartitionError:
                    continue
            return found

    # -- micro-batches -----------------------------------------------------------------------------

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin, until = from_checkpoint(start), from_checkpoint(end)
        new = [tp for tp in until if tp not in begin]
        ranges = stream_ranges(begin, until, self._earliest(new) if new else {}, self._report)
        split = split_ranges(ranges, self.options.min_partitions, self.options.max_records_per_partition)
        return [InputPartition(r) for r in split]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(self.options, self.schema, partition.value)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the offsets are in Spark's checkpoint, and no group commits to Kafka."""

    def stop(self) -> None:
        if self._kafka is not None:
            self._kafka.close()
            self._kafka = None
