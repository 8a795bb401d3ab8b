"""The admin tools' Python API (``txnproducer.admin.TransactionsAdmin``) against a MockCluster.

What a user relies on: a transaction its coordinator forgot is found by ``find_hanging`` and ended by
``abort``, after which the partition's last stable offset reaches its high watermark and a
``read_committed`` consumer (kafka-python's) moves on; a live transaction is never reported as hanging
nor aborted with a marker; every bad input is a typed error naming the cause and what to do, and writes
nothing. ACLs are in test_admin_acls.py, the command line in test_admin_cli.py.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from tests._support.readers import CommittedReader
from txnproducer import TransactionalProducer
from txnproducer.admin import (
    BrokerTooOldError,
    FenceAbortPlan,
    LeaderNotAvailableError,
    LiveTransactionError,
    MarkerAbortPlan,
    NothingToAbortError,
    TopicPartition,
    TransactionalIdNotFoundError,
    TransactionsAdmin,
    UnknownPartitionError,
)
from txnproducer.errors import ConfigError, ProducerFencedError
from txnproducer.testing import MockCluster

TIMEOUT_S = 10.0


@pytest.fixture
def topic() -> str:
    return f"admin-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(mock_cluster: MockCluster) -> Iterator[TransactionsAdmin]:
    with TransactionsAdmin(
        bootstrap_servers=mock_cluster.bootstrap_servers, **{"default.api.timeout.ms": 10_000}
    ) as a:
        yield a


def producer(cluster: MockCluster, transactional_id: str) -> TransactionalProducer:
    p = TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers, transactional_id=transactional_id, max_block_ms=10_000
    )
    p.init_transactions()
    return p


def commit(cluster: MockCluster, topic: str, partition: int, value: bytes, transactional_id: str) -> None:
    with producer(cluster, transactional_id) as p, p.transaction():
        p.send(topic, value, partition=partition).get(TIMEOUT_S)


def offsets(cluster: MockCluster, topic: str, partition: int) -> tuple[int, int]:
    with cluster.state.lock:
        log = cluster.state.partition_log(topic, partition)
        assert log is not None
        return log.last_stable_offset, log.high_watermark


@pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True)
def test_forgotten_transaction_is_found_aborted_and_the_consumer_moves_on(
    mock_cluster: MockCluster, admin: TransactionsAdmin, topic: str
) -> None:
    mock_cluster.create_topic(topic, 2)
    commit(mock_cluster, topic, 0, b"before", "writer-1")
    held = mock_cluster.plant_hanging_transaction(topic, 0, records=2)
    commit(mock_cluster, topic, 0, b"after", "writer-1")
    reader = CommittedReader(mock_cluster.bootstrap_servers, topic, 0)
    try:
        assert reader.read_to_end() == held.start_offset  # held back at the hanging transaction
        assert reader.values == [b"before"]

        (hanging,) = admin.find_hanging(topic=topic)
        assert (hanging.partition, hanging.producer_id, hanging.start_offset) == (
            TopicPartition(topic, 0),
            held.producer_id,
            held.start_offset,
        )
        assert hanging.transactional_id is None and "no transactional id maps" in hanging.reason
        assert hanging.duration_ms >= 20 * 60_000

        plan = admin.plan_abort(topic=topic, partition=0, start_offset=hanging.start_offset)
        assert isinstance(plan, MarkerAbortPlan) and plan.hanging == attrs_without_duration(
            plan.hanging, hanging
        )
        assert offsets(mock_cluster, topic, 0)[0] == held.start_offset  # planning writes nothing
        result = admin.abort(plan)

        lso, hw = offsets(mock_cluster, topic, 0)
        assert lso == hw and result.offsets == {f"{topic}-0": (lso, hw)}
        assert reader.end() == hw
        assert reader.read_to_end() == hw  # the consumer advanced past the aborted records
        assert reader.values == [b"before", b"after"]
        assert admin.find_hanging(topic=topic) == []
    finally:
        reader.close()


def attrs_without_duration(planned: object, found: object) -> object:
    """``found`` as planned: the two were measured at different times (duration_ms)."""
    import attrs

    return attrs.evolve(found, duration_ms=planned.duration_ms)  # type: ignore[attr-defined,misc]


def test_a_live_transaction_is_not_hanging_and_is_not_aborted_with_a_marker(
    mock_cluster: MockCluster, admin: TransactionsAdmin, topic: str
) -> None:
    mock_cluster.create_topic(topic, 2)
    live = producer(mock_cluster, "live-1")
    try:
        live.begin_transaction()
        live.send(topic, b"open", partition=1).get(TIMEOUT_S)
        held = mock_cluster.plant_hanging_transaction(topic, 0)
        # with no age limit every open transaction is a candidate: only the forgotten one is hanging
        found = admin.find_hanging(topic=topic, max_transaction_timeout_ms=0)
        assert [(h.partition.partition, h.producer_id) for h in found] == [(0, held.producer_id)]
        with pytest.raises(LiveTransactionError, match="--transactional-id live-1"):
            admin.plan_abort(topic=topic, partition=1, start_offset=0)
        assert offsets(mock_cluster, topic, 1) == (0, 1)
        live.commit_transaction()  # the live producer was left alone
    finally:
        live.close()
    assert offsets(mock_cluster, topic, 1) == (2, 2)


def test_a_partition_the_coordinator_forgot_is_hanging_with_its_transactional_id(
    mock_cluster: MockCluster, admin: TransactionsAdmin, topic: str
) -> None:
    mock_cluster.create_topic(topic, 2)
    with producer(mock_cluster, "lost-marker") as p:
        p.begin_transaction()
        p.send(topic, b"a", partition=0).get(TIMEOUT_S)
        p.send(topic, b"b", partition=1).get(TIMEOUT_S)
        mock_cluster.forget_transaction_partition("lost-marker", topic, 1)
        p.commit_transaction()
    (hanging,) = admin.find_hanging(topic=topic, max_transaction_timeout_ms=0)
    assert hanging.partition == TopicPartition(topic, 1) and hanging.transactional_id == "lost-marker"
    assert hanging.coordinator_state == "CompleteCommit" and "for no partition" in hanging.reason
    # by producer id and epoch, as kafka-transactions.sh abort --producer-id ... takes it
    plan = admin.plan_abort(
        topic=topic,
        partition=1,
        producer_id=hanging.producer_id,
        producer_epoch=hanging.producer_epoch,
        coordinator_epoch=-1,
    )
    assert isinstance(plan, MarkerAbortPlan) and plan.coordinator_epoch == 0
    admin.abort(plan)
    assert offsets(mock_cluster, topic, 1) == (2, 2)
    assert [r.value for r in mock_cluster.partition_records(topic, 1, read_committed=True)] == []


def test_find_hanging_on_a_broker_searches_its_replicas(
    mock_cluster: MockCluster, admin: TransactionsAdmin, topic: str
) -> None:
    mock_cluster.create_topic(topic, 3)
    held = [mock_cluster.plant_hanging_transaction(topic, p) for p in range(3)]
    for broker in mock_cluster.broker_ids:  # every broker holds a replica of every partition here
        found = admin.find_hanging(broker_id=broker)
        assert sorted(
            (h.partition.partition, h.producer_id) for h in found if h.partition.topic == topic
        ) == [(h.partition, h.producer_id) for h in held]
    with pytest.raises(ConfigError, match="broker 9 is not in the cluster"):
        admin.find_hanging(broker_id=9)
    with pytest.raises(ConfigError, match="--topic or --broker-id"):
        admin.find_hanging()


def test_abort_by_transactional_id_fences_it_and_the_coordinator_aborts(
    mock_cluster: MockCluster, admin: TransactionsAdmin, topic: str
) -> None:
    mock_cluster.create_topic(topic, 2)
    stuck = producer(mock_cluster, "stuck-1")
    try:
        stuck.begin_transaction()
        for p in (0, 1):
            stuck.send(topic, b"x", partition=p).get(TIMEOUT_S)
        plan = admin.plan_abort(transactional_id="stuck-1")
        assert isinstance(plan, FenceAbortPlan) and plan.state == "Ongoing"
        assert plan.partitions == (TopicPartition(topic, 0), TopicPartition(topic, 1))
        assert "ProducerFencedError" in plan.describe()
        result = admin.abort(plan)
        assert "state CompleteAbort" in result.outcome or "state Empty" in result.outcome
        assert [offsets(mock_cluster, topic, p) for p in (0, 1)] == [(2, 2), (2, 2)]
        with pytest.raises(ProducerFencedError):
            stuck.commit_transaction()
    finally:
        stuck.close(0)
    with pytest.raises(NothingToAbortError, match="no open transaction"):
        admin.plan_abort(transactional_id="stuck-1")


def test_list_describe_and_producers(mock_cluster: MockCluster, admin: TransactionsAdmin, topic: str) -> None:
    mock_cluster.create_topic(topic, 2)
    commit(mock_cluster, topic, 0, b"done", f"{topic}-p-0")
    open_one = producer(mock_cluster, f"{topic}-p-1")
    try:
        open_one.begin_transaction()
        open_one.send(topic, b"open", partition=1).get(TIMEOUT_S)
        listed = admin.list_transactions(prefix=f"{topic}-p-")
        assert [(t.transactional_id, t.state) for t in listed.listings] == [
            (f"{topic}-p-0", "CompleteCommit"),
            (f"{topic}-p-1", "Ongoing"),
        ]
        assert listed.notes == ()
        ongoing = admin.list_transactions(states=["Ongoing"], prefix=f"{topic}-p-").listings
        assert [t.transactional_id for t in ongoing] == [f"{topic}-p-1"]
        assert [
            t.transactional_id for t in admin.list_transactions(producer_ids=[open_one.producer_id]).listings
        ] == [f"{topic}-p-1"]
        # the duration filter counts from each id's last transaction start, as in the recording
        assert admin.list_transactions(prefix=f"{topic}-p-", duration_ms=3_600_000).listings == ()
        assert admin.list_transactions(prefix=f"{topic}-p-", duration_ms=0).listings == listed.listings
        d = admin.describe_transactions([f"{topic}-p-1"])[f"{topic}-p-1"]
        assert (d.state, d.partitions, d.coordinator_id) == (
            "Ongoing",
            (TopicPartition(topic, 1),),
            mock_cluster.coordinator_for(f"{topic}-p-1"),
        )
        producers = admin.describe_producers([TopicPartition(topic, 1)])[TopicPartition(topic, 1)]
        holder = producers.lso_holder
        assert holder is not None and holder.producer_id == open_one.producer_id
        assert (producers.last_stable_offset, producers.high_watermark) == (0, 1)
        open_one.commit_transaction()
    finally:
        open_one.close()


# ------------------------------------------------------------------------------------------- bad input
def test_unknown_ids_and_partitions_are_named(
    mock_cluster: MockCluster, admin: TransactionsAdmin, topic: str
) -> None:
    mock_cluster.create_topic(topic, 2)
    with pytest.raises(TransactionalIdNotFoundError, match="'nope' is unknown"):
        admin.describe_transactions(["nope"])
    with pytest.raises(TransactionalIdNotFoundError):
        admin.plan_abort(transactional_id="nope")
    with pytest.raises(UnknownPartitionError, match=f"partition {topic}-5 does not exist"):
        admin.describe_producers([TopicPartition(topic, 5)])
    with pytest.raises(UnknownPartitionError, match="topic 'missing' does not exist"):
        admin.find_hanging(topic="missing")
    with pytest.raises(NothingToAbortError, match=f"no open transaction starting at offset 7 on {topic}-0"):
        admin.plan_abort(topic=topic, partition=0, start_offset=7)
    held = mock_cluster.plant_hanging_transaction(topic, 0)
    with pytest.raises(NothingToAbortError, match="at epoch 0, not 3"):
        admin.plan_abort(topic=topic, partition=0, producer_id=held.producer_id, producer_epoch=3)
    assert offsets(mock_cluster, topic, 0) == (0, 1)  # nothing was written
    with pytest.raises(ConfigError, match="unknown transaction state"):
        admin.list_transactions(states=["Running"])


def test_a_partition_without_leader_is_named_within_the_timeout(
    mock_cluster: MockCluster, topic: str
) -> None:
    mock_cluster.create_topic(topic, 2)
    held = mock_cluster.plant_hanging_transaction(topic, 1)
    mock_cluster.set_partition_offline(topic, 1)
    with TransactionsAdmin(
        bootstrap_servers=mock_cluster.bootstrap_servers, **{"default.api.timeout.ms": 1500}
    ) as admin:
        for call in (
            lambda: admin.describe_producers([TopicPartition(topic, 1)]),
            lambda: admin.find_hanging(topic=topic),
            lambda: admin.plan_abort(topic=topic, partition=1, start_offset=held.start_offset),
        ):
            started = time.monotonic()
            with pytest.raises(LeaderNotAvailableError, match=f"{topic}-1 had no leader for 1500 ms"):
                call()
            assert time.monotonic() - started < 5
        mock_cluster.set_partition_offline(topic, 1, offline=False)
        assert [h.producer_id for h in admin.find_hanging(topic=topic)] == [held.producer_id]


def test_filters_a_broker_cannot_apply_are_refused_not_dropped(
    mock_cluster: MockCluster, admin: TransactionsAdmin, topic: str
) -> None:
    commit(mock_cluster, topic, 0, b"x", f"{topic}-a")
    old = mock_cluster.broker_ids[-1]
    mock_cluster.set_broker_api_versions(old, {"ListTransactions": (0, 0)})
    with pytest.raises(
        BrokerTooOldError, match=rf"ListTransactions v1 \(Kafka 3.8\+, KIP-994\); broker {old}"
    ):
        admin.list_transactions(duration_ms=1)
    mock_cluster.set_broker_api_versions(old, {"ListTransactions": (0, 1)})
    mock_cluster.drop_connections(old)  # an upgraded broker is a restarted one: a new ApiVersions exchange
    with pytest.raises(
        BrokerTooOldError, match=rf"ListTransactions v2 \(Kafka 4.1\+, KIP-1152\); broker {old}"
    ):
        admin.list_transactions(pattern=".*")
    # a prefix is applied here on that broker, exactly, and the note says so
    found = admin.list_transactions(prefix=f"{topic}-")
    assert [t.transactional_id for t in found.listings] == [f"{topic}-a"]
    assert found.notes == (
        f"broker {old} speaks ListTransactions v1 (a pattern needs v2, Kafka 4.1+): it listed"
        f" all of its transactions and the prefix '{topic}-' was applied here",
    )
    # no broker speaks WriteTxnMarkers: the abort says so and writes nothing
    held = mock_cluster.plant_hanging_transaction(topic, 1)
    plan = admin.plan_abort(topic=topic, partition=1, start_offset=held.start_offset)
    assert isinstance(plan, MarkerAbortPlan)
    mock_cluster.set_broker_api_versions(plan.leader_id, {"WriteTxnMarkers": (1, 0)})
    mock_cluster.drop_connections(plan.leader_id)
    with pytest.raises(BrokerTooOldError, match=f"broker {plan.leader_id} does not speak WriteTxnMarkers"):
        admin.abort(plan)
    assert offsets(mock_cluster, topic, 1) == (0, 1)
    # a broker without ListTransactions at all (before Kafka 3.0)
    mock_cluster.set_broker_api_versions(old, {"ListTransactions": (1, 0)})
    mock_cluster.drop_connections(old)
    with pytest.raises(
        BrokerTooOldError, match=r"does not speak ListTransactions \(API key 66, Kafka 3.0\+, KIP-664\)"
    ):
        admin.list_transactions()


def test_a_plan_whose_transaction_ended_meanwhile_writes_nothing(
    mock_cluster: MockCluster, admin: TransactionsAdmin, topic: str
) -> None:
    mock_cluster.create_topic(topic, 1)
    held = mock_cluster.plant_hanging_transaction(topic, 0)
    first = admin.plan_abort(topic=topic, partition=0, start_offset=held.start_offset)
    second = admin.plan_abort(topic=topic, partition=0, start_offset=held.start_offset)
    admin.abort(first)
    markers = offsets(mock_cluster, topic, 0)[1]
    with pytest.raises(NothingToAbortError, match="is no longer open there; nothing was written"):
        admin.abort(second)
    assert offsets(mock_cluster, topic, 0)[1] == markers  # no second marker

    # fencing: the planned transaction committed, and a new one began - it is not the one named
    with producer(mock_cluster, f"{topic}-busy") as p:
        p.begin_transaction()
        p.send(topic, b"1", partition=0).get(TIMEOUT_S)
        plan = admin.plan_abort(transactional_id=f"{topic}-busy")
        p.commit_transaction()
        p.begin_transaction()
        p.send(topic, b"2", partition=0).get(TIMEOUT_S)
        with pytest.raises(NothingToAbortError, match="is no longer the open one"):
            admin.abort(plan)
        p.commit_transaction()  # not fenced: nothing was aborted
