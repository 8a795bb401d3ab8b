"""Third-party clients against a secured MockCluster: kafka-python 3.0.12 (KafkaAdminClient, transactional
KafkaProducer, KafkaConsumer in a group) and confluent-kafka 2.16 (transactional Producer, read_committed
Consumer in a group) authenticate over SASL_SSL with PLAIN and with SCRAM-SHA-512, and over SSL with a
client certificate; the cluster's ACLs let ``User:alice`` do exactly what the scenario needs, and the clients
report the refusals - TOPIC_AUTHORIZATION_FAILED for a topic she may not write,
TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a transactional id that is not hers - as their own typed errors.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import TopicAuthorizationFailedError, TransactionalIdAuthorizationFailedError

from txnproducer.testing import Acl, MockCluster

pytest.importorskip("trustme")

TOPIC = "secure"
VALUES = [b"v0", b"v1", b"v2"]
WAIT_S = 15
USERS = {"alice": "alice-secret"}
#: what alice needs for the scenario: create, write and read "secure", read in group "readers", own "tx-*"
ACLS = [
    Acl("User:alice", "cluster", "kafka-cluster", "Create"),
    Acl("User:alice", "topic", TOPIC, "Write"),
    Acl("User:alice", "topic", TOPIC, "Read"),
    Acl("User:alice", "group", "readers", "Read"),
    Acl("User:alice", "transactional_id", "tx-", "Write", "prefixed"),
]
SETUPS: dict[str, dict[str, Any]] = {
    "SASL_SSL-PLAIN": {"tls": True, "sasl_mechanisms": ["PLAIN"], "users": USERS},
    "SASL_SSL-SCRAM-SHA-512": {"tls": True, "sasl_mechanisms": ["SCRAM-SHA-512"], "users": USERS},
    "SSL-mutual": {"tls": True, "tls_client_auth": "required"},
}


@pytest.fixture(params=sorted(SETUPS))
def cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(acls=ACLS, **SETUPS[request.param]) as c:
        c.create_topic("forbidden", 1)
        yield c


def kafka_python_config(cluster: MockCluster) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap_servers": cluster.bootstrap_servers,
                              "security_protocol": cluster.security_protocol, "ssl_cafile": cluster.ca_file}
    if cluster.listener.sasl is not None:
        config.update(sasl_mechanism=cluster.listener.sasl.mechanisms[0], sasl_plain_username="alice",
                      sasl_plain_password=USERS["alice"])
    else:
        config["ssl_certfile"], config["ssl_keyfile"] = cluster.client_certificate("alice")
    return config


def librdkafka_config(cluster: MockCluster) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": cluster.bootstrap_servers,
                              "security.protocol": cluster.security_protocol,
                              "ssl.ca.location": cluster.ca_file, "log_level": 3}
    if cluster.listener.sasl is not None:
        config.update({"sasl.mechanism": cluster.listener.sasl.mechanisms[0], "sasl.username": "alice",
                       "sasl.password": USERS["alice"]})
    else:
        config["ssl.certificate.location"], config["ssl.key.location"] = cluster.client_certificate("alice")
    return config


def _assert_authenticated_as_alice(cluster: MockCluster) -> None:
    produced = cluster.wait_for_request(lambda e: e.api == "Produce")
    assert produced.principal == "User:alice"
    assert not any(e.error_codes for e in cluster.request_log if e.api in ("Produce", "EndTxn", "Fetch"))


def test_kafka_python_clients_authenticate(cluster: MockCluster) -> None:
    config = kafka_python_config(cluster)
    admin = KafkaAdminClient(**config)
    try:
        created = admin.create_topics([NewTopic(TOPIC, 2, 1)])
        assert created["topics"][0]["error_code"] == 0
    finally:
        admin.close()
    producer = KafkaProducer(transactional_id="tx-kafka-python", **config)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i, value in enumerate(VALUES):
            producer.send(TOPIC, value, partition=i % 2)
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(TOPIC, group_id="readers", isolation_level="read_committed",
                             auto_offset_reset="earliest", enable_auto_commit=False, **config)
    # the topic's metadata before the first join: a join that races it is assigned nothing, and
    # kafka-python 3.0.12 may then never rejoin (tests/_support/kafka_python_groups.py); seen under load
    consumer.topics()
    seen: list[bytes] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while len(seen) < len(VALUES):
            assert time.monotonic() < deadline, f"read {seen} within {WAIT_S}s"
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)
        consumer.commit()
    finally:
        consumer.close()
    assert sorted(seen) == VALUES
    assert cluster.committed_offsets("readers") == {(TOPIC, 0): 3, (TOPIC, 1): 2}  # past the commit markers
    _assert_authenticated_as_alice(cluster)


def test_kafka_python_reports_the_acl_refusals(cluster: MockCluster) -> None:
    config = kafka_python_config(cluster)
    producer = KafkaProducer(max_block_ms=5000, **config)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("forbidden", b"x").get(timeout=5)
    finally:
        producer.close(timeout=5)
    producer = KafkaProducer(transactional_id="not-alices", max_block_ms=5000, **config)
    try:
        with pytest.raises(TransactionalIdAuthorizationFailedError):
            producer.init_transactions()
    finally:
        producer.close(timeout=5)


def test_confluent_kafka_clients_authenticate(cluster: MockCluster) -> None:
    ck = pytest.importorskip("confluent_kafka")
    cluster.create_topic(TOPIC, 2)
    config = librdkafka_config(cluster)
    producer = ck.Producer({**config, "transactional.id": "tx-librdkafka", "linger.ms": 5})
    producer.init_transactions(WAIT_S)
    producer.begin_transaction()
    for i, value in enumerate(VALUES):
        producer.produce(TOPIC, value=value, partition=i % 2)
    producer.commit_transaction(WAIT_S)
    del producer  # the last reference: librdkafka's threads stop before the cluster does
    consumer = ck.Consumer({**config, "group.id": "readers", "isolation.level": "read_committed",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    seen: list[bytes] = []
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + WAIT_S
        while len(seen) < len(VALUES):
            assert time.monotonic() < deadline, f"read {seen} within {WAIT_S}s"
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                seen.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert sorted(seen) == VALUES
    # librdkafka commits the offset after the last record it returned (not past the commit marker)
    assert set(cluster.committed_offsets("readers")) == {(TOPIC, 0), (TOPIC, 1)}
    _assert_authenticated_as_alice(cluster)


def test_confluent_kafka_reports_the_acl_refusals(cluster: MockCluster) -> None:
    ck = pytest.importorskip("confluent_kafka")
    config = librdkafka_config(cluster)
    failures: list[Any] = []
    producer = ck.Producer(config)
    producer.produce("forbidden", b"x", on_delivery=lambda err, _msg: failures.append(err))
    assert producer.flush(WAIT_S) == 0
    assert [f.code() for f in failures] == [ck.KafkaError.TOPIC_AUTHORIZATION_FAILED]
    del producer
    producer = ck.Producer({**config, "transactional.id": "not-alices"})
    with pytest.raises(ck.KafkaException) as refused:
        producer.init_transactions(WAIT_S)
    error = refused.value.args[0]
    assert error.code() == ck.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED and error.fatal()
    del producer
