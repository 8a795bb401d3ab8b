"""ACLs refusing the producer: each refusal is the documented typed error within seconds, and the
producer recovers where the Java client's does (an abortable refusal costs one transaction; a
refused transactional id leaves the producer uninitialized, ready for init_transactions() once
the ACL is granted).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.structs import OffsetAndMetadata, TopicPartition

from tests._support.readers import read_values
from tests._support.security import FAST_FAIL_S, SecuredTarget, producer, producer_settings, reader_settings
from txnproducer import errors
from txnproducer.testing import Acl, MockCluster

pytest.importorskip("trustme")

USERS = {"alice": "alice-secret-pw"}
ALICE = "User:alice"
BASE_ACLS = [
    Acl(ALICE, "transactional_id", "tx-", "Write", "prefixed"),
    Acl(ALICE, "topic", "allowed", "Write"),
    Acl(ALICE, "topic", "allowed", "Read"),
    Acl(ALICE, "topic", "readonly", "Describe"),
]


@pytest.fixture(params=[1, 2], ids=["tv1", "tv2"])
def cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(num_brokers=2, transaction_version=request.param, tls=True,
                     sasl_mechanisms=["SCRAM-SHA-512"], users=USERS, acls=BASE_ACLS) as c:
        for topic in ("allowed", "readonly", "forbidden"):
            c.create_topic(topic, partitions=1)
        yield c


def settings_for(cluster: MockCluster) -> dict[str, Any]:
    target = SecuredTarget(cluster.bootstrap_servers, cluster.security_protocol, cluster.ca_file, USERS)
    return producer_settings(target, "SCRAM-SHA-512")


def committed(cluster: MockCluster, topic: str) -> list[bytes]:
    target = SecuredTarget(cluster.bootstrap_servers, cluster.security_protocol, cluster.ca_file, USERS)
    return read_values(cluster.bootstrap_servers, topic, 1, wait_s=20,
                       **reader_settings(target, "SCRAM-SHA-512"))


def test_a_topic_the_principal_may_not_describe(cluster: MockCluster) -> None:
    with producer("tx-no-describe", **settings_for(cluster)) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send("allowed", b"lost-with-the-abort", partition=0)
        started = time.monotonic()
        with pytest.raises(errors.TopicAuthorizationError, match=r"'forbidden'.*DESCRIBE and WRITE"):
            p.send("forbidden", b"x", partition=0)
        assert time.monotonic() - started < FAST_FAIL_S
        # as in the Java client, the transaction can no longer commit
        with pytest.raises(errors.TopicAuthorizationError):
            p.commit_transaction()
        p.abort_transaction()
        with p.transaction():
            p.send("allowed", b"after", partition=0)
        # once the ACL is granted, the same producer writes there (the refusal is asked again)
        cluster.add_acl(ALICE, "topic", "forbidden", "Write")
        cluster.add_acl(ALICE, "topic", "forbidden", "Read")  # for the reader below
        with p.transaction():
            p.send("forbidden", b"granted", partition=0)
    assert committed(cluster, "allowed") == [b"after"]
    assert committed(cluster, "forbidden") == [b"granted"]


def test_a_topic_the_principal_may_describe_but_not_write(cluster: MockCluster) -> None:
    with producer("tx-no-write", **settings_for(cluster)) as p:
        p.init_transactions()
        p.begin_transaction()
        started = time.monotonic()
        future = p.send("readonly", b"refused", partition=0)
        with pytest.raises(errors.TopicAuthorizationError):
            p.commit_transaction()
        assert time.monotonic() - started < FAST_FAIL_S
        with pytest.raises(errors.AbortableError):
            future.get(timeout=5)
        p.abort_transaction()
        with p.transaction():
            p.send("allowed", b"after", partition=0)
    assert committed(cluster, "allowed") == [b"after"]


def test_a_transactional_id_the_principal_may_not_describe(cluster: MockCluster) -> None:
    """No ACL on the id: the coordinator lookup is refused, fatal as in the Java client
    (FindCoordinatorHandler); a new producer works once the ACL is granted."""
    with producer("other-app", **settings_for(cluster)) as p:
        started = time.monotonic()
        with pytest.raises(errors.TransactionalIdAuthorizationError, match="create a new producer"):
            p.init_transactions()
        assert time.monotonic() - started < FAST_FAIL_S
        with pytest.raises(errors.TransactionalIdAuthorizationError):
            p.init_transactions()
    cluster.add_acl(ALICE, "transactional_id", "other-app", "Write")
    with producer("other-app", **settings_for(cluster)) as p:
        p.init_transactions()
        with p.transaction():
            p.send("allowed", b"after-grant", partition=0)
    assert committed(cluster, "allowed") == [b"after-grant"]


def test_a_transactional_id_the_principal_may_describe_but_not_write(cluster: MockCluster) -> None:
    """DESCRIBE only: InitProducerId is refused, and as in the Java client (InitProducerIdHandler)
    the producer is left uninitialized: init_transactions() may be called again after the grant."""
    cluster.add_acl(ALICE, "transactional_id", "describe-only", "Describe")
    with producer("describe-only", **settings_for(cluster)) as p:
        started = time.monotonic()
        with pytest.raises(errors.TransactionalIdAuthorizationError):
            p.init_transactions()
        assert time.monotonic() - started < FAST_FAIL_S
        cluster.add_acl(ALICE, "transactional_id", "describe-only", "Write")
        p.init_transactions()
        with p.transaction():
            p.send("allowed", b"after-grant", partition=0)
    assert committed(cluster, "allowed") == [b"after-grant"]


def test_a_group_the_principal_may_not_commit_for(cluster: MockCluster) -> None:
    with producer("tx-no-group", **settings_for(cluster)) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send("allowed", b"with-offsets", partition=0)
        started = time.monotonic()
        with pytest.raises(errors.GroupAuthorizationError):
            p.send_offsets_to_transaction({TopicPartition("allowed", 0): OffsetAndMetadata(1, "", -1)},
                                          "readers")
        assert time.monotonic() - started < FAST_FAIL_S
        p.abort_transaction()
        with p.transaction():
            p.send("allowed", b"after", partition=0)
    assert committed(cluster, "allowed") == [b"after"]
