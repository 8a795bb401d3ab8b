"""The ACLs each admin command needs, as Kafka 4.1's broker checks them (the MockCluster's authorizer
follows ``KafkaApis``): refused, each call raises :class:`AdminAuthorizationError` naming the ACL - and an
abort writes nothing; granted, it works. The operator is ``User:alice`` over SASL PLAIN; the pipeline's
producer is the super user ``User:admin``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from txnproducer import TransactionalProducer
from txnproducer.admin import AdminAuthorizationError, TopicPartition, TransactionsAdmin
from txnproducer.errors import SaslAuthenticationError
from txnproducer.testing import MockCluster

ALICE = "User:alice"
TOPIC = "orders"


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(
        num_brokers=1,
        sasl_mechanisms=["PLAIN"],
        users={"alice": "alice-pw", "admin": "admin-pw"},
        acls=[],
        super_users=["User:admin"],
    ) as c:
        c.create_topic(TOPIC, 2)
        yield c


def sasl(cluster: MockCluster, user: str, password: str) -> dict[str, str]:
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.plain.username": user,
        "sasl.plain.password": password,
        "default.api.timeout.ms": "5000",
    }


@pytest.fixture
def alice(cluster: MockCluster) -> Iterator[TransactionsAdmin]:
    with TransactionsAdmin(sasl(cluster, "alice", "alice-pw")) as admin:
        yield admin


@pytest.fixture
def open_txn(cluster: MockCluster) -> Iterator[TransactionalProducer]:
    """``app-1`` (the super user's) holds an open transaction on orders-0."""
    settings = sasl(cluster, "admin", "admin-pw")
    del settings["default.api.timeout.ms"]
    with TransactionalProducer(**settings, transactional_id="app-1") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(TOPIC, b"x", partition=0).get(5)
        yield producer


def refused(acl: str) -> pytest.RaisesContext[AdminAuthorizationError]:
    return pytest.raises(AdminAuthorizationError, match=f"grant {acl}")


def test_list_shows_only_the_ids_the_principal_may_describe(
    cluster: MockCluster, alice: TransactionsAdmin, open_txn: TransactionalProducer
) -> None:
    assert alice.list_transactions().listings == ()  # not an error: ListTransactions filters, as Kafka does
    cluster.add_acl(ALICE, "transactional_id", "app-", "Describe", pattern="prefixed")
    assert [t.transactional_id for t in alice.list_transactions().listings] == ["app-1"]


def test_describe_needs_describe_on_the_transactional_id(
    cluster: MockCluster, alice: TransactionsAdmin, open_txn: TransactionalProducer
) -> None:
    with refused("Describe on TransactionalId 'app-1'") as error:
        alice.describe_transactions(["app-1"])
    assert error.value.acl == "Describe on TransactionalId 'app-1'"
    cluster.add_acl(ALICE, "transactional_id", "app-1", "Describe")
    assert alice.describe_transactions(["app-1"])["app-1"].partitions == ()  # topics it may not describe
    cluster.add_acl(ALICE, "topic", TOPIC, "Describe")
    assert alice.describe_transactions(["app-1"])["app-1"].partitions == (TopicPartition(TOPIC, 0),)


def test_describe_producers_needs_describe_and_read_on_the_topic(
    cluster: MockCluster, alice: TransactionsAdmin
) -> None:
    partitions = [TopicPartition(TOPIC, 0)]
    with refused(f"Describe on Topic '{TOPIC}'"):
        alice.describe_producers(partitions)
    cluster.add_acl(ALICE, "topic", TOPIC, "Describe")
    with refused(f"Read on Topic '{TOPIC}'"):
        alice.describe_producers(partitions)
    cluster.add_acl(ALICE, "topic", TOPIC, "Read")
    assert alice.describe_producers(partitions)[partitions[0]].producers == ()


def test_abort_with_a_marker_needs_alter_or_cluster_action_on_the_cluster(
    cluster: MockCluster, alice: TransactionsAdmin
) -> None:
    held = cluster.plant_hanging_transaction(TOPIC, 1)
    cluster.add_acl(ALICE, "topic", TOPIC, "Read")
    cluster.add_acl(ALICE, "transactional_id", "*", "Describe")
    (hanging,) = alice.find_hanging(topic=TOPIC)
    plan = alice.plan_abort(topic=TOPIC, partition=1, start_offset=hanging.start_offset)
    with refused("Alter or ClusterAction on the Cluster") as error:
        alice.abort(plan)
    assert error.value.acl == "Alter or ClusterAction on the Cluster"
    log = cluster.state.partition_log(TOPIC, 1)
    assert log is not None and log.last_stable_offset == held.start_offset  # nothing written
    cluster.add_acl(ALICE, "cluster", "kafka-cluster", "ClusterAction")
    alice.abort(plan)
    assert log.last_stable_offset == log.high_watermark


def test_abort_by_transactional_id_needs_write_on_it(
    cluster: MockCluster, alice: TransactionsAdmin, open_txn: TransactionalProducer
) -> None:
    cluster.add_acl(ALICE, "transactional_id", "app-1", "Describe")
    plan = alice.plan_abort(transactional_id="app-1")
    with refused("Write on TransactionalId 'app-1'"):
        alice.abort(plan)
    assert cluster.describe_transaction("app-1")["state"] == "Ongoing"  # type: ignore[index]
    cluster.add_acl(ALICE, "transactional_id", "app-1", "Write")
    alice.abort(plan)
    assert cluster.describe_transaction("app-1")["state"] != "Ongoing"  # type: ignore[index]


def test_a_wrong_password_fails_at_once_and_is_never_shown(cluster: MockCluster) -> None:
    with (
        TransactionsAdmin(sasl(cluster, "alice", "not-the-secret-pw")) as admin,
        pytest.raises(SaslAuthenticationError) as error,
    ):
        admin.list_transactions()
    assert "not-the-secret-pw" not in str(error.value) and "not-the-secret-pw" not in repr(admin.settings)
