"""TransactionsAdmin: the Python API of the admin tools, one method per question an operator asks.

    from txnproducer.admin import TransactionsAdmin

    with TransactionsAdmin(bootstrap_servers="broker:9092") as admin:     # + the producer's security settings
        for hanging in admin.find_hanging(topic="orders"):
            plan = admin.plan_abort(topic=hanging.partition.topic, partition=hanging.partition.partition,
                                    start_offset=hanging.start_offset)
            print(plan.describe())
            admin.abort(plan)

Every method is one bounded call (``default.api.timeout.ms``, 60 s unless set) that returns typed values
(``results.py``) or raises a typed error (``errors.py``); nothing is cached between calls, so each answer
is the cluster's state when it was asked. Not thread-safe: one thread drives the connection (one admin
per thread).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs

from txnproducer.errors import ConfigError

from . import abort as abort_module
from .connection import AdminConnection
from .describe_producers import describe_producers
from .describe_transactions import describe_transactions
from .hanging import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS, find_hanging
from .list_offsets import stable_and_end_offsets
from .list_transactions import check_states, list_on_broker
from .metadata import fetch_layout
from .results import (
    HangingTransaction,
    PartitionProducers,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)
from .settings import AdminSettings

__all__ = ["TransactionList", "TransactionsAdmin"]


@attrs.frozen
class TransactionList:
    """ListTransactions' answers from every broker, and notes on filters applied here, not by a broker."""

    listings: tuple[TransactionListing, ...]
    notes: tuple[str, ...] = ()


class TransactionsAdmin:
    """Inspect and end transactions (module docstring). ``settings``: producer connection settings in
    Java or Python spelling (or keyword arguments), plus ``default.api.timeout.ms``."""

    def __init__(self, settings: Mapping[str, Any] | AdminSettings | None = None, **kwargs: Any) -> None:
        if isinstance(settings, AdminSettings):
            if kwargs:
                raise ConfigError("give AdminSettings or keyword settings, not both")
            self.settings = settings
        else:
            self.settings = AdminSettings.from_mapping({**(settings or {}), **kwargs})
        self._conn = AdminConnection(self.settings)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TransactionsAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> AdminConnection:
        return self._conn

    # -- coordinators' side ---------------------------------------------------------------------------

    def list_transactions(
        self,
        *,
        states: Collection[str] = (),
        producer_ids: Collection[int] = (),
        duration_ms: int | None = None,
        pattern: str | None = None,
        prefix: str | None = None,
    ) -> TransactionList:
        """Every broker's ListTransactions, filtered by the brokers: ``states`` (names as Kafka shows
        them: Ongoing, PrepareCommit, ...), ``producer_ids``, ``duration_ms`` (running longer than; needs
        Kafka 3.8+), ``pattern`` (a regular expression the whole id matches; Kafka 4.1+) - a broker that
        cannot apply a filter is an error (:class:`~txnproducer.admin.BrokerTooOldError`), never a longer
        list. ``prefix``: a pipeline's ids (applied here on brokers older than 4.1, which a note says)."""
        check_states(states)
        if duration_ms is not None and duration_ms < 0:
            raise ConfigError(f"duration_ms must be >= 0, got {duration_ms}")
        deadline = self._conn.deadline()
        listings: list[TransactionListing] = []
        notes: list[str] = []
        for node in sorted(fetch_layout(self._conn, [], deadline).brokers):
            found, note = list_on_broker(
                self._conn,
                node,
                deadline,
                states=states,
                producer_ids=producer_ids,
                duration_ms=duration_ms,
                pattern=pattern,
                prefix=prefix,
            )
            listings.extend(found)
            if note is not None:
                notes.append(note)
        listings.sort(key=lambda t: (t.transactional_id, t.coordinator_id))
        return TransactionList(tuple(listings), tuple(notes))

    def describe_transactions(self, transactional_ids: Sequence[str]) -> dict[str, TransactionDescription]:
        """Each id as its coordinator describes it; an unknown id raises TransactionalIdNotFoundError."""
        if not transactional_ids:
            return {}
        found = describe_transactions(self._conn, transactional_ids, self._conn.deadline())
        return {tid: d for tid, d in found.items() if d is not None}

    def describe_prefix(self, prefix: str) -> tuple[TransactionList, list[TransactionDescription]]:
        """Every transactional id of a pipeline (``prefix``), listed and described."""
        listed = self.list_transactions(prefix=prefix)
        ids = sorted({t.transactional_id for t in listed.listings})
        found = describe_transactions(self._conn, ids, self._conn.deadline(), missing_ok=True)
        return listed, [d for _, d in sorted(found.items()) if d is not None]

    # -- partition leaders' side -----------------------------------------------------------------------

    def describe_producers(
        self, partitions: Sequence[TopicPartition], *, broker_id: int | None = None, offsets: bool = True
    ) -> dict[TopicPartition, PartitionProducers]:
        """The active producers of each partition from its leader (or ``broker_id``, any replica),
        with the partition's last stable offset and high watermark (``offsets``) - which tell whether an
        open transaction holds the partition, and whose (``PartitionProducers.lso_holder``)."""
        deadline = self._conn.deadline()
        found = describe_producers(self._conn, partitions, deadline, broker_id)
        if not offsets:
            return found
        ends = stable_and_end_offsets(self._conn, list(found), deadline)
        return {
            tp: attrs.evolve(p, last_stable_offset=ends[tp][0], high_watermark=ends[tp][1])
            for tp, p in found.items()
        }

    def find_hanging(
        self,
        *,
        broker_id: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    ) -> list[HangingTransaction]:
        """Open transactions their coordinator no longer tracks (``hanging.py``), searched on ``topic``
        (and ``partition``) or on every partition with a replica on ``broker_id``; only those whose last
        write is older than ``max_transaction_timeout_ms`` (Kafka's ``transaction.max.timeout.ms``)."""
        return find_hanging(
            self._conn,
            self._conn.deadline(),
            broker_id=broker_id,
            topic=topic,
            partition=partition,
            max_transaction_timeout_ms=max_transaction_timeout_ms,
        )

    # -- ending transactions ---------------------------------------------------------------------------

    def plan_abort(
        self,
        *,
        transactional_id: str | None = None,
        topic: str | None = None,
        partition: int | None = None,
        start_offset: int | None = None,
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        coordinator_epoch: int | None = None,
    ) -> abort_module.MarkerAbortPlan | abort_module.FenceAbortPlan:
        """What :meth:`abort` would do, checked against the cluster (``abort.py``); writes nothing.
        Either ``transactional_id`` (a live transaction: its coordinator aborts it), or ``topic`` and
        ``partition`` with ``start_offset`` or ``producer_id`` + ``producer_epoch`` (a hanging one)."""
        deadline = self._conn.deadline()
        by_partition = any(
            v is not None
            for v in (topic, partition, start_offset, producer_id, producer_epoch, coordinator_epoch)
        )
        if transactional_id is not None:
            if by_partition:
                raise ConfigError("abort by transactional id takes no partition or producer arguments")
            return abort_module.plan_fence(self._conn, transactional_id, deadline)
        if topic is None or partition is None:
            raise ConfigError(
                "name the transaction to abort: a transactional id, or a topic and partition"
                " with a start offset or producer id and epoch"
            )
        return abort_module.plan_marker(
            self._conn,
            TopicPartition(topic, partition),
            deadline,
            start_offset=start_offset,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
        )

    def abort(
        self, plan: abort_module.MarkerAbortPlan | abort_module.FenceAbortPlan
    ) -> abort_module.AbortResult:
        """Do what ``plan`` (from :meth:`plan_abort`) describes."""
        return abort_module.execute(self._conn, plan, self._conn.deadline())
