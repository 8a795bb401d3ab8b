"""Prepared transactions (two-phase commit) end to end against the MockCluster, TV1 and TV2.

What a user relies on: ``prepare_transaction()`` freezes a transaction whose records are durable
but invisible; another producer for the same transactional id can commit or abort it from the
recorded state - without InitProducerId on brokers without KIP-939, through
``init_transactions(keep_prepared_txn=True)`` + ``complete_transaction`` where InitProducerId v6 is
advertised; a second commit is a no-op success; a prepared transaction the coordinator already
aborted raises PreparedTransactionLostError (never a silent loss); and no transaction stays open.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.producers import ProducerFactory
from txnproducer import errors
from txnproducer._internal.txn.state import State
from txnproducer.prepared import PreparedTxnState
from txnproducer.producer import TransactionalProducer
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])
TOPIC = "prepared"


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-2pc")
    yield factory
    factory.close_all(5)


def committed(cluster: MockCluster, partitions: int = 3) -> list[bytes]:
    return sorted(r.value for p in range(partitions)
                  for r in cluster.partition_records(TOPIC, p, read_committed=True))


def assert_no_open_transaction(cluster: MockCluster, partitions: int = 3) -> None:
    with cluster.state.lock:
        for p in range(partitions):
            log = cluster.state.partition_log(TOPIC, p)
            assert log is not None
            assert log.last_stable_offset == log.high_watermark, f"partition {p} LSO held by an open txn"


def prepare_some(producer: TransactionalProducer, values: list[bytes]) -> PreparedTxnState:
    producer.init_transactions()
    producer.begin_transaction()
    for i, value in enumerate(values):
        producer.send(TOPIC, value, partition=i % 3)
    return producer.prepare_transaction()


def test_state_is_a_small_json_and_picklable_value() -> None:
    state = PreparedTxnState("tx", 1001, 7)
    assert PreparedTxnState.from_json(state.to_json()) == state
    assert pickle.loads(pickle.dumps(state)) == state
    assert not state.is_empty and PreparedTxnState("tx").is_empty
    with pytest.raises(ValueError, match="not a PreparedTxnState"):
        PreparedTxnState.from_json('{"producer_id": 1}')


@TVS
def test_prepared_records_are_invisible_until_committed_by_another_producer(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic(TOPIC, partitions=3)
    first = make_producer()
    state = prepare_some(first, [b"a", b"b", b"c"])
    assert first.state is State.PREPARED_TRANSACTION
    assert (state.producer_id, state.epoch) == (first.producer_id, first.epoch)
    with pytest.raises(errors.IllegalStateError, match="PREPARED_TRANSACTION"):
        first.send(TOPIC, b"late")
    first.close(5)  # the prepared transaction outlives its producer
    assert committed(mock_cluster) == []
    assert mock_cluster.describe_transaction("tx-2pc")["state"] == "Ongoing"

    inits_before = len([e for e in mock_cluster.request_log if e.api == "InitProducerId"])
    completer = make_producer()
    completer.complete_transaction(PreparedTxnState.from_json(state.to_json()))
    assert committed(mock_cluster) == [b"a", b"b", b"c"]
    assert_no_open_transaction(mock_cluster)
    # no InitProducerId: that would have aborted the prepared transaction
    assert len([e for e in mock_cluster.request_log if e.api == "InitProducerId"]) == inits_before
    end_txns = [e for e in mock_cluster.request_log if e.api == "EndTxn"]
    assert [(e.fields["producer_id"], e.fields["producer_epoch"], e.error_codes) for e in end_txns] == \
        [(state.producer_id, state.epoch, ())]
    assert completer.state is State.UNINITIALIZED

    # a second commit of the committed transaction is a no-op success (both TVs)
    make_producer().complete_transaction(state)
    assert committed(mock_cluster) == [b"a", b"b", b"c"]


@TVS
def test_abort_from_another_producer_discards_the_records(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic(TOPIC, partitions=3)
    first = make_producer()
    state = prepare_some(first, [b"x", b"y"])
    first.close(5)
    make_producer().complete_transaction(state, commit=False)
    assert committed(mock_cluster) == []
    assert_no_open_transaction(mock_cluster)
    # a later commit attempt of the aborted transaction is never silent
    with pytest.raises(errors.PreparedTransactionLostError, match="lost"):
        make_producer().complete_transaction(state)


@TVS
def test_prepared_transaction_timed_out_raises_lost_error(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic(TOPIC, partitions=3)
    first = make_producer()
    state = prepare_some(first, [b"1", b"2"])
    first.close(5)
    mock_cluster.expire_transaction("tx-2pc")
    with pytest.raises(errors.PreparedTransactionLostError) as info:
        make_producer().complete_transaction(state)
    message = str(info.value)
    assert "tx-2pc" in message and "records were lost" in message and "transaction_timeout_ms" in message
    assert committed(mock_cluster) == []
    assert_no_open_transaction(mock_cluster)


@TVS
def test_prepared_transaction_fenced_by_init_raises_lost_error(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic(TOPIC, partitions=3)
    first = make_producer()
    state = prepare_some(first, [b"1"])
    first.close(5)
    make_producer().init_transactions()  # a normal init aborts the prepared transaction
    with pytest.raises(errors.PreparedTransactionLostError, match="init_transactions"):
        make_producer().complete_transaction(state)
    assert committed(mock_cluster) == []


@TVS
def test_own_prepared_transaction_commits_and_next_one_cannot_be_committed_by_stale_state(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """TV1 keeps one epoch across transactions: the producer bumps it after a prepared
    transaction completes, so the recorded state can never commit the *next* transaction."""
    mock_cluster.create_topic(TOPIC, partitions=3)
    producer = make_producer()
    state = prepare_some(producer, [b"first"])
    producer.complete_transaction(state)
    assert producer.state is State.READY
    assert producer.epoch > state.epoch
    producer.begin_transaction()
    producer.send(TOPIC, b"second", partition=0)
    producer.flush()
    # a stale re-commit of the first transaction must not commit the open second one
    with pytest.raises(errors.PreparedTransactionLostError):
        make_producer().complete_transaction(state)
    assert committed(mock_cluster) == [b"first"]
    producer.abort_transaction()
    assert committed(mock_cluster) == [b"first"]
    assert_no_open_transaction(mock_cluster)


@TVS
def test_mismatching_state_aborts_the_prepared_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic(TOPIC, partitions=3)
    producer = make_producer()
    state = prepare_some(producer, [b"v"])
    other = PreparedTxnState(state.transactional_id, state.producer_id, state.epoch + 5)
    producer.complete_transaction(other)
    assert committed(mock_cluster) == []
    assert_no_open_transaction(mock_cluster)


@TVS
def test_empty_prepared_transaction_completes_as_a_no_op(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    producer.init_transactions()
    producer.begin_transaction()
    state = producer.prepare_transaction()
    assert state.is_empty
    make_producer().complete_transaction(state)
    producer.commit_transaction()
    assert producer.state is State.READY


def test_prepare_refuses_after_a_failed_record_and_in_wrong_states(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    with pytest.raises(errors.IllegalStateError, match=r"^prepare_transaction\(\) called before init"):
        producer.prepare_transaction()
    producer.init_transactions()
    with pytest.raises(errors.IllegalStateError, match=r"^prepare_transaction\(\) called in state READY"):
        producer.prepare_transaction()
    with pytest.raises(errors.IllegalStateError, match="READY"):
        producer.complete_transaction(PreparedTxnState("tx-2pc", 5, 5))
    with pytest.raises(errors.ConfigError, match="other"):
        make_producer().complete_transaction(PreparedTxnState("other", 5, 5))


def test_keep_prepared_txn_needs_enable_2pc(make_producer: Any) -> None:
    with pytest.raises(errors.ConfigError, match="enable_2pc"):
        make_producer().init_transactions(keep_prepared_txn=True)


def test_enable_2pc_on_a_broker_without_v6_is_a_clear_error(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    assert max(hi for k, _, hi in mock_cluster.api_versions() if k == 22) == 5  # like Kafka 4.1, 2PC off
    with pytest.raises(errors.UnsupportedVersionError, match=r"two\.phase\.commit\.enable"):
        make_producer(enable_2pc=True).init_transactions()


# ----------------------------------------------------------------------------- KIP-939 (v6)

@pytest.fixture(params=[1, 2], ids=["tv1", "tv2"])
def cluster_2pc(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, transaction_version=request.param, enable_2pc=True) as cluster:
        cluster.create_topic(TOPIC, partitions=3)
        yield cluster


def test_keep_prepared_txn_then_complete_commits(cluster_2pc: MockCluster, make_producer: Any) -> None:
    assert max(hi for k, _, hi in cluster_2pc.api_versions() if k == 22) == 6
    first = make_producer(cluster=cluster_2pc, enable_2pc=True)
    state = prepare_some(first, [b"k1", b"k2"])
    first.close(5)
    recovered = make_producer(cluster=cluster_2pc, enable_2pc=True)
    recovered.init_transactions(keep_prepared_txn=True)
    assert recovered.state is State.PREPARED_TRANSACTION
    assert recovered.epoch > state.epoch  # the old instance is fenced
    assert committed(cluster_2pc) == []
    init = [e for e in cluster_2pc.request_log if e.api == "InitProducerId"][-1]
    assert init.version == 6
    recovered.complete_transaction(state)
    assert committed(cluster_2pc) == [b"k1", b"k2"]
    assert_no_open_transaction(cluster_2pc)
    assert recovered.state is State.READY
    with recovered.transaction():  # the producer goes on normally
        recovered.send(TOPIC, b"k3", partition=0)
    assert committed(cluster_2pc) == [b"k1", b"k2", b"k3"]


def test_keep_prepared_txn_with_unknown_state_aborts(cluster_2pc: MockCluster, make_producer: Any) -> None:
    first = make_producer(cluster=cluster_2pc, enable_2pc=True)
    state = prepare_some(first, [b"gone"])
    first.close(5)
    recovered = make_producer(cluster=cluster_2pc, enable_2pc=True)
    recovered.init_transactions(keep_prepared_txn=True)
    # the application's record says a different transaction was prepared: KIP-939 aborts
    other = PreparedTxnState(state.transactional_id, state.producer_id, state.epoch - 1)
    recovered.complete_transaction(other)
    assert committed(cluster_2pc) == []
    assert_no_open_transaction(cluster_2pc)


def test_2pc_transactions_do_not_time_out(cluster_2pc: MockCluster, make_producer: Any) -> None:
    producer = make_producer(cluster=cluster_2pc, enable_2pc=True, transaction_timeout_ms=100)
    prepare_some(producer, [b"slow"])
    plain = make_producer("tx-plain", cluster=cluster_2pc, transaction_timeout_ms=100)
    prepare_some(plain, [b"plain"])
    # the coordinator's timeout check, as if 10 s had passed: only the non-2PC one is aborted
    cluster_2pc.state.txn.tick(cluster_2pc.state.now_ms() + 10_000)
    assert cluster_2pc.describe_transaction("tx-2pc")["state"] == "Ongoing"
    assert cluster_2pc.describe_transaction("tx-plain")["state"] == "CompleteAbort"
    producer.commit_transaction()
    assert committed(cluster_2pc) == [b"slow"]


def test_enable_2pc_refused_when_cluster_has_it_off(mock_cluster: MockCluster) -> None:
    error, *_ = mock_cluster.state.txn.init_producer_id_v6("t", 1000, -1, -1, enable_2pc=True)
    assert error == 53  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka with 2PC disabled
