"""The MockCluster's hanging-transaction helpers (``testing/hanging.py``): a partition that holds an open
transaction its coordinator has forgotten, in the two shapes ``find-hanging`` recognises."""

from __future__ import annotations

import time

import pytest

from txnproducer import TransactionalProducer
from txnproducer.testing import MockCluster

TOPIC = "held"


def test_planted_transaction_holds_the_partition_and_no_id_maps_to_it(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    before_ms = int(time.time() * 1000)
    held = mock_cluster.plant_hanging_transaction(TOPIC, 0, age_ms=30 * 60_000, records=2)
    after_ms = int(time.time() * 1000)
    log = mock_cluster.state.partition_log(TOPIC, 0)
    assert log is not None and (log.last_stable_offset, log.high_watermark) == (0, 2)
    state = log.producer_state(held.producer_id)
    assert state is not None and state.current_txn_first_offset == held.start_offset == 0
    # the leader keeps the batch's timestamp: 30 minutes before the call (the clock moves during it)
    assert (
        before_ms - 30 * 60_000 - 1000
        <= state.last_timestamp
        == held.last_timestamp
        <= after_ms - 30 * 60_000
    )
    with mock_cluster.state.lock:
        assert all(
            mock_cluster.state.txn.metadata(t).producer_id != held.producer_id  # type: ignore[union-attr]
            for t in mock_cluster.state.txn.transactional_ids()
        )
    # the planted producer id is never handed out again
    with TransactionalProducer(
        bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="after"
    ) as p:
        p.init_transactions()
        assert p.producer_id != held.producer_id


def test_forgotten_partition_stays_open_after_the_commit(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic(TOPIC, 2)
    with TransactionalProducer(
        bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="lost"
    ) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(TOPIC, b"a", partition=0).get(5)
        p.send(TOPIC, b"b", partition=1).get(5)
        mock_cluster.forget_transaction_partition("lost", TOPIC, 1)
        p.commit_transaction()
    logs = [mock_cluster.state.partition_log(TOPIC, n) for n in (0, 1)]
    assert [(log.last_stable_offset, log.high_watermark) for log in logs if log] == [(2, 2), (0, 1)]
    described = mock_cluster.describe_transaction("lost")
    assert described is not None and described["state"] == "CompleteCommit" and described["partitions"] == []


def test_bad_arguments_are_refused(mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    with pytest.raises(ValueError, match="no partition held-3"):
        mock_cluster.plant_hanging_transaction(TOPIC, 3)
    with pytest.raises(ValueError, match="records must be >= 1"):
        mock_cluster.plant_hanging_transaction(TOPIC, 0, records=0)
    with pytest.raises(ValueError, match="no ongoing transaction on held-0"):
        mock_cluster.forget_transaction_partition("never", TOPIC, 0)
