"""The MockCluster's transaction coordinator, driven through its handlers on a fake cluster state.

The recorded Kafka 4.1.0 answers are replayed in ``test_conformance.py``; these tests cover what the
recordings cannot show: held markers (CONCURRENT_TRANSACTIONS), coordinator placement, TV1 timeouts,
offsets staged and completed by markers, old request versions, the batched AddPartitionsToTxn form
and the admin filters.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.admin.transactions import DescribeTransactionsRequest, ListTransactionsRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

try:  # tests/mock is a plain directory (rootdir import) or a package, depending on the tree
    from _txn_fake_state import FakeState
except ImportError:  # pragma: no cover
    from tests.mock._txn_fake_state import FakeState

from txnproducer.testing.txn_metadata import offsets_partition_for

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_COORDINATOR = 16
NOT_ENOUGH_REPLICAS = 19
INVALID_REQUEST = 42
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
CONCURRENT_TRANSACTIONS = 51
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90
TRANSACTION_ABORTABLE = 120
INVALID_REGULAR_EXPRESSION = 128

TOPIC = "t"
TID = "txn-1"
GROUP = "g"


@pytest.fixture
def state() -> FakeState:
    s = FakeState(transaction_version=2)
    s.create_topic(TOPIC, 3)
    return s


def init(state: FakeState, tid: str | None = TID, version: int = 5, pid: int = -1, epoch: int = -1,
         timeout_ms: int = 60000, broker_id: int = 1) -> Any:
    return state.call(InitProducerIdRequest[version](transactional_id=tid, transaction_timeout_ms=timeout_ms,
                                                     producer_id=pid, producer_epoch=epoch), broker_id)


def add_partitions(state: FakeState, pid: int, epoch: int, partitions: list[int], version: int = 3,
                   topic: str = TOPIC, tid: str = TID, broker_id: int = 1) -> dict[int, int]:
    req_cls = AddPartitionsToTxnRequest
    resp = state.call(req_cls[version](
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[req_cls.AddPartitionsToTxnTopic(name=topic, partitions=partitions)]), broker_id)
    return {p.partition_index: p.partition_error_code
            for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition}


def end_txn(state: FakeState, pid: int, epoch: int, commit: bool, version: int = 4, tid: str = TID,
            broker_id: int = 1) -> Any:
    return state.call(EndTxnRequest[version](transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                             committed=commit), broker_id)


def txn_offset_commit(state: FakeState, pid: int, epoch: int, offset: int, version: int = 3,
                      generation_id: int = -1, broker_id: int = 1) -> int:
    req = TxnOffsetCommitRequest
    topic = req.TxnOffsetCommitRequestTopic
    resp = state.call(req[version](
        transactional_id=TID, group_id=GROUP, producer_id=pid, producer_epoch=epoch,
        generation_id=generation_id, member_id="", group_instance_id=None,
        topics=[topic(name=TOPIC, partitions=[topic.TxnOffsetCommitRequestPartition(
            partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="")])]),
        broker_id)
    codes = {p.error_code for t in resp.topics for p in t.partitions}
    assert len(codes) == 1
    return codes.pop()


def describe(state: FakeState, tid: str = TID, broker_id: int = 1) -> Any:
    resp = state.call(DescribeTransactionsRequest[0](transactional_ids=[tid]), broker_id)
    return resp.transaction_states[0]


def markers(state: FakeState, partition: int) -> list[tuple[int, int, str, int]]:
    log = state.partition_log(TOPIC, partition)
    assert log is not None
    return log.markers


# ---------------------------------------------------------------- held markers
def test_held_markers_keep_tv1_transaction_in_prepare_commit_until_released(state: FakeState) -> None:
    r = init(state, version=4)
    pid = r.producer_id
    assert add_partitions(state, pid, 0, [0, 1]) == {0: NONE, 1: NONE}
    state.txn.hold_markers(TID)

    assert end_txn(state, pid, 0, commit=True).error_code == NONE
    # TV1 produce verification turns the busy coordinator into a retriable produce error
    assert state.txn.verify_produce(pid, 0, TOPIC, 0, 11) == (NOT_ENOUGH_REPLICAS, None)
    assert describe(state).transaction_state == "PrepareCommit"
    assert markers(state, 0) == []
    # everything that needs the transaction finished is told to retry
    assert add_partitions(state, pid, 0, [0]) == {0: CONCURRENT_TRANSACTIONS}
    assert init(state, version=4).error_code == CONCURRENT_TRANSACTIONS
    assert end_txn(state, pid, 0, commit=True).error_code == CONCURRENT_TRANSACTIONS
    assert end_txn(state, pid, 0, commit=False).error_code == INVALID_TXN_STATE

    before = state.notifications
    state.txn.release_markers()
    assert state.notifications > before
    assert markers(state, 0) == [(pid, 0, "COMMIT", 0)]
    assert markers(state, 1) == [(pid, 0, "COMMIT", 0)]
    assert describe(state).transaction_state == "CompleteCommit"
    assert add_partitions(state, pid, 0, [0]) == {0: NONE}


def test_held_markers_under_tv2_answer_the_bumped_epoch_and_refuse_produce_retriably(
        state: FakeState) -> None:
    pid = init(state).producer_id
    assert state.txn.verify_produce(pid, 0, TOPIC, 0, 12) == (NONE, None)
    state.txn.hold_markers()

    r = end_txn(state, pid, 0, commit=True, version=5)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (NONE, pid, 1)
    assert describe(state).transaction_state == "PrepareCommit"
    # the producer's next transaction cannot start before the markers are written
    assert state.txn.verify_produce(pid, 1, TOPIC, 0, 12) == (CONCURRENT_TRANSACTIONS, None)
    # a retry of the EndTxn (answer lost) is told to wait, not fenced
    assert end_txn(state, pid, 0, commit=True, version=5).error_code == CONCURRENT_TRANSACTIONS

    state.txn.release_markers()
    assert markers(state, 0) == [(pid, 1, "COMMIT", 0)]
    assert state.txn.verify_produce(pid, 1, TOPIC, 0, 12) == (NONE, None)
    assert describe(state).transaction_state == "Ongoing"


def test_fencing_an_ongoing_transaction_with_held_markers_keeps_answering_concurrent(
        state: FakeState) -> None:
    pid = init(state).producer_id
    state.txn.verify_produce(pid, 0, TOPIC, 2, 12)
    state.txn.hold_markers(TID)
    assert init(state).error_code == CONCURRENT_TRANSACTIONS
    assert init(state).error_code == CONCURRENT_TRANSACTIONS
    assert describe(state).transaction_state == "PrepareAbort"
    state.txn.release_markers()
    assert markers(state, 2) == [(pid, 1, "ABORT", 0)]
    r = init(state)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (NONE, pid, 2)


# ---------------------------------------------------------------- placement
def test_requests_to_a_broker_that_does_not_coordinate_the_id_get_not_coordinator(state: FakeState) -> None:
    pid = init(state, version=4).producer_id
    state.coordinators[(1, TID)] = 2
    assert init(state, version=4).error_code == NOT_COORDINATOR
    assert add_partitions(state, pid, 0, [0]) == {0: NOT_COORDINATOR}
    assert end_txn(state, pid, 0, commit=False).error_code == NOT_COORDINATOR
    assert describe(state).error_code == NOT_COORDINATOR
    add_offsets = AddOffsetsToTxnRequest[3](transactional_id=TID, producer_id=pid, producer_epoch=0,
                                            group_id=GROUP)
    assert state.call(add_offsets).error_code == NOT_COORDINATOR
    # the right broker answers normally; idempotent producers may ask any broker
    assert add_partitions(state, pid, 0, [0], broker_id=2) == {0: NONE}
    assert init(state, tid=None, broker_id=3).error_code == NONE


def test_txn_offset_commit_is_answered_by_the_group_coordinator_only(state: FakeState) -> None:
    pid = init(state, version=4).producer_id
    state.coordinators[(0, GROUP)] = 3
    assert txn_offset_commit(state, pid, 0, 5) == NOT_COORDINATOR


# ---------------------------------------------------------------- timeouts
def test_tv1_transaction_times_out_with_an_epoch_fence(state: FakeState) -> None:
    pid = init(state, version=4, timeout_ms=1000).producer_id
    add_partitions(state, pid, 0, [1])
    state.advance(1000)
    assert describe(state).transaction_state == "Ongoing"
    state.advance(1)
    d = describe(state)
    assert (d.transaction_state, d.producer_epoch) == ("CompleteAbort", 1)
    assert markers(state, 1) == [(pid, 1, "ABORT", 0)]
    # TV1 forgets the fenced epoch: the old producer is fenced everywhere, also for a KIP-360 bump
    assert end_txn(state, pid, 0, commit=True).error_code == PRODUCER_FENCED
    assert add_partitions(state, pid, 0, [1]) == {1: PRODUCER_FENCED}
    assert init(state, version=4, pid=pid, epoch=0, timeout_ms=1000).error_code == PRODUCER_FENCED
    r = init(state, version=4, timeout_ms=1000)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (NONE, pid, 2)


def test_expire_transaction_aborts_now_and_only_an_ongoing_one(state: FakeState) -> None:
    pid = init(state).producer_id
    state.txn.expire_transaction(TID)  # nothing ongoing: no change
    assert describe(state).transaction_state == "Empty"
    state.txn.verify_produce(pid, 0, TOPIC, 0, 12)
    state.txn.expire_transaction(TID)
    d = describe(state)
    assert (d.transaction_state, d.producer_epoch) == ("CompleteAbort", 1)
    assert markers(state, 0) == [(pid, 1, "ABORT", 0)]


# ---------------------------------------------------------------- offsets
def test_tv1_offsets_need_add_offsets_and_are_committed_by_the_commit_marker(state: FakeState) -> None:
    pid = init(state, version=4).producer_id
    assert txn_offset_commit(state, pid, 0, 5, version=3) == INVALID_TXN_STATE
    assert txn_offset_commit(state, pid, 0, 5, version=4) == TRANSACTION_ABORTABLE
    add_offsets = AddOffsetsToTxnRequest[3](transactional_id=TID, producer_id=pid, producer_epoch=0,
                                            group_id=GROUP)
    assert state.call(add_offsets).error_code == NONE
    topics = describe(state).topics
    expected = [("__consumer_offsets", [offsets_partition_for(GROUP)])]
    assert [(t.topic, t.partitions) for t in topics] == expected
    assert txn_offset_commit(state, pid, 0, 5) == NONE
    assert txn_offset_commit(state, pid, 1, 5) == INVALID_PRODUCER_EPOCH
    assert state.groups.committed(GROUP) == {}

    assert end_txn(state, pid, 0, commit=True).error_code == NONE
    assert state.groups.committed(GROUP) == {(TOPIC, 0): 5}


def test_aborted_tv2_offsets_are_discarded(state: FakeState) -> None:
    pid = init(state).producer_id
    assert txn_offset_commit(state, pid, 0, 7, version=5) == NONE
    assert describe(state).transaction_state == "Ongoing"
    assert end_txn(state, pid, 0, commit=False, version=5).error_code == NONE
    assert state.groups.committed(GROUP) == {}
    assert state.groups.completed == [(GROUP, pid, False)]


def test_txn_offset_commit_during_held_markers_is_concurrent_transactions(state: FakeState) -> None:
    pid = init(state).producer_id
    state.txn.verify_produce(pid, 0, TOPIC, 0, 12)
    state.txn.hold_markers()
    end_txn(state, pid, 0, commit=True, version=5)
    assert txn_offset_commit(state, pid, 1, 7, version=5) == CONCURRENT_TRANSACTIONS


def test_offsets_partition_matches_the_jvm_hash() -> None:
    # (s.hashCode() & 0x7fffffff) % 50 computed on a JVM
    assert offsets_partition_for("my-group") == 36
    assert offsets_partition_for("conformance-group-\u00e9") == 37
    assert offsets_partition_for("") == 0


# ---------------------------------------------------------------- produce checks
def test_tv1_cluster_needs_add_partitions_even_for_produce_v12() -> None:
    state = FakeState(transaction_version=1)
    state.create_topic(TOPIC, 1)
    pid = init(state, version=4).producer_id
    assert state.txn.verify_produce(pid, 0, TOPIC, 0, 12) == (TRANSACTION_ABORTABLE, None)
    assert state.txn.verify_produce(pid, 0, TOPIC, 0, 10) == (INVALID_TXN_STATE,
                                                             "Partition was not added to the transaction")
    add_partitions(state, pid, 0, [0])
    assert state.txn.verify_produce(pid, 0, TOPIC, 0, 12) == (NONE, None)


def test_produce_from_an_unknown_producer_is_refused(state: FakeState) -> None:
    assert state.txn.verify_produce(424242, 0, TOPIC, 0, 12) == (INVALID_PRODUCER_ID_MAPPING, None)
    pid = init(state).producer_id
    assert state.txn.verify_produce(pid, 0, TOPIC, 0, 12, transactional_id="other") == \
        (INVALID_PRODUCER_ID_MAPPING, None)
    assert state.txn.verify_produce(pid, 0, TOPIC, 0, 12, transactional_id=TID) == (NONE, None)


# ---------------------------------------------------------------- request versions and validation
def test_old_request_versions_get_invalid_producer_epoch_instead_of_producer_fenced(state: FakeState) -> None:
    pid = init(state, version=4).producer_id
    init(state, version=4)  # epoch 1 fences epoch 0
    assert end_txn(state, pid, 0, commit=True, version=1).error_code == INVALID_PRODUCER_EPOCH
    assert end_txn(state, pid, 0, commit=True, version=2).error_code == PRODUCER_FENCED
    assert add_partitions(state, pid, 0, [0], version=1) == {0: INVALID_PRODUCER_EPOCH}
    assert add_partitions(state, pid, 0, [0], version=2) == {0: PRODUCER_FENCED}
    assert init(state, version=3, pid=pid, epoch=0).error_code == INVALID_PRODUCER_EPOCH
    assert init(state, version=4, pid=pid, epoch=0).error_code == PRODUCER_FENCED


def test_init_producer_id_validation(state: FakeState) -> None:
    assert init(state, pid=-1, epoch=3).error_code == INVALID_REQUEST
    assert init(state, tid="").error_code == INVALID_REQUEST
    assert init(state, timeout_ms=900001).error_code == 50
    req = InitProducerIdRequest[6](transactional_id=TID, transaction_timeout_ms=60000, producer_id=-1,
                                   producer_epoch=-1, enable2_pc=True, keep_prepared_txn=False)
    assert state.call(req).error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    r = init(state, version=6)
    assert (r.error_code, r.producer_epoch) == (NONE, 0)


def test_producer_ids_are_new_and_increasing(state: FakeState) -> None:
    ids = [init(state, tid=None).producer_id for _ in range(3)] + [init(state, tid="x").producer_id]
    assert ids == sorted(set(ids))


def test_add_partitions_to_unknown_topic_is_refused_without_adding_the_others(state: FakeState) -> None:
    pid = init(state, version=4).producer_id
    req = AddPartitionsToTxnRequest
    resp = state.call(req[3](v3_and_below_transactional_id=TID, v3_and_below_producer_id=pid,
                             v3_and_below_producer_epoch=0, v3_and_below_topics=[
                                 req.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0]),
                                 req.AddPartitionsToTxnTopic(name="missing", partitions=[0])]))
    codes = {(t.name, p.partition_index): p.partition_error_code
             for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition}
    assert codes == {(TOPIC, 0): OPERATION_NOT_ATTEMPTED, ("missing", 0): UNKNOWN_TOPIC_OR_PARTITION}
    assert describe(state).transaction_state == "Empty"


def test_batched_add_partitions_verify_only_and_add(state: FakeState) -> None:
    pid = init(state, version=4).producer_id
    add_partitions(state, pid, 0, [0])
    req = AddPartitionsToTxnRequest
    txn = req.AddPartitionsToTxnTransaction

    def batched(verify_only: bool) -> dict[int, int]:
        resp = state.call(req[4](transactions=[txn(
            transactional_id=TID, producer_id=pid, producer_epoch=0, verify_only=verify_only,
            topics=[txn.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0, 1])])]))
        assert resp.error_code == NONE
        (result,) = resp.results_by_transaction
        assert result.transactional_id == TID
        return {p.partition_index: p.partition_error_code
                for t in result.topic_results for p in t.results_by_partition}

    assert batched(verify_only=True) == {0: NONE, 1: TRANSACTION_ABORTABLE}
    assert batched(verify_only=False) == {0: NONE, 1: NONE}
    assert batched(verify_only=True) == {0: NONE, 1: NONE}


# ---------------------------------------------------------------- admin
def list_txns(state: FakeState, version: int = 2, broker_id: int = 1, **filters: Any) -> Any:
    args: dict[str, Any] = {"state_filters": [], "producer_id_filters": []}
    if version >= 1:
        args["duration_filter"] = -1
    if version >= 2:
        args["transactional_id_pattern"] = None
    args.update(filters)
    return state.call(ListTransactionsRequest[version](**args), broker_id)


def test_list_transactions_filters(state: FakeState) -> None:
    a = init(state, tid="a").producer_id
    init(state, tid="b")
    state.txn.verify_produce(a, 0, TOPIC, 0, 12, transactional_id="a")
    state.advance(5000)

    def ids(resp: Any) -> list[str]:
        return sorted(t.transactional_id for t in resp.transaction_states)

    assert ids(list_txns(state)) == ["a", "b"]
    assert ids(list_txns(state, state_filters=["Ongoing"])) == ["a"]
    only_unknown = list_txns(state, state_filters=["Nope"])
    assert (ids(only_unknown), only_unknown.unknown_state_filters) == ([], ["Nope"])
    assert ids(list_txns(state, state_filters=["Ongoing"], duration_filter=4000)) == ["a"]
    assert ids(list_txns(state, state_filters=["Ongoing"], duration_filter=6000)) == []
    assert ids(list_txns(state, transactional_id_pattern="b|c")) == ["b"]
    assert list_txns(state, transactional_id_pattern="(").error_code == INVALID_REGULAR_EXPRESSION
    assert ids(list_txns(state, version=0, producer_id_filters=[a])) == ["a"]
    state.coordinators[(1, "b")] = 2
    assert ids(list_txns(state)) == ["a"]
    assert ids(list_txns(state, broker_id=2)) == ["b"]


def test_describe_reports_partitions_in_first_added_order(state: FakeState) -> None:
    pid = init(state).producer_id
    for p in (2, 0):
        state.txn.verify_produce(pid, 0, TOPIC, p, 12)
    d = describe(state)
    assert [(t.topic, list(t.partitions)) for t in d.topics] == [(TOPIC, [2, 0])]
    snapshot = state.txn.describe(TID)
    assert snapshot is not None
    assert (snapshot["state"], snapshot["partitions"]) == ("Ongoing", [(TOPIC, 0), (TOPIC, 2)])
    assert state.txn.describe("nope") is None


def test_fencing_a_transaction_at_the_last_epoch_moves_to_a_new_producer_id(state: FakeState) -> None:
    pid = init(state).producer_id
    md = state.txn.metadata(TID)
    assert md is not None
    md.producer_epoch = 32766  # as if bumped that far (the recordings show the ~32760 bumps)
    assert state.txn.verify_produce(pid, 32766, TOPIC, 0, 12) == (NONE, None)
    assert init(state, pid=pid, epoch=32766).error_code == CONCURRENT_TRANSACTIONS
    assert markers(state, 0) == [(pid, 32767, "ABORT", 0)]
    r = init(state, pid=pid, epoch=32766)
    assert r.error_code == NONE
    assert (r.producer_id != pid, r.producer_epoch) == (True, 0)
    # the same request again (answer lost) gets the same new id
    again = init(state, pid=pid, epoch=32766)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (NONE, r.producer_id, 0)


# ---------------------------------------------------------------- inside a running MockCluster
def add_error(response: Any) -> int:
    (topic,) = response.results_by_topic_v3_and_below
    (partition,) = topic.results_by_partition
    return int(partition.partition_error_code)


def test_cluster_held_markers_answer_concurrent_transactions_to_a_pipelined_add(mock_cluster: Any,
                                                                                wire: Any) -> None:
    """What the recording saw by chance (errors.json case f), made deterministic with held markers."""
    mock_cluster.create_topic("held", 1)
    coordinator = wire(mock_cluster.coordinator_for("txn-held"))
    r = coordinator.send(InitProducerIdRequest[4](transactional_id="txn-held", transaction_timeout_ms=60000,
                                                  producer_id=-1, producer_epoch=-1))
    pid = r.producer_id
    req = AddPartitionsToTxnRequest
    add = req[3](v3_and_below_transactional_id="txn-held", v3_and_below_producer_id=pid,
                 v3_and_below_producer_epoch=0,
                 v3_and_below_topics=[req.AddPartitionsToTxnTopic(name="held", partitions=[0])])
    assert add_error(coordinator.send(add)) == NONE
    mock_cluster.hold_markers("txn-held")
    end_id = coordinator.send_nowait(EndTxnRequest[4](transactional_id="txn-held", producer_id=pid,
                                                      producer_epoch=0, committed=True))
    add_id = coordinator.send_nowait(add)
    assert coordinator.receive(end_id).error_code == NONE
    assert add_error(coordinator.receive(add_id)) == CONCURRENT_TRANSACTIONS
    assert mock_cluster.describe_transaction("txn-held")["state"] == "PrepareCommit"

    mock_cluster.release_markers()
    assert mock_cluster.describe_transaction("txn-held")["state"] == "CompleteCommit"
    assert add_error(coordinator.send(add)) == NONE


def test_cluster_timer_aborts_a_timed_out_transaction(mock_cluster: Any, wire: Any) -> None:
    mock_cluster.create_topic("slow", 1)
    coordinator = wire(mock_cluster.coordinator_for("txn-slow"))
    pid = coordinator.send(InitProducerIdRequest[5](transactional_id="txn-slow", transaction_timeout_ms=100,
                                                    producer_id=-1, producer_epoch=-1)).producer_id
    state = mock_cluster.state
    with state.lock:
        assert state.txn.verify_produce(pid, 0, "slow", 0, 12, transactional_id="txn-slow") == (NONE, None)
        ok = state.cond.wait_for(lambda: state.txn.describe("txn-slow")["state"] == "CompleteAbort",
                                 timeout=5)
    assert ok, "the cluster timer did not abort the transaction within 5 s"
    described = mock_cluster.describe_transaction("txn-slow")
    assert (described["producer_id"], described["producer_epoch"]) == (pid, 1)


# ---------------------------------------------------------------- third-party clients
@pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True)
def test_confluent_kafka_transactions_commit_abort_and_offsets(mock_cluster: Any) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    mock_cluster.create_topic("ck", 3)
    producer = confluent_kafka.Producer({"bootstrap.servers": mock_cluster.bootstrap_servers,
                                         "transactional.id": "ck-txn", "transaction.timeout.ms": 10000})
    consumer = confluent_kafka.Consumer({"bootstrap.servers": mock_cluster.bootstrap_servers,
                                         "group.id": "ck-group", "enable.auto.commit": False})
    try:
        producer.init_transactions(10)
        for i, commit in enumerate((True, False, True)):
            producer.begin_transaction()
            producer.produce("ck", key=b"k", value=f"txn{i}".encode())
            if commit:
                producer.send_offsets_to_transaction([confluent_kafka.TopicPartition("ck", 0, 10 + i)],
                                                     consumer.consumer_group_metadata(), 10)
                producer.commit_transaction(10)
            else:
                producer.abort_transaction(10)
    finally:
        consumer.close()
    values = sorted(r.value for p in range(3)
                    for r in mock_cluster.partition_records("ck", p, read_committed=True))
    assert values == [b"txn0", b"txn2"]
    assert mock_cluster.committed_offsets("ck-group") == {("ck", 0): 12}
    assert mock_cluster.describe_transaction("ck-txn")["state"] == "CompleteCommit"


@pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True)
def test_kafka_python_transactions_commit_and_abort(mock_cluster: Any) -> None:
    from kafka import KafkaProducer

    mock_cluster.create_topic("kp", 3)
    producer = KafkaProducer(bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="kp-txn")
    try:
        producer.init_transactions()
        for i, commit in enumerate((True, False, True)):
            producer.begin_transaction()
            producer.send("kp", value=f"txn{i}".encode())
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(timeout=5)
    values = sorted(r.value for p in range(3)
                    for r in mock_cluster.partition_records("kp", p, read_committed=True))
    assert values == [b"txn0", b"txn2"]
