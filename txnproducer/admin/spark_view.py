"""``txnproducer spark status``: what the ``txnkafka`` sink's transactions of one query are doing.

The sink leaves transactions prepared on purpose - from a task's ``prepare_transaction()`` until the
driver's decision completes them (docs/guide/spark.md) - and they hold their partitions'
last stable offset meanwhile. This view joins the three places that say what is going on:

* the sink's state topic: the query's latest **decision** (batch, commit or abort, decided or done, the
  prepared transactions it names) and the **announcements** since (which attempt of which batch took
  which transactional id);
* the coordinators: the query's transactional ids (``<prefix>-<partition>-<slot>``, ListTransactions
  by prefix) and, for each, its state and partitions (DescribeTransactions);
* the partition leaders: whether each open transaction is the one holding a partition's last stable
  offset (DescribeProducers, ListOffsets).

and says in one sentence (:attr:`SparkSinkStatus.verdict`) what that means: idle, a batch in flight,
a batch prepared long ago that no driver decided (the driver is down), a decision whose completion a
dead driver left unfinished (a restarted query finishes it), or transactions of superseded attempts
that the next decision fences. Reading is all it does; the sink's own recovery ends what it left.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from txnproducer.errors import ConfigError
from txnproducer.spark.sink.decision import Announcement, Decision
from txnproducer.spark.sink.options import DEFAULT_STATE_TOPIC
from txnproducer.spark.sink.state_topic import StateTopic

from .client import TransactionsAdmin
from .describe_producers import describe_producers
from .list_offsets import stable_and_end_offsets
from .metadata import fetch_layout
from .results import OPEN_STATES, TopicPartition, TransactionDescription

__all__ = ["SinkTransaction", "SparkSinkStatus", "spark_sink_status"]

#: a batch whose transactions have waited longer than this for the driver looks abandoned
STALE_AFTER_MS = 60_000
_PAST = {"commit": "committed", "abort": "aborted"}


@attrs.frozen
class SinkTransaction:
    """One transactional id of the query. ``spark_partition``/``slot`` come from the id;
    ``batch``/``attempt`` from its latest announcement since the latest decision (None: none since);
    ``decided``: the latest decision names this very transaction (id, producer id and epoch);
    ``holds``: the partitions whose last stable offset this transaction holds."""

    transactional_id: str
    spark_partition: int | None
    slot: int | None
    state: str
    producer_id: int
    producer_epoch: int
    start_time_ms: int | None
    partitions: tuple[TopicPartition, ...]
    batch: int | None = None
    attempt: int | None = None
    decided: bool = False
    holds: tuple[TopicPartition, ...] = ()

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES


@attrs.frozen
class SparkSinkStatus:
    """The view (module docstring); ``decision`` is the latest decision record, as JSON-ready fields."""

    prefix: str
    state_topic: str
    decision: dict[str, Any] | None
    transactions: tuple[SinkTransaction, ...]
    offsets: dict[str, tuple[int, int]]
    verdict: str
    notes: tuple[str, ...] = ()


def _slot_of(prefix: str, transactional_id: str) -> tuple[int | None, int | None]:
    rest = transactional_id[len(prefix) + 1 :].split("-")
    if len(rest) == 2 and all(part.isdigit() for part in rest):
        return int(rest[0]), int(rest[1])
    return None, None


def _minutes(ms: int) -> str:
    seconds = max(ms, 0) // 1000
    return f"{seconds // 60} min" if seconds >= 120 else f"{seconds} s"


def _decision_fields(d: Decision) -> dict[str, Any]:
    return {
        "batch": d.batch,
        "query": d.query,
        "outcome": d.outcome,
        "stage": d.stage,
        "offset": d.offset,
        "states": [
            {"transactional_id": s.transactional_id, "producer_id": s.producer_id, "epoch": s.epoch}
            for s in d.states
        ],
    }


def _verdict(
    prefix: str,
    latest: Decision | None,
    txns: Sequence[SinkTransaction],
    announced: Sequence[Announcement],
    now_ms: int,
) -> str:
    open_txns = [t for t in txns if t.is_open]
    holds = sorted({tp for t in open_txns for tp in t.holds})
    held = [f"They hold the last stable offset of {', '.join(str(tp) for tp in holds)}."] if holds else []
    if latest is not None and not latest.done:
        pending = [t for t in open_txns if t.decided]
        return " ".join(
            [
                f"batch {latest.batch} was decided ({latest.outcome}) but not finished: {len(pending)} of its"
                f" {len(latest.states)} transactions are still open - the driver stopped after the commit"
                " point; a restarted query completes them.",
                *held,
            ]
        )
    newer = [t for t in open_txns if t.batch is not None and (latest is None or t.batch > latest.batch)]
    if newer:
        batch = max(t.batch for t in newer if t.batch is not None)
        mine = [t for t in newer if t.batch == batch]
        tasks = {a.partition for a in announced if a.batch == batch}
        prepared = {t.spark_partition for t in mine}
        started = [t.start_time_ms for t in mine if t.start_time_ms is not None]
        waited = now_ms - min(started) if started else 0
        tail = ": the driver is down?" if waited >= STALE_AFTER_MS else " (the batch is in flight)."
        main = (
            f"batch {batch} prepared {len(prepared)} of {len(tasks) or len(prepared)} transactions, driver"
            f" has not decided for {_minutes(waited)}{tail}"
        )
    elif latest is not None:
        main = f"batch {latest.batch} was {_PAST[latest.outcome]} and finished."
        main = main if open_txns else f"idle: {main[:-1]}; no transaction of {prefix!r} is open."
    else:
        main = (
            f"no decision recorded for prefix {prefix!r}: the query has not committed a batch yet (or the"
            " prefix is not the query's)" + ("." if open_txns else "; no transaction of it is open.")
        )
    orphans = [t for t in open_txns if t not in newer]
    extra = (
        [
            f"{len(orphans)} transaction(s) of failed or superseded attempts are open"
            f" ({', '.join(t.transactional_id for t in orphans)}): the driver fences them at its next"
            " decision."
        ]
        if orphans
        else []
    )
    return " ".join([main, *extra, *held])


def spark_sink_status(
    admin: TransactionsAdmin, prefix: str, state_topic: str = DEFAULT_STATE_TOPIC, now_ms: int | None = None
) -> SparkSinkStatus:
    """The view of the query whose transactional ids start with ``prefix`` (module docstring)."""
    if not prefix:
        raise ConfigError("the query's transactional id prefix must not be empty")
    conn = admin.connection
    deadline = conn.deadline()
    if fetch_layout(conn, [state_topic], deadline).topics[state_topic].error != 0:
        raise ConfigError(
            f"the sink's state topic {state_topic!r} does not exist: has the query written a batch"
            " yet? (a query with the option state.topic uses another)"
        )
    with StateTopic(admin.settings.raw, state_topic, timeout_s=admin.settings.timeout_ms / 1000) as state:
        latest = state.latest_decision(prefix)
        start = 0 if latest is None else max(latest.announce_to, latest.announce_from)
        announced, _ = state.announcements(prefix, start)
    listed, described = admin.describe_prefix(prefix + "-")
    # the pool's ids only: another query whose prefix starts with "<prefix>-" is not this one
    descriptions = [d for d in described if _slot_of(prefix, d.transactional_id) != (None, None)]
    last_announcement = {a.transactional_id: a for a in announced}
    decided = {(s.transactional_id, s.producer_id, s.epoch) for s in (latest.states if latest else ())}
    open_parts = sorted({tp for d in descriptions if d.is_open for tp in d.partitions})
    offsets = stable_and_end_offsets(conn, open_parts, deadline) if open_parts else {}
    producers = describe_producers(conn, open_parts, deadline) if open_parts else {}
    holders = {
        tp: (
            offsets[tp][0] < offsets[tp][1],
            {p.producer_id for p in found.producers if p.txn_start_offset == offsets[tp][0]},
        )
        for tp, found in producers.items()
    }
    txns = tuple(
        _transaction(prefix, d, last_announcement.get(d.transactional_id), decided, holders)
        for d in descriptions
    )
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return SparkSinkStatus(
        prefix,
        state_topic,
        None if latest is None else _decision_fields(latest),
        txns,
        {str(tp): v for tp, v in offsets.items()},
        _verdict(prefix, latest, txns, announced, now),
        listed.notes,
    )


def _transaction(
    prefix: str,
    d: TransactionDescription,
    announcement: Announcement | None,
    decided: set[tuple[str, int, int]],
    holders: dict[TopicPartition, tuple[bool, set[int]]],
) -> SinkTransaction:
    spark_partition, slot = _slot_of(prefix, d.transactional_id)
    holds = tuple(
        tp
        for tp in d.partitions
        if d.is_open and holders.get(tp, (False, set()))[0] and d.producer_id in holders[tp][1]
    )
    # a prepared TV2 transaction's epoch is the one it ran under; the coordinator shows the same while open
    is_decided = (d.transactional_id, d.producer_id, d.producer_epoch) in decided
    return SinkTransaction(
        d.transactional_id,
        spark_partition,
        slot,
        d.state,
        d.producer_id,
        d.producer_epoch,
        d.start_time_ms,
        d.partitions,
        None if announcement is None else announcement.batch,
        None if announcement is None else announcement.attempt,
        is_decided,
        holds,
    )
