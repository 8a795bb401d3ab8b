"""Find hanging transactions: open on a partition, forgotten by their coordinator (``find-hanging``).

The method of ``kafka-transactions.sh find-hanging`` (KIP-664), which starts where a hanging transaction
is visible - at the partition leaders - because a coordinator that forgot a transaction cannot list it:

1. the partitions to search: one partition, a topic's, or every partition with a replica on a broker
   (``--broker-id``; internal topics are left out unless named, as ``kafka-transactions.sh`` lists
   topics);
2. DescribeProducers on their leaders (or on the chosen broker): every producer with an open transaction
   whose last write is older than ``max_transaction_timeout_ms`` is a candidate - younger ones may be live
   (no coordinator lets a transaction run longer than ``transaction.max.timeout.ms``, 15 min by default);
3. ListTransactions on every broker, filtered by the candidates' producer ids: which transactional id
   each producer id belongs to now;
4. DescribeTransactions of those ids: what their coordinators track.

A candidate is hanging when no transactional id maps to its producer id, when its id is unknown to the
coordinator, or when the coordinator does not list the partition among the transaction's partitions
(it tracks the id for other partitions, or for none: the transaction it knows ended). Otherwise the
coordinator still owns it (a transaction being ended lists the partitions whose markers are pending).

Where this differs from kafka-python 3.0's ``find_hanging_transactions``: that one asks only the
coordinators (ListTransactions, DescribeTransactions, an age check) and so cannot see the transactions
the coordinator forgot, which are the ones that hang. Caveat shared with the Java tool: ListTransactions
lists only ids the principal may Describe, so without Describe on a live transaction's id it would be
reported as hanging - run it with Describe on every transactional id (``*``), as docs/operations.md says.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from txnproducer.errors import ConfigError

from .connection import AdminConnection, Deadline
from .describe_producers import describe_producers
from .describe_transactions import describe_transactions
from .list_transactions import list_on_broker
from .metadata import check_partitions, fetch_layout
from .results import HangingTransaction, ProducerState, TopicPartition, TransactionDescription

__all__ = ["DEFAULT_MAX_TRANSACTION_TIMEOUT_MS", "classify", "find_hanging", "partitions_to_search"]

DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000  # Kafka's transaction.max.timeout.ms default


def partitions_to_search(
    conn: AdminConnection, deadline: Deadline, broker_id: int | None, topic: str | None, partition: int | None
) -> list[TopicPartition]:
    """Step 1 (module docstring); ConfigError for a search without a scope, as the Java tool refuses."""
    if topic is None and broker_id is None:
        raise ConfigError("find-hanging needs --topic or --broker-id to limit the search")
    if partition is not None and topic is None:
        raise ConfigError("--partition needs --topic")
    layout = fetch_layout(conn, None if topic is None else [topic], deadline)
    if broker_id is not None and broker_id not in layout.brokers:
        raise ConfigError(
            f"broker {broker_id} is not in the cluster (brokers: "
            f"{', '.join(str(b) for b in sorted(layout.brokers))})"
        )
    if topic is not None:
        wanted = [TopicPartition(topic, partition if partition is not None else 0)]
        check_partitions(layout, wanted)
    out = []
    for name, t in sorted(layout.topics.items()):
        if topic is None and t.internal:
            continue
        for p in sorted(t.partitions.values(), key=lambda p: p.partition):
            if partition is not None and p.partition != partition:
                continue
            if broker_id is None or broker_id in p.replicas:
                out.append(TopicPartition(name, p.partition))
    return out


def transactional_ids_of(
    conn: AdminConnection, producer_ids: Iterable[int], deadline: Deadline
) -> dict[int, str]:
    """Step 3: producer id -> the transactional id that holds it now (only those still mapped)."""
    pids = sorted(set(producer_ids))
    if not pids:
        return {}
    brokers = sorted(fetch_layout(conn, [], deadline).brokers)
    found: dict[int, str] = {}
    for node in brokers:
        listings, _ = list_on_broker(conn, node, deadline, producer_ids=pids)
        found.update({t.producer_id: t.transactional_id for t in listings if t.producer_id in pids})
    return found


def classify(
    tp: TopicPartition,
    producer: ProducerState,
    transactional_id: str | None,
    description: TransactionDescription | None,
    now_ms: int,
) -> HangingTransaction | None:
    """Step 4 for one open transaction: a :class:`HangingTransaction`, or None when its coordinator
    still tracks it on ``tp``."""
    state = None
    if transactional_id is None:
        reason = f"no transactional id maps to producer id {producer.producer_id} any more"
    elif description is None:
        reason = f"its transactional id {transactional_id!r} is unknown to the coordinator"
    elif tp in description.partitions:
        return None
    else:
        state = description.state
        tracked = ", ".join(str(p) for p in description.partitions) or "no partition"
        reason = (
            f"its coordinator tracks transactional id {transactional_id!r} ({state}, producer id"
            f" {description.producer_id} epoch {description.producer_epoch}) for {tracked}, not {tp}"
        )
    assert producer.txn_start_offset is not None
    return HangingTransaction(
        tp,
        producer.producer_id,
        producer.producer_epoch,
        producer.coordinator_epoch,
        producer.txn_start_offset,
        producer.last_timestamp,
        max(0, now_ms - producer.last_timestamp),
        reason,
        transactional_id,
        state,
    )


def find_hanging(
    conn: AdminConnection,
    deadline: Deadline,
    *,
    broker_id: int | None = None,
    topic: str | None = None,
    partition: int | None = None,
    max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    now_ms: int | None = None,
) -> list[HangingTransaction]:
    """Steps 1-4 (module docstring), in partition order."""
    if max_transaction_timeout_ms < 0:
        raise ConfigError(f"the max transaction timeout must be >= 0, got {max_transaction_timeout_ms}")
    partitions = partitions_to_search(conn, deadline, broker_id, topic, partition)
    producers = describe_producers(conn, partitions, deadline, broker_id)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    candidates = [
        (tp, p)
        for tp, found in sorted(producers.items())
        for p in found.open_transactions
        if now - p.last_timestamp > max_transaction_timeout_ms
    ]
    ids = transactional_ids_of(conn, (p.producer_id for _, p in candidates), deadline)
    descriptions = describe_transactions(conn, sorted(set(ids.values())), deadline, missing_ok=True)
    hanging = []
    for tp, producer in candidates:
        tid = ids.get(producer.producer_id)
        verdict = classify(tp, producer, tid, None if tid is None else descriptions.get(tid), now)
        if verdict is not None:
            hanging.append(verdict)
    return hanging
