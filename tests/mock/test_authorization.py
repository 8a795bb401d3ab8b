"""Authorization checks of the MockCluster's handlers: each API refused as Apache Kafka's ``KafkaApis``
refuses it - which ACL it needs, the error code, where in the answer the code sits - and allowed once the
ACL is added (tests add and remove ACLs at run time, as an operator would).

One broker (every coordinator on it); the client authenticates as ``User:alice`` with SASL PLAIN, so the
checks run against a real principal; ``User:admin`` is a super user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.mock._secure_wire import authenticate, connect
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster, api_messages
from txnproducer.testing.wire_client import WireClient, build_batch

ALICE = "User:alice"
TOPIC_AUTH = ec.TOPIC_AUTHORIZATION_FAILED
GROUP_AUTH = ec.GROUP_AUTHORIZATION_FAILED
CLUSTER_AUTH = ec.CLUSTER_AUTHORIZATION_FAILED
TXN_AUTH = ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
Login = Callable[..., WireClient]


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1, sasl_mechanisms=["PLAIN"], users={"alice": "a", "admin": "b"}, acls=[],
                     super_users=["User:admin"]) as c:
        c.create_topic("orders", 2)
        c.create_topic("secret", 1)
        yield c


@pytest.fixture
def login(cluster: MockCluster) -> Iterator[Login]:
    opened: list[WireClient] = []

    def open_as(user: str = "alice", password: str = "a") -> WireClient:
        client = connect(cluster)
        opened.append(client)
        assert authenticate(client, "PLAIN", user=user, password=password).error_code == 0
        return client

    yield open_as
    for client in opened:
        client.close()


def req(api: str, version: int, **values: Any) -> Any:
    """A request of ``api`` (Kafka's name for it) at ``version``, from nested dicts."""
    return api_messages.build(api_messages.request_class(api_messages.api_key_of(api)), version, values)


def codes(partition_results: Any) -> list[int]:
    return [p.error_code for p in partition_results]


def _offset(topic: str, offset: int) -> dict[str, Any]:
    """An offset-commit topic entry: partition 0 at ``offset``."""
    return {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": offset}]}


# ----------------------------------------------------------------------------------------------- Metadata
def test_metadata_needs_describe_and_hides_existence(cluster: MockCluster, login: Login) -> None:
    alice = login()
    answer = alice.send(req("Metadata", 12, topics=[{"name": "orders"}, {"name": "no-such-topic"}],
                            allow_auto_topic_creation=False))
    # kafka-python decodes the zero topic id as None
    assert [(t.name, t.error_code, t.partitions, t.topic_id) for t in answer.topics] == [
        ("orders", TOPIC_AUTH, [], None), ("no-such-topic", TOPIC_AUTH, [], None)]
    cluster.add_acl(ALICE, "topic", "orders", "Read")  # Read implies Describe
    answer = alice.send(req("Metadata", 12, topics=None))
    assert [(t.name, t.error_code, len(t.partitions)) for t in answer.topics] == [("orders", 0, 2)]
    secret_id = cluster.state.topics["secret"].topic_id
    by_id = alice.send(req("Metadata", 12, topics=[{"name": None, "topic_id": secret_id}]))
    assert (by_id.topics[0].name, by_id.topics[0].error_code) == (None, TOPIC_AUTH)
    assert by_id.topics[0].topic_id == secret_id  # ids are not secret


def test_metadata_auto_creation_needs_create(cluster: MockCluster, login: Login) -> None:
    alice = login()
    cluster.add_acl(ALICE, "topic", "new-", "Describe", "prefixed")
    ask = req("Metadata", 12, topics=[{"name": "new-a"}], allow_auto_topic_creation=True)
    assert alice.send(ask).topics[0].error_code == TOPIC_AUTH
    assert "new-a" not in cluster.state.topics
    cluster.add_acl(ALICE, "topic", "new-a", "Create")
    assert alice.send(ask).topics[0].error_code == 0
    cluster.add_acl(ALICE, "cluster", "kafka-cluster", "Create")
    assert alice.send(req("Metadata", 12, topics=[{"name": "new-b"}])).topics[0].error_code == 0


# ----------------------------------------------------------------------------------------------- Produce
def _produce(client: WireClient, transactional: bool, topics: dict[str, int], tid: str | None = "tx") -> Any:
    batch = build_batch([(None, b"v")], producer_id=1000 if transactional else -1,
                        producer_epoch=0 if transactional else -1, base_sequence=0 if transactional else -1,
                        transactional=transactional)
    data = [{"name": t, "partition_data": [{"index": p, "records": batch} for p in range(n)]}
            for t, n in topics.items()]
    return client.send(req("Produce", 9, transactional_id=tid if transactional else None, acks=-1,
                           timeout_ms=1000, topic_data=data))


def test_produce_with_transactional_records_needs_write_on_the_transactional_id(
        cluster: MockCluster, login: Login) -> None:
    cluster.add_acl(ALICE, "topic", "orders", "Write")
    answer = _produce(login(), True, {"orders": 2})
    parts = answer.responses[0].partition_responses
    assert codes(parts) == [TXN_AUTH, TXN_AUTH]
    assert parts[0].error_message == "Transactional Id authorization failed."
    assert cluster.partition_records("orders", 0) == []


def test_produce_needs_write_on_each_topic(cluster: MockCluster, login: Login) -> None:
    alice = login()
    cluster.add_acl(ALICE, "topic", "orders", "Write")
    answer = _produce(alice, False, {"orders": 1, "secret": 1})
    assert [(r.name, codes(r.partition_responses)) for r in answer.responses] == [
        ("orders", [0]), ("secret", [TOPIC_AUTH])]
    cluster.remove_acl(ALICE, "topic", "orders", "Write")  # revoked at run time: the next request is refused
    assert codes(_produce(alice, False, {"orders": 1}).responses[0].partition_responses) == [TOPIC_AUTH]


# ------------------------------------------------------------------------------------------ InitProducerId
def test_init_producer_id_needs_write_on_the_transactional_id(cluster: MockCluster, login: Login) -> None:
    alice = login()
    ask = req("InitProducerId", 5, transactional_id="tx", transaction_timeout_ms=60000, producer_id=-1,
              producer_epoch=-1)
    refused = alice.send(ask)
    assert (refused.error_code, refused.producer_id, refused.producer_epoch) == (TXN_AUTH, -1, -1)
    cluster.add_acl(ALICE, "transactional_id", "tx", "Write")
    assert alice.send(ask).error_code == 0


def test_idempotent_init_producer_id_needs_idempotent_write_or_a_topic_write(
        cluster: MockCluster, login: Login) -> None:
    alice = login()
    ask = req("InitProducerId", 5, transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
              producer_epoch=-1)
    assert alice.send(ask).error_code == CLUSTER_AUTH
    cluster.add_acl(ALICE, "topic", "orders", "Write")  # KIP-679: Write on some topic is enough
    assert alice.send(ask).error_code == 0
    cluster.remove_acl(ALICE, "topic", "orders", "Write")
    cluster.add_acl(ALICE, "cluster", "kafka-cluster", "IdempotentWrite")
    assert alice.send(ask).error_code == 0


# ---------------------------------------------------------------------------------------- FindCoordinator
def test_find_coordinator_needs_describe_on_the_key(cluster: MockCluster, login: Login) -> None:
    alice = login()
    v3 = alice.send(req("FindCoordinator", 3, key="tx", key_type=1))
    assert (v3.error_code, v3.node_id) == (TXN_AUTH, -1)
    assert v3.error_message == "Transactional Id authorization failed."
    cluster.add_acl(ALICE, "group", "g", "Read")  # implies Describe
    v4 = alice.send(req("FindCoordinator", 4, key_type=0, coordinator_keys=["g", "other-group"]))
    assert [(c.key, c.error_code, c.node_id) for c in v4.coordinators] == [
        ("g", 0, 1), ("other-group", GROUP_AUTH, -1)]


# ------------------------------------------------------------------------------------- AddPartitionsToTxn
def _add_partitions(client: WireClient, parts: dict[str, list[int]]) -> list[tuple[str, int, int]]:
    answer = client.send(req("AddPartitionsToTxn", 3, v3_and_below_transactional_id="tx",
                             v3_and_below_producer_id=1000, v3_and_below_producer_epoch=0,
                             v3_and_below_topics=[{"name": t, "partitions": ps} for t, ps in parts.items()]))
    return sorted((r.name, p.partition_index, p.partition_error_code)
                  for r in answer.results_by_topic_v3_and_below for p in r.results_by_partition)


def test_add_partitions_to_txn_needs_write_on_the_id_and_the_topics(
        cluster: MockCluster, login: Login) -> None:
    alice = login()
    assert _add_partitions(alice, {"orders": [0]}) == [("orders", 0, TXN_AUTH)]
    cluster.add_acl(ALICE, "transactional_id", "tx", "Write")
    cluster.add_acl(ALICE, "topic", "orders", "Write")
    assert _add_partitions(alice, {"orders": [0, 1], "secret": [0], "gone": [0]}) == [
        ("gone", 0, TOPIC_AUTH), ("orders", 0, ec.OPERATION_NOT_ATTEMPTED),
        ("orders", 1, ec.OPERATION_NOT_ATTEMPTED), ("secret", 0, TOPIC_AUTH)]
    cluster.add_acl(ALICE, "topic", "gone", "Write")
    assert _add_partitions(alice, {"orders": [0], "gone": [0]}) == [
        ("gone", 0, ec.UNKNOWN_TOPIC_OR_PARTITION), ("orders", 0, ec.OPERATION_NOT_ATTEMPTED)]
    assert cluster.describe_transaction("tx") is None  # nothing was added


def test_broker_versions_of_add_partitions_to_txn_need_cluster_action(
        cluster: MockCluster, login: Login) -> None:
    ask = req("AddPartitionsToTxn", 4, transactions=[{
        "transactional_id": "tx", "producer_id": 1000, "producer_epoch": 0, "verify_only": True,
        "topics": [{"name": "orders", "partitions": [0]}]}])
    refused = login().send(ask)
    assert (refused.error_code, refused.results_by_transaction) == (CLUSTER_AUTH, [])
    assert login("admin", "b").send(ask).error_code == 0


# ----------------------------------------------------------------- AddOffsetsToTxn, TxnOffsetCommit, EndTxn
def test_add_offsets_to_txn_needs_the_id_then_the_group(cluster: MockCluster, login: Login) -> None:
    alice = login()
    ask = req("AddOffsetsToTxn", 3, transactional_id="tx", producer_id=1000, producer_epoch=0,
              group_id="g")
    assert alice.send(ask).error_code == TXN_AUTH
    cluster.add_acl(ALICE, "transactional_id", "tx", "Write")
    assert alice.send(ask).error_code == GROUP_AUTH
    cluster.add_acl(ALICE, "group", "g", "Read")
    assert alice.send(ask).error_code not in (TXN_AUTH, GROUP_AUTH)  # the coordinator's own answer now


def test_txn_offset_commit_needs_the_id_the_group_and_read_on_each_topic(
        cluster: MockCluster, login: Login) -> None:
    alice = login()

    def commit() -> list[tuple[str, int]]:
        answer = alice.send(req("TxnOffsetCommit", 3, transactional_id="tx", group_id="g",
                                producer_id=1000, producer_epoch=0, generation_id=-1, member_id="",
                                topics=[_offset(t, 5) for t in ("orders", "secret")]))
        return [(t.name, t.partitions[0].error_code) for t in answer.topics]

    assert commit() == [("orders", TXN_AUTH), ("secret", TXN_AUTH)]
    cluster.add_acl(ALICE, "transactional_id", "tx", "Write")
    assert commit() == [("orders", GROUP_AUTH), ("secret", GROUP_AUTH)]
    cluster.add_acl(ALICE, "group", "g", "Read")
    cluster.add_acl(ALICE, "topic", "orders", "Read")
    (_, orders_code), secret = commit()
    assert secret == ("secret", TOPIC_AUTH)
    assert orders_code not in (TXN_AUTH, GROUP_AUTH, TOPIC_AUTH)  # went on to the coordinator


def test_end_txn_needs_write_on_the_transactional_id(cluster: MockCluster, login: Login) -> None:
    answer = login().send(req("EndTxn", 4, transactional_id="tx", producer_id=1000, producer_epoch=0,
                              committed=True))
    assert answer.error_code == TXN_AUTH


# ------------------------------------------------------------------ Fetch, ListOffsets, DescribeProducers
def test_fetch_needs_read_on_each_topic(cluster: MockCluster, login: Login) -> None:
    alice = login()
    cluster.add_acl(ALICE, "topic", "orders", "Read")
    answer = alice.send(req("Fetch", 12, replica_id=-1, max_wait_ms=5000, min_bytes=1, max_bytes=100000,
                            isolation_level=1, topics=[
                                {"topic": t, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                             "partition_max_bytes": 10000}]}
                                for t in ("orders", "secret")]))
    # the refused partition is an error, so the long poll answers at once
    assert [(r.topic, codes(r.partitions)) for r in answer.responses] == [
        ("orders", [0]), ("secret", [TOPIC_AUTH])]


def test_list_offsets_needs_describe_on_each_topic(cluster: MockCluster, login: Login) -> None:
    alice = login()
    cluster.add_acl(ALICE, "topic", "orders", "Describe")
    answer = alice.send(req("ListOffsets", 7, replica_id=-1, isolation_level=1, topics=[
        {"name": t, "partitions": [{"partition_index": 0, "timestamp": -1}]} for t in ("orders", "secret")]))
    assert [(t.name, codes(t.partitions), t.partitions[0].offset) for t in answer.topics] == [
        ("orders", [0], 0), ("secret", [TOPIC_AUTH], -1)]


def test_describe_producers_needs_read_on_each_topic(cluster: MockCluster, login: Login) -> None:
    answer = login().send(req("DescribeProducers", 0,
                              topics=[{"name": "secret", "partition_indexes": [0, 9]}]))
    parts = answer.topics[0].partitions
    assert codes(parts) == [TOPIC_AUTH, TOPIC_AUTH]  # before the partition's existence
    assert parts[0].error_message == "Topic authorization failed."


# -------------------------------------------------------------------------------- offsets and group APIs
def test_offset_commit_needs_read_on_the_group_and_each_topic(cluster: MockCluster, login: Login) -> None:
    alice = login()

    def commit() -> list[tuple[str, int]]:
        answer = alice.send(req("OffsetCommit", 8, group_id="g", generation_id_or_member_epoch=-1,
                                member_id="", topics=[_offset(t, 3) for t in ("orders", "secret")]))
        return [(t.name, t.partitions[0].error_code) for t in answer.topics]

    assert commit() == [("orders", GROUP_AUTH), ("secret", GROUP_AUTH)]
    cluster.add_acl(ALICE, "group", "g", "Read")
    cluster.add_acl(ALICE, "topic", "orders", "Read")
    assert commit() == [("orders", 0), ("secret", TOPIC_AUTH)]
    assert cluster.committed_offsets("g") == {("orders", 0): 3}


def test_offset_fetch_needs_describe_on_the_group_and_hides_refused_topics(
        cluster: MockCluster, login: Login) -> None:
    alice = login()
    ask = req("OffsetFetch", 8, groups=[{"group_id": "g", "topics": None}], require_stable=True)
    assert alice.send(ask).groups[0].error_code == GROUP_AUTH
    cluster.add_acl(ALICE, "group", "g", "Read")
    cluster.add_acl(ALICE, "topic", "orders", "Read")
    alice.send(req("OffsetCommit", 8, group_id="g", generation_id_or_member_epoch=-1, member_id="",
                   topics=[_offset("orders", 3)]))
    login("admin", "b").send(req("OffsetCommit", 8, group_id="g", generation_id_or_member_epoch=-1,
                                 member_id="", topics=[_offset("secret", 7)]))
    every = alice.send(ask).groups[0]  # a fetch of every partition leaves the refused topic out
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in every.topics] == [("orders", [3])]
    named = alice.send(req("OffsetFetch", 7, group_id="g", topics=[
        {"name": "secret", "partition_indexes": [0]}, {"name": "orders", "partition_indexes": [0]}]))
    assert [(t.name, t.partitions[0].committed_offset, t.partitions[0].error_code) for t in named.topics] == [
        ("orders", 3, 0), ("secret", -1, TOPIC_AUTH)]


def test_group_membership_apis_need_read_on_the_group(cluster: MockCluster, login: Login) -> None:
    alice = login()
    join = alice.send(req("JoinGroup", 5, group_id="g", session_timeout_ms=10000,
                          rebalance_timeout_ms=10000, member_id="m", protocol_type="consumer",
                          protocols=[{"name": "range", "metadata": b""}]))
    assert (join.error_code, join.member_id) == (GROUP_AUTH, "")
    assert alice.send(req("SyncGroup", 3, group_id="g", generation_id=1, member_id="m",
                          assignments=[])).error_code == GROUP_AUTH
    heartbeat = req("Heartbeat", 3, group_id="g", generation_id=1, member_id="m")
    assert alice.send(heartbeat).error_code == GROUP_AUTH
    leave = req("LeaveGroup", 3, group_id="g", members=[{"member_id": "m"}])
    assert alice.send(leave).error_code == GROUP_AUTH


def test_describe_and_list_groups_show_only_describable_groups(cluster: MockCluster, login: Login) -> None:
    admin = login("admin", "b")
    for group in ("visible", "hidden"):
        admin.send(req("OffsetCommit", 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                       topics=[_offset("orders", 1)]))
    alice = login()
    cluster.add_acl(ALICE, "group", "visible", "Describe")
    described = alice.send(req("DescribeGroups", 5, groups=["visible", "hidden"]))
    assert [(g.group_id, g.error_code) for g in described.groups] == [("visible", 0), ("hidden", GROUP_AUTH)]
    assert [g.group_id for g in alice.send(req("ListGroups", 4, states_filter=[])).groups] == ["visible"]
    cluster.add_acl(ALICE, "cluster", "kafka-cluster", "Describe")  # Describe on the cluster: every group
    assert sorted(g.group_id for g in alice.send(req("ListGroups", 4, states_filter=[])).groups) == [
        "hidden", "visible"]


# ------------------------------------------------------------------------ DescribeTransactions and friends
def test_transaction_apis_show_only_describable_ids_and_topics(cluster: MockCluster, login: Login) -> None:
    admin = login("admin", "b")
    for tid in ("tx-mine", "tx-other"):
        init = admin.send(req("InitProducerId", 4, transactional_id=tid, transaction_timeout_ms=60000,
                              producer_id=-1, producer_epoch=-1))
        admin.send(req("AddPartitionsToTxn", 3, v3_and_below_transactional_id=tid,
                       v3_and_below_producer_id=init.producer_id,
                       v3_and_below_producer_epoch=init.producer_epoch,
                       v3_and_below_topics=[{"name": t, "partitions": [0]} for t in ("orders", "secret")]))
    alice = login()
    cluster.add_acl(ALICE, "transactional_id", "tx-mine", "Describe")
    cluster.add_acl(ALICE, "topic", "orders", "Describe")
    described = alice.send(req("DescribeTransactions", 0, transactional_ids=["tx-mine", "tx-other"]))
    mine, other = described.transaction_states
    assert (mine.error_code, mine.transaction_state) == (0, "Ongoing")
    assert [t.topic for t in mine.topics] == ["orders"]  # not "secret", which alice may not describe
    assert other.error_code == TXN_AUTH
    listed = alice.send(req("ListTransactions", 1, state_filters=[], producer_id_filters=[],
                            duration_filter=-1))
    assert [s.transactional_id for s in listed.transaction_states] == ["tx-mine"]


# ---------------------------------------------------------------------------- CreateTopics, DescribeConfigs
def test_create_topics_needs_create_on_the_cluster_or_the_topic(cluster: MockCluster, login: Login) -> None:
    alice = login()

    def create(name: str) -> Any:
        return alice.send(req("CreateTopics", 7, topics=[
            {"name": name, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}],
            timeout_ms=1000, validate_only=False)).topics[0]

    refused = create("orders")  # refused before "already exists"
    assert (refused.error_code, refused.error_message) == (TOPIC_AUTH, "Authorization failed.")
    cluster.add_acl(ALICE, "topic", "made-", "Create", "prefixed")
    made = create("made-1")  # created, but alice may not see its configs
    assert (made.error_code, made.num_partitions, made.topic_config_error_code) == (0, -1, TOPIC_AUTH)
    cluster.add_acl(ALICE, "cluster", "kafka-cluster", "Create")
    cluster.add_acl(ALICE, "topic", "made-2", "DescribeConfigs")
    made = create("made-2")
    assert (made.error_code, made.num_partitions, made.topic_config_error_code) == (0, 2, 0)


def test_describe_configs_needs_describe_configs_on_each_resource(cluster: MockCluster, login: Login) -> None:
    alice = login()
    cluster.add_acl(ALICE, "topic", "orders", "AlterConfigs")  # implies DescribeConfigs
    answer = alice.send(req("DescribeConfigs", 4, resources=[
        {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
        {"resource_type": 2, "resource_name": "orders", "configuration_keys": None},
        {"resource_type": 2, "resource_name": "secret", "configuration_keys": None},
        {"resource_type": 32, "resource_name": "g", "configuration_keys": None}],
        include_synonyms=False, include_documentation=False))
    assert [(r.resource_name, r.error_code, bool(r.configs)) for r in answer.results] == [
        ("1", CLUSTER_AUTH, False), ("orders", 0, True), ("secret", TOPIC_AUTH, False),
        ("g", GROUP_AUTH, False)]
    assert answer.results[0].error_message == "Cluster authorization failed."


def test_super_users_and_clusters_without_an_authorizer_are_allowed_everything(
        cluster: MockCluster, login: Login) -> None:
    as_admin = _produce(login("admin", "b"), True, {"secret": 1})
    assert as_admin.responses[0].partition_responses[0].error_code != TXN_AUTH
    with MockCluster(num_brokers=1) as open_cluster, connect(open_cluster) as client:
        open_cluster.create_topic("secret", 1)
        assert codes(_produce(client, False, {"secret": 1}).responses[0].partition_responses) == [0]


# ---------------------------------------------------------------------------------------- WriteTxnMarkers
def test_write_txn_markers_needs_alter_or_cluster_action_on_the_cluster(cluster: MockCluster,
                                                                         login: Login) -> None:
    """KafkaApis.handleWriteTxnMarkersRequest: Alter on the cluster, else ClusterAction; refused, every
    partition answers CLUSTER_AUTHORIZATION_FAILED and no marker is written."""
    held = cluster.plant_hanging_transaction("orders", 0)
    log = cluster.state.partition_log("orders", 0)
    assert log is not None
    alice = login()
    cluster.add_acl(ALICE, "topic", "*", "All")  # topic ACLs do not help

    def abort(partitions: list[int]) -> list[int]:
        answer = alice.send(req("WriteTxnMarkers", 1, markers=[{
            "producer_id": held.producer_id, "producer_epoch": 0, "transaction_result": False,
            "coordinator_epoch": 0, "topics": [{"name": "orders", "partition_indexes": partitions}]}]))
        return [p.error_code for m in answer.markers for t in m.topics for p in t.partitions]

    assert abort([0, 1]) == [CLUSTER_AUTH, CLUSTER_AUTH]
    assert log.last_stable_offset == 0
    for operation in ("ClusterAction", "Alter"):
        cluster.add_acl(ALICE, "cluster", "kafka-cluster", operation)
        assert abort([0]) == [0]
        cluster.remove_acl(ALICE, "cluster", "kafka-cluster", operation)
    assert log.last_stable_offset == log.high_watermark
