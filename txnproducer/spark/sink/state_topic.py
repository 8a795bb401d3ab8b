"""The sink's state topic: a compacted Kafka topic every driver and executor can reach.

Why Kafka: on a cluster the executors share no file system with the driver; they share the Kafka
cluster they write to. Decisions and announcements (:mod:`txnproducer.spark.sink.decision`) go to a
topic of the sink's, ``txnkafka-state`` by default, with two partitions so that the record a task
looks for is always near the end of a short log:

* partition 0 - decisions, key ``<prefix>``: only the driver writes here, once or twice per
  micro-batch. A task finds its query's latest decision by reading *backwards* from the end until
  a record of its prefix turns up (:meth:`StateTopic.latest_decision`), so the cost is the number
  of other queries' records since, not the topic's size.
* partition 1 - announcements, key ``<prefix>/<partition>/<slot>``: one per task attempt. The
  driver reads them forwards from where its previous decision's clean-up stopped.

Writes use an idempotent producer with ``acks=all`` and wait for the acknowledgement: a record
that is acknowledged is below the high watermark, so any reader that asks for the end offset
afterwards sees it (the ordering the protocol's argument relies on, :mod:`txnproducer.spark.sink.task`).
Records are not transactional, so readers need no ``read_committed`` and the last offset is a
record, not a control marker. Compaction keeps the latest record per key, which is all the
protocol ever reads; the topic is created compacted (``cleanup.policy=compact``) if missing, and
refused if it exists with fewer than two partitions or without compaction.

The clients are kafka-python's (the producer's run-time dependency), opened on first use and
closed by :meth:`StateTopic.close`; every call is bounded by ``timeout_s``. Opening them costs a
few hundred milliseconds (connections, metadata), more than everything a task attempt then asks of
them, and Spark reuses its Python workers for task after task and batch after batch: so the sink
keeps the last one it used in each process (:func:`shared_state_topic`), and drops it after a
failed call. kafka-python 3.0.12
does not pass ``allow_auto_create_topics=False`` on to its metadata requests, so a reader of a
missing topic makes a broker with ``auto.create.topics.enable`` create it, uncompacted and with
its default partition count: the driver therefore creates the topic (:meth:`StateTopic.ensure`,
which only asks for all topics' metadata) before any task can read it.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from txnproducer._internal.log import get_logger
from txnproducer._internal.network.redaction import install_secret_filter

from ...config import ProducerConfig
from ...errors import ConfigError, TimeoutError
from .decision import Announcement, Decision

__all__ = ["ANNOUNCEMENTS", "DECISIONS", "StateTopic", "close_shared_state_topic", "shared_state_topic"]

DECISIONS, ANNOUNCEMENTS = 0, 1
_FIRST_STEP = 16  # records read per step of a backward scan, doubled each step
_MAX_STEP = 65536
_OPEN_STATES = {"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}
_checked: set[tuple[str, str]] = set()  # (bootstrap, topic) known good in this process
_checked_lock = threading.Lock()

_log = get_logger("txnproducer.spark")


def _client_kwargs(settings: Mapping[str, str], allowed: Mapping[str, Any], **own: Any) -> dict[str, Any]:
    """The connection settings of the sink's ``kafka.*`` options for a kafka-python client, with
    ``own`` settings on top."""
    config = ProducerConfig.from_mapping({**settings, "transactional.id": "txnkafka-state"})
    kwargs = {k: v for k, v in config.kafka_client_kwargs().items() if k in allowed}
    kwargs["client_id"] = "txnkafka-state"
    kwargs.update(own)
    return kwargs


class StateTopic:
    """Reads and writes the sink's state topic (see the module docstring)."""

    def __init__(self, settings: Mapping[str, str], topic: str, *, timeout_s: float,
                 replication_factor: int = -1) -> None:
        install_secret_filter()  # our kafka-python clients log requests at DEBUG too
        self.topic = topic
        self.timeout_s = timeout_s
        self.replication_factor = replication_factor
        self._settings = dict(settings)
        self._consumer: Any = None
        self._producer: Any = None
        self._admin_client: Any = None

    # --- clients ---------------------------------------------------------------------------------

    def _reader(self) -> Any:
        if self._consumer is None:
            self._consumer = KafkaConsumer(**_client_kwargs(
                self._settings, KafkaConsumer.DEFAULT_CONFIG,
                group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
                allow_auto_create_topics=False, fetch_max_wait_ms=20,
                request_timeout_ms=max(1000, int(self.timeout_s * 1000))))
        return self._consumer

    def _writer(self) -> Any:
        if self._producer is None:
            timeout_ms = max(1000, int(self.timeout_s * 1000))
            self._producer = KafkaProducer(**_client_kwargs(
                self._settings, KafkaProducer.DEFAULT_CONFIG,
                acks="all", enable_idempotence=True, linger_ms=0, allow_auto_create_topics=False,
                max_block_ms=timeout_ms, request_timeout_ms=min(timeout_ms, 30_000),
                delivery_timeout_ms=timeout_ms))
        return self._producer

    def _admin(self) -> Any:
        if self._admin_client is None:
            self._admin_client = KafkaAdminClient(**_client_kwargs(
                self._settings, KafkaAdminClient.DEFAULT_CONFIG,
                request_timeout_ms=max(1000, int(self.timeout_s * 1000))))
        return self._admin_client

    def close(self) -> None:
        for client in (self._consumer, self._producer, self._admin_client):
            if client is not None:
                try:
                    client.close(timeout=self.timeout_s) if client is self._producer else client.close()
                except Exception as exc:  # closing must not hide what the caller is reporting
                    _log.debug("txn.spark_state_close_failed", error=repr(exc))
        self._consumer = self._producer = self._admin_client = None

    def __enter__(self) -> StateTopic:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the topic -------------------------------------------------------------------------------

    def ensure(self) -> None:
        """Create the topic (compacted, two partitions) if it is missing; refuse one that cannot
        hold the sink's state. Checked once per process and topic."""
        key = (",".join(sorted(str(s) for s in self._settings.get("bootstrap.servers", "").split(","))),
               self.topic)
        with _checked_lock:
            if key in _checked:
                return
        partitions = self._partitions(wait_s=0)
        if not partitions:
            self._create()
            partitions = self._partitions(wait_s=self.timeout_s)
        if len(partitions) < 2:
            raise ConfigError(
                f"txnkafka state topic {self.topic!r} has {len(partitions)} partition(s); it needs 2"
                " (decisions, announcements): delete it, or name another with state.topic")
        self._check_compacted()
        with _checked_lock:
            _checked.add(key)

    def _partitions(self, wait_s: float) -> set[int]:
        """The topic's partitions (empty: unknown), waiting up to ``wait_s`` for a topic just
        created to reach the metadata of the broker asked."""
        deadline = time.monotonic() + wait_s
        while True:
            parts: set[int] = set(self._reader().partitions_for_topic(self.topic) or ())
            if parts or time.monotonic() >= deadline:
                return parts
            time.sleep(0.1)  # metadata propagation has no notification to wait on

    def _create(self) -> None:
        from kafka.errors import TopicAlreadyExistsError

        try:
            self._admin().create_topics([NewTopic(self.topic, num_partitions=2,
                                                  replication_factor=self.replication_factor,
                                                  topic_configs={"cleanup.policy": "compact"})])
            _log.info("txn.spark_state_topic_created", topic=self.topic)
        except TopicAlreadyExistsError:
            pass  # another driver created it meanwhile

    def _check_compacted(self) -> None:
        from kafka.admin import ConfigResource, ConfigResourceType

        result = self._admin().describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, self.topic, {"cleanup.policy": None})],
            config_filter="all")
        policy = _config_value(result, self.topic, "cleanup.policy")
        if policy is not None and "compact" not in policy:
            raise ConfigError(
                f"txnkafka state topic {self.topic!r} has cleanup.policy={policy}: it must be"
                " compacted (cleanup.policy=compact), or the sink's decisions expire with the"
                " retention time; alter the topic or name another with state.topic")

    # --- reading ---------------------------------------------------------------------------------

    def end_offset(self, partition: int) -> int:
        tp = TopicPartition(self.topic, partition)
        return int(self._reader().end_offsets([tp])[tp])

    def _read(self, partition: int, start: int, end: int) -> list[Any]:
        """Every record of ``partition`` from ``start`` until the position reaches ``end``."""
        reader = self._reader()
        tp = TopicPartition(self.topic, partition)
        reader.assign([tp])
        reader.seek(tp, start)
        records: list[Any] = []
        deadline = time.monotonic() + self.timeout_s
        while reader.position(tp) < end:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"txnkafka could not read {self.topic}-{partition} from offset {start} to {end}"
                    f" within {self.timeout_s:.0f}s (commit.timeout.ms): is the state topic's leader"
                    " available?")
            for batch in reader.poll(timeout_ms=100).values():
                records.extend(batch)
        return records

    def latest_decision(self, prefix: str, floor: int = 0) -> Decision | None:
        """The newest decision of ``prefix`` at or after offset ``floor``, or None."""
        reader = self._reader()
        tp = TopicPartition(self.topic, DECISIONS)
        end = int(reader.end_offsets([tp])[tp])
        floor = max(floor, int(reader.beginning_offsets([tp])[tp]))
        key = prefix.encode()
        high, step = end, _FIRST_STEP
        while high > floor:
            low = max(floor, high - step)
            mine = [r for r in self._read(DECISIONS, low, high)
                    if r.key == key and r.value is not None]
            if mine:
                newest = max(mine, key=lambda r: r.offset)
                return Decision.from_json(newest.value, newest.offset)
            high, step = low, min(step * 2, _MAX_STEP)
        return None

    def announcements(self, prefix: str, start: int) -> tuple[list[Announcement], int]:
        """The announcements of ``prefix`` from offset ``start`` to the end, and that end."""
        tp = TopicPartition(self.topic, ANNOUNCEMENTS)
        reader = self._reader()
        end = int(reader.end_offsets([tp])[tp])
        start = max(start, int(reader.beginning_offsets([tp])[tp]))
        marker = f"{prefix}/".encode()
        found = [Announcement.from_json(r.value) for r in self._read(ANNOUNCEMENTS, start, end)
                 if r.key is not None and r.key.startswith(marker) and r.value is not None
                 and r.offset < end]
        return found, end

    # --- transactional ids ----------------------------------------------------------------------

    def transaction_open(self, transactional_id: str) -> bool:
        """Does the coordinator hold an open transaction (or one being ended) for the id?
        Retries while the coordinator is unavailable (a new cluster creates its transaction log
        on first use), up to ``timeout_s``."""
        from kafka.errors import KafkaError, TransactionalIdNotFoundError

        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                described = self._admin().describe_transactions([transactional_id])
                break
            except TransactionalIdNotFoundError:
                return False  # never used
            except KafkaError as exc:
                if not getattr(exc, "retriable", False) or time.monotonic() > deadline:
                    raise TimeoutError(
                        f"txnkafka could not describe transactional id {transactional_id!r} within"
                        f" {self.timeout_s:.0f}s (commit.timeout.ms): {exc!r}") from exc
                time.sleep(0.2)  # the coordinator's own retry backoff; nothing to wait on instead
        state = getattr(described[transactional_id].state, "value", "")
        return state in _OPEN_STATES

    # --- writing ---------------------------------------------------------------------------------

    def _send(self, partition: int, key: bytes, value: bytes) -> int:
        future = self._writer().send(self.topic, key=key, value=value, partition=partition)
        try:
            return int(future.get(timeout=self.timeout_s).offset)
        except Exception as exc:
            raise TimeoutError(
                f"txnkafka could not write to its state topic {self.topic}-{partition} with acks=all"
                f" within {self.timeout_s:.0f}s (commit.timeout.ms): {exc!r}") from exc

    def write_decision(self, decision: Decision) -> Decision:
        """Write ``decision`` (acks=all) and return it with its offset."""
        offset = self._send(DECISIONS, decision.prefix.encode(), decision.to_json())
        return attrs.evolve(decision, offset=offset)

    def announce(self, announcement: Announcement) -> None:
        self._send(ANNOUNCEMENTS, announcement.key, announcement.to_json())


def _config_value(result: Any, topic: str, name: str) -> str | None:
    """Dig ``name`` out of kafka-python's describe_configs answer (best effort: None if absent)."""
    try:
        entry = result["topic"][topic][name]
    except (KeyError, TypeError):
        return None
    if isinstance(entry, Mapping):
        value = entry.get("value", entry.get("config_value"))
        return None if value is None else str(value)
    return str(entry)


_shared: tuple[tuple[object, ...], StateTopic] | None = None
_shared_lock = threading.Lock()


@contextlib.contextmanager
def shared_state_topic(settings: Mapping[str, str], topic: str, *, timeout_s: float,
                       replication_factor: int = -1) -> Iterator[StateTopic]:
    """This process's :class:`StateTopic` for these settings, kept open between uses (module
    docstring); one for other settings replaces it. A call that fails closes it."""
    global _shared
    key = (tuple(sorted(settings.items())), topic, timeout_s, replication_factor)
    with _shared_lock:
        if _shared is not None and _shared[0] == key:
            state, _shared = _shared[1], None  # taken: a concurrent user opens its own
        else:
            state = StateTopic(settings, topic, timeout_s=timeout_s, replication_factor=replication_factor)
    try:
        yield state
    except BaseException:
        state.close()
        raise
    with _shared_lock:
        previous, _shared = _shared, (key, state)
    if previous is not None:
        previous[1].close()


def close_shared_state_topic() -> None:
    """Close the clients :func:`shared_state_topic` keeps (at exit, or when their cluster goes)."""
    global _shared
    with _shared_lock:
        previous, _shared = _shared, None
    if previous is not None:
        previous[1].close()


atexit.register(close_shared_state_topic)
