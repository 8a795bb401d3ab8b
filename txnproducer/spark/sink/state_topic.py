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

The reads and writes go over the admin tools' synchronous connection (:mod:`txnproducer.admin.connection`,
on the library's own network layer: every security protocol, typed authentication errors), opened on first
use and closed by :meth:`StateTopic.close`; every call is bounded by ``timeout_s``. Writes are idempotent
(:mod:`txnproducer.admin.produce`), reads fetch the range asked for (:mod:`txnproducer.admin.fetch`), and
topics are never auto-created by a read: the driver creates the topic (:meth:`StateTopic.ensure`) before
any task can read it. Opening the connection costs a few round trips (bootstrap, metadata, a producer
id), more than everything a task attempt then asks of it, and Spark reuses its Python workers for task
after task and batch after batch: so the sink keeps the last one it used in each process
(:func:`shared_state_topic`), and drops it after a failed call. The admin modules are imported when
first used: the admin tools import this module for their Spark view.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from txnproducer._internal.log import get_logger

from ...config import ProducerConfig
from ...errors import ConfigError, TimeoutError, TxnProducerError
from .decision import Announcement, Decision

__all__ = ["ANNOUNCEMENTS", "DECISIONS", "StateTopic", "close_shared_state_topic", "shared_state_topic"]

DECISIONS, ANNOUNCEMENTS = 0, 1
_FIRST_STEP = 16  # records read per step of a backward scan, doubled each step
_MAX_STEP = 65536
_OPEN_STATES = {"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}
_checked: set[tuple[str, str]] = set()  # (bootstrap, topic) known good in this process
_checked_lock = threading.Lock()

_log = get_logger("txnproducer.spark")


class StateTopic:
    """Reads and writes the sink's state topic (see the module docstring)."""

    def __init__(self, settings: Mapping[str, str], topic: str, *, timeout_s: float,
                 replication_factor: int = -1) -> None:
        self.topic = topic
        self.timeout_s = timeout_s
        self.replication_factor = replication_factor
        self._settings = dict(settings)
        self._connection: Any = None
        self._writer: Any = None

    # --- the connection --------------------------------------------------------------------------

    def _conn(self) -> Any:
        if self._connection is None:
            from txnproducer.admin.connection import AdminConnection
            from txnproducer.admin.settings import AdminSettings

            config = ProducerConfig.from_mapping({**self._settings, "transactional.id": "txnkafka-state",
                                                  "client.id": "txnkafka-state"})
            self._connection = AdminConnection(AdminSettings(config, max(1000, int(self.timeout_s * 1000))))
        return self._connection

    def _deadline(self) -> Any:
        return self._conn().deadline()

    def close(self) -> None:
        connection, self._connection, self._writer = self._connection, None, None
        if connection is not None:
            try:
                connection.close()
            except Exception as exc:  # closing must not hide what the caller is reporting
                _log.debug("txn.spark_state_close_failed", error=repr(exc))

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
        from txnproducer.admin.metadata import fetch_layout

        deadline = time.monotonic() + wait_s
        while True:
            layout = fetch_layout(self._conn(), [self.topic], self._deadline()).topics[self.topic]
            parts = set(layout.partitions)
            if parts or time.monotonic() >= deadline:
                return parts
            time.sleep(0.1)  # metadata propagation has no notification to wait on

    def _create(self) -> None:
        from txnproducer.admin.create_topics import create_topic

        if create_topic(self._conn(), self.topic, 2, self._deadline(),
                        replication_factor=self.replication_factor, configs={"cleanup.policy": "compact"}):
            _log.info("txn.spark_state_topic_created", topic=self.topic)
        # else another driver created it meanwhile

    def _check_compacted(self) -> None:
        from txnproducer.admin.describe_configs import topic_configs

        configs = topic_configs(self._conn(), self.topic, ["cleanup.policy"], self._deadline())
        policy = configs.get("cleanup.policy")
        if policy is not None and "compact" not in policy:
            raise ConfigError(
                f"txnkafka state topic {self.topic!r} has cleanup.policy={policy}: it must be"
                " compacted (cleanup.policy=compact), or the sink's decisions expire with the"
                " retention time; alter the topic or name another with state.topic")

    # --- reading ---------------------------------------------------------------------------------

    def _offset(self, partition: int, which: str) -> int:
        from txnproducer.admin.list_offsets import EARLIEST, LATEST, offsets_at
        from txnproducer.admin.results import TopicPartition

        tp = TopicPartition(self.topic, partition)
        timestamp = LATEST if which == "end" else EARLIEST
        return int(self._call(lambda: offsets_at(self._conn(), [tp], timestamp, self._deadline())[tp],
                              f"read the {which} offset of {self.topic}-{partition}"))

    def end_offset(self, partition: int) -> int:
        return self._offset(partition, "end")

    def _read(self, partition: int, start: int, end: int) -> list[Any]:
        """Every record of ``partition`` from ``start`` until the position reaches ``end``."""
        from txnproducer.admin.fetch import read_range
        from txnproducer.admin.results import TopicPartition

        tp = TopicPartition(self.topic, partition)
        return list(self._call(lambda: read_range(self._conn(), tp, start, end, self._deadline()),
                               f"read {self.topic}-{partition} from offset {start} to {end}"))

    def _call(self, call: Any, what: str) -> Any:
        """``call()``, its TimeoutError saying what the sink was doing and which bound ran out."""
        try:
            return call()
        except TimeoutError as exc:
            raise TimeoutError(
                f"txnkafka could not {what} within {self.timeout_s:.0f}s (commit.timeout.ms): is the state"
                f" topic's leader available? ({exc})") from exc

    def latest_decision(self, prefix: str, floor: int = 0) -> Decision | None:
        """The newest decision of ``prefix`` at or after offset ``floor``, or None."""
        end = self.end_offset(DECISIONS)
        floor = max(floor, self._offset(DECISIONS, "beginning"))
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
        end = self.end_offset(ANNOUNCEMENTS)
        start = max(start, self._offset(ANNOUNCEMENTS, "beginning"))
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
        from txnproducer.admin.describe_transactions import describe_transactions

        ids = [transactional_id]
        described = self._call(
            lambda: describe_transactions(self._conn(), ids, self._deadline(), missing_ok=True),
            f"describe transactional id {transactional_id!r}")[transactional_id]
        return described is not None and described.state in _OPEN_STATES

    # --- writing ---------------------------------------------------------------------------------

    def _send(self, partition: int, key: bytes, value: bytes) -> int:
        from txnproducer.admin.produce import IdempotentWriter
        from txnproducer.admin.results import TopicPartition

        if self._writer is None:
            self._writer = IdempotentWriter(self._conn())
        tp = TopicPartition(self.topic, partition)
        try:
            return int(self._writer.write(tp, key, value, self._deadline()))
        except TxnProducerError as exc:
            raise TimeoutError(
                f"txnkafka could not write to its state topic {self.topic}-{partition} with acks=all"
                f" within {self.timeout_s:.0f}s (commit.timeout.ms): {exc!r}") from exc

    def write_decision(self, decision: Decision) -> Decision:
        """Write ``decision`` (acks=all) and return it with its offset."""
        offset = self._send(DECISIONS, decision.prefix.encode(), decision.to_json())
        return attrs.evolve(decision, offset=offset)

    def announce(self, announcement: Announcement) -> None:
        self._send(ANNOUNCEMENTS, announcement.key, announcement.to_json())


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
    """Close the clients :func:`shared_state_topic` keeps (at exit, or when their cluster goes), and
    forget which state topics this process found in order: a cluster started later at the same
    address does not have them (the next :meth:`StateTopic.ensure` looks, and creates them)."""
    global _shared
    with _shared_lock:
        previous, _shared = _shared, None
    with _checked_lock:
        _checked.clear()
    if previous is not None:
        previous[1].close()


atexit.register(close_shared_state_topic)
