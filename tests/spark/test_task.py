"""A task attempt of the txnkafka sink against the driver's decision, at every ordering, without Spark.

What a pipeline relies on: retried, speculative and late attempts neither duplicate records nor
leave an open transaction holding the last stable offset once their batch is decided, and the
transactional ids a query uses do not grow with its batches. Each test puts the driver's commit at
one exact point of an attempt (before it starts, between announcing and registering its id, between
registering and writing) - the orderings the argument in ``txnproducer/spark/task.py`` covers.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (the [spark] extra)")

from tests._support.sink_protocol import (
    TOPIC,
    assert_settled,
    attempt,
    committed,
    committer,
    open_transactions,
    sink_options,
    transactional_ids,
)
from txnproducer.errors import TxnProducerError
from txnproducer.producer import TransactionalProducer
from txnproducer.spark import PoolExhaustedError, pool_bound
from txnproducer.spark.sink import task as task_module
from txnproducer.spark.sink.completion import SinkCommitError
from txnproducer.spark.sink.options import SinkOptions
from txnproducer.spark.sink.state_topic import StateTopic, close_shared_state_topic
from txnproducer.testing import MockCluster

ROWS = [b"v%d" % i for i in range(5)]


def commit(options: SinkOptions, messages: list[object], batch: int) -> None:
    with committer(options) as driver:
        driver.commit(messages, batch)


def init_producer_ids(cluster: MockCluster, transactional_id: str, since: int = 0) -> int:
    return sum(1 for e in cluster.request_log
               if e.seq >= since and e.api == "InitProducerId"
               and e.fields.get("transactional_id") == transactional_id)


def test_speculative_attempt_that_prepared_but_lost_is_fenced_by_the_commit(
        cluster: MockCluster, options: SinkOptions) -> None:
    winner = attempt(options, 0, 0, 0, ROWS)
    loser = attempt(options, 0, 0, 1, ROWS)  # a speculative copy that also finished
    assert loser.state is not None and winner.state is not None
    assert loser.state.transactional_id != winner.state.transactional_id
    assert open_transactions(cluster, TOPIC), "both attempts hold prepared transactions"

    commit(options, [winner], 0)  # Spark reports one message per partition: the winner's

    assert_settled(cluster, TOPIC, ROWS)
    loser_id = loser.state.transactional_id
    assert cluster.describe_transaction(loser_id)["state"] in ("CompleteAbort", "Empty")


def test_attempt_starting_after_the_commit_registers_no_id(
        cluster: MockCluster, options: SinkOptions) -> None:
    commit(options, [attempt(options, 0, 0, 0, ROWS)], 0)
    since = cluster.requests.next_seq()

    late = attempt(options, 0, 0, 1, ROWS)  # a speculative attempt Spark launched too late

    assert late.superseded and late.records == 0
    assert [e.api for e in cluster.request_log if e.seq >= since and e.api == "InitProducerId"] == []
    assert_settled(cluster, TOPIC, ROWS)


def test_attempt_registering_after_the_fence_sees_the_decision(
        cluster: MockCluster, options: SinkOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    """Announced before the decision, registered after the driver fenced it: the second look
    at the decision stops it before it opens a transaction."""
    winner = attempt(options, 0, 0, 0, ROWS)
    make_producer = task_module._producer

    def driver_commits_first(opts: SinkOptions, transactional_id: str) -> TransactionalProducer:
        commit(options, [winner], 0)  # decision, completion, fence of the announced late id
        return make_producer(opts, transactional_id)

    monkeypatch.setattr(task_module, "_producer", driver_commits_first)
    late = attempt(options, 0, 0, 1, ROWS)

    assert late.superseded
    assert_settled(cluster, TOPIC, ROWS)


def test_attempt_announcing_after_the_driver_read_the_announcements_sees_the_decision(
        cluster: MockCluster, options: SinkOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    winner = attempt(options, 0, 0, 0, ROWS)
    announce = StateTopic.announce

    def driver_commits_first(self: StateTopic, announcement: object) -> None:
        commit(options, [winner], 0)
        announce(self, announcement)  # type: ignore[arg-type]

    monkeypatch.setattr(StateTopic, "announce", driver_commits_first)
    late = attempt(options, 0, 0, 1, ROWS)

    assert late.superseded
    assert_settled(cluster, TOPIC, ROWS)


def test_attempt_registered_before_the_decision_is_fenced_and_leaves_nothing_open(
        cluster: MockCluster, options: SinkOptions) -> None:
    """Registered and past its second look when the driver decides: the driver's fence ends its
    transaction, and its writes are refused."""
    winner = attempt(options, 0, 0, 0, ROWS)

    with pytest.raises(TxnProducerError) as failure:
        attempt(options, 0, 0, 1, [b"late"], during=lambda producer: commit(options, [winner], 0))

    # the driver's fence bumped the epoch: the broker refuses the attempt's batch
    assert "INVALID_PRODUCER_EPOCH" in str(failure.value) or "PRODUCER_FENCED" in str(failure.value)
    assert_settled(cluster, TOPIC, ROWS)


def test_ids_are_reused_across_batches_and_stay_within_the_pool(
        cluster: MockCluster, options: SinkOptions) -> None:
    expected: list[bytes] = []
    for batch in range(12):
        messages = []
        for partition in range(2):
            values = [b"b%d-p%d-%d" % (batch, partition, i) for i in range(3)]
            # every third batch, partition 1's first attempt fails after writing part of its rows
            if batch % 3 == 0 and partition == 1:
                with pytest.raises(RuntimeError):
                    attempt(options, batch, partition, 0, values, during=_fail)
                messages.append(attempt(options, batch, partition, 1, values, kafka_partition=1))
            else:
                messages.append(attempt(options, batch, partition, 0, values, kafka_partition=partition))
            expected += values
        commit(options, messages, batch)

    assert sorted(committed(cluster, TOPIC, 2)) == sorted(expected)
    assert open_transactions(cluster, TOPIC, 2) == []
    ids = transactional_ids(cluster)
    assert ids == ["q1-0-0", "q1-1-0", "q1-1-1"]  # 24 task attempts, 3 ids
    assert len(ids) <= pool_bound(2, options.slots)


def _fail(producer: TransactionalProducer) -> None:
    producer.send(TOPIC, b"partial", partition=1)
    producer.flush()
    raise RuntimeError("injected failure of the task's first attempt")


def test_attempt_of_a_resubmitted_stage_skips_the_id_of_a_live_attempt(
        cluster: MockCluster, options: SinkOptions) -> None:
    """Spark numbers the attempts of a resubmitted stage from 0 again: the new attempt 0 must not
    register the id of the old attempt 0, which has prepared its transaction."""
    old = attempt(options, 0, 0, 0, ROWS)
    new = attempt(options, 0, 0, 0, ROWS)
    assert old.state is not None and new.state is not None
    assert (old.state.transactional_id, new.state.transactional_id) == ("q1-0-0", "q1-0-1")

    commit(options, [old], 0)  # Spark took the old attempt's result

    assert_settled(cluster, TOPIC, ROWS)


def test_attempt_finding_every_id_busy_fails_without_registering(cluster: MockCluster) -> None:
    options = sink_options(cluster, TOPIC, slots=2)
    attempt(options, 0, 0, 0, ROWS)
    attempt(options, 0, 0, 1, ROWS)
    since = cluster.requests.next_seq()

    with pytest.raises(PoolExhaustedError, match=r"transactional\.id\.slots"):
        attempt(options, 0, 0, 2, ROWS)

    assert [e for e in cluster.request_log if e.seq >= since and e.api == "InitProducerId"] == []


def test_replay_of_a_committed_batch_writes_nothing(cluster: MockCluster, options: SinkOptions) -> None:
    commit(options, [attempt(options, 4, 0, 0, ROWS)], 4)

    replay = attempt(options, 4, 0, 0, ROWS)  # the query restarted before Spark recorded batch 4
    commit(options, [replay], 4)

    assert replay.superseded
    assert_settled(cluster, TOPIC, ROWS)


def test_abort_settles_attempts_that_started_before_it_but_not_the_replay(
        cluster: MockCluster, options: SinkOptions) -> None:
    first = attempt(options, 2, 0, 0, ROWS)

    def driver_aborts(producer: TransactionalProducer) -> None:
        with committer(options) as driver:
            driver.abort([first], 2)

    # an attempt running while the batch is aborted: fenced
    with pytest.raises(TxnProducerError):
        attempt(options, 2, 0, 1, [b"late"], during=driver_aborts)
    assert committed(cluster, TOPIC) == []
    assert open_transactions(cluster, TOPIC) == []

    # the restarted query replays batch 2: the abort it finds at its start does not stop it
    replay = attempt(options, 2, 0, 0, ROWS, query="query-1")
    assert not replay.superseded
    commit(options, [replay], 2)
    assert_settled(cluster, TOPIC, ROWS)


def test_decision_of_another_query_id_does_not_supersede(cluster: MockCluster, options: SinkOptions) -> None:
    """A reset checkpoint restarts the batch ids under a new query id: its batch 0 is written."""
    commit(options, [attempt(options, 7, 0, 0, ROWS, query="query-1")], 7)

    fresh = attempt(options, 0, 0, 0, [b"new"], query="query-2")
    commit(options, [fresh], 0)

    assert not fresh.superseded
    assert_settled(cluster, TOPIC, [*ROWS, b"new"])


def test_init_producer_id_count_of_a_plain_attempt(cluster: MockCluster, options: SinkOptions) -> None:
    """An attempt registers its id once; the driver's commit does not register the winner's."""
    since = cluster.requests.next_seq()
    commit(options, [attempt(options, 0, 0, 0, ROWS)], 0)
    assert init_producer_ids(cluster, "q1-0-0", since) == 1


@pytest.mark.parametrize("start", [32763, 32764], ids=["commit-at-32766", "init-at-32766"])
def test_prepared_transactions_cross_the_end_of_the_epoch_range(
        cluster: MockCluster, options: SinkOptions, start: int) -> None:
    """Each attempt registers its id (epoch + 1) and the driver's EndTxn ends it (TV2: + 1): a pool id
    reaches 32766 either at a commit, which rotates the producer id, or at a registration, which
    gets a new one. Batches go on across both, and nothing ever runs at 32767."""
    commit(options, [attempt(options, 0, 0, 0, ROWS)], 0)  # registers q1-0-0
    cluster.set_producer_epoch("q1-0-0", start)
    expected = list(ROWS)
    pids = set()
    for batch in range(1, 4):
        values = [b"e%d-%d" % (batch, i) for i in range(3)]
        message = attempt(options, batch, 0, 0, values)
        assert message.state is not None and message.state.transactional_id == "q1-0-0"
        assert message.state.epoch < 32767
        pids.add(message.state.producer_id)
        commit(options, [message], batch)
        expected += values
    assert len(pids) == 2  # crossed to a new producer id once
    assert_settled(cluster, TOPIC, expected)
    assert not [e for e in cluster.request_log if e.fields.get("producer_epoch") == 32767
                and e.api in ("EndTxn", "Produce", "AddPartitionsToTxn")]


def test_a_prepared_transaction_timed_out_at_32766_is_reported_and_its_id_registers_anew(
        cluster: MockCluster, options: SinkOptions) -> None:
    """The coordinator aborts a prepared transaction at 32766 on its own (Kafka 4.1 leaves the id at
    32767): the driver's commit reports the lost records, as for any timed-out prepared transaction
    (the query stops: docs/guide/spark.md), and the id's next registration - what the next attempt
    does - gets a new producer id instead of the epoch no transaction can end at."""
    commit(options, [attempt(options, 0, 0, 0, ROWS)], 0)
    cluster.set_producer_epoch("q1-0-0", 32765)  # the next registration lands on 32766
    message = attempt(options, 1, 0, 0, [b"timed-out"])
    assert message.state is not None and message.state.epoch == 32766
    cluster.expire_transaction("q1-0-0")
    with pytest.raises(SinkCommitError, match="RECORDS WERE LOST"), committer(options) as driver:
        driver.commit([message], 1)
    with task_module._producer(options, "q1-0-0") as registering:
        registering.init_transactions()
        assert registering.producer_id != message.state.producer_id and registering.epoch == 0
    assert committed(cluster, TOPIC) == list(ROWS)


def test_a_cluster_gone_and_replaced_at_the_same_address_gets_its_state_topic_created(
        cluster: MockCluster, options: SinkOptions) -> None:
    """close_shared_state_topic() (the cluster went) forgets that the state topic was found: a cluster
    started later at the same address - here the same one, its state topic deleted - gets it created when
    the next driver ensures it, not an UNKNOWN_TOPIC_OR_PARTITION in its tasks (seen in a CI run when a
    test's MockCluster got the port of the one before it)."""
    commit(options, [attempt(options, 0, 0, 0, ROWS)], 0)
    close_shared_state_topic()
    cluster.delete_topic(options.state_topic)
    again = sink_options(cluster, TOPIC)  # what the next query's driver does first: the state topic ensured
    commit(again, [attempt(again, 1, 0, 0, ROWS)], 1)
    assert_settled(cluster, TOPIC, ROWS + ROWS)
