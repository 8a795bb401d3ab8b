"""ACLs refusing the producer, written once for MockCluster (tests/mock) and a real Kafka (tests/broker).

Each scenario checks that a refusal is the documented typed error within ``FAST_FAIL_S`` (with
``max_block_ms`` at 60 s), and that the producer recovers where the Java client's does: an abortable
refusal costs one transaction; a refused transactional id leaves the producer uninitialized, ready for
``init_transactions()`` once the ACL is granted.

A scenario gets the producer's settings, an :class:`AclAdmin` that grants ACLs on the cluster under test
(MockCluster itself, or :class:`KafkaAcls` on a real broker), the names of three topics (one the
principal may write and read, one it may only describe, one it may not touch: :data:`BASE_ACLS` grant
them by prefix) and a ``committed(topic)`` reader authenticated as the same principal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pytest
from kafka.structs import OffsetAndMetadata, TopicPartition

from tests._support.security import FAST_FAIL_S, producer
from txnproducer import errors

__all__ = ["ALICE", "BASE_ACLS", "SCENARIOS", "AclAdmin", "AuthzTopics", "KafkaAcls"]

ALICE = "User:alice"
#: (principal, resource type, name, operation, pattern): alice's grants before any scenario runs
BASE_ACLS: list[tuple[str, str, str, str, str]] = [
    (ALICE, "transactional_id", "tx-", "Write", "prefixed"),
    (ALICE, "topic", "allowed", "Write", "prefixed"),
    (ALICE, "topic", "allowed", "Read", "prefixed"),
    (ALICE, "topic", "readonly", "Describe", "prefixed"),
]


class AclAdmin(Protocol):
    """Grants an ACL, effective for the next request (MockCluster.add_acl has this shape)."""

    def add_acl(self, principal: str, resource_type: str, name: str, operation: str,
                pattern: str = "literal", permission: str = "allow") -> Any: ...


@dataclass(frozen=True)
class AuthzTopics:
    """One scenario's topics (one partition each), named so that :data:`BASE_ACLS` cover them."""

    allowed: str
    readonly: str
    forbidden: str

    @classmethod
    def named(cls, suffix: str) -> AuthzTopics:
        return cls(f"allowed-{suffix}", f"readonly-{suffix}", f"forbidden-{suffix}")


Committed = Callable[[str], list[bytes]]


def _fast(started: float) -> None:
    elapsed = time.monotonic() - started
    assert elapsed < FAST_FAIL_S, f"the refusal took {elapsed:.1f}s"


def topic_without_describe(settings: dict[str, Any], acls: AclAdmin, topics: AuthzTopics,
                           committed: Committed) -> None:
    with producer("tx-no-describe", **settings) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(topics.allowed, b"lost-with-the-abort", partition=0)
        started = time.monotonic()
        refusal = rf"'{topics.forbidden}'.*DESCRIBE and WRITE"
        with pytest.raises(errors.TopicAuthorizationError, match=refusal):
            p.send(topics.forbidden, b"x", partition=0)
        _fast(started)
        # as in the Java client, the transaction can no longer commit
        with pytest.raises(errors.TopicAuthorizationError):
            p.commit_transaction()
        p.abort_transaction()
        with p.transaction():
            p.send(topics.allowed, b"after", partition=0)
        # once the ACL is granted, the same producer writes there (the refusal is asked again)
        acls.add_acl(ALICE, "topic", topics.forbidden, "Write")
        acls.add_acl(ALICE, "topic", topics.forbidden, "Read")  # for the reader below
        with p.transaction():
            p.send(topics.forbidden, b"granted", partition=0)
    assert committed(topics.allowed) == [b"after"]
    assert committed(topics.forbidden) == [b"granted"]


def topic_without_write(settings: dict[str, Any], acls: AclAdmin, topics: AuthzTopics,
                        committed: Committed) -> None:
    with producer("tx-no-write", **settings) as p:
        p.init_transactions()
        p.begin_transaction()
        started = time.monotonic()
        future = p.send(topics.readonly, b"refused", partition=0)
        with pytest.raises(errors.TopicAuthorizationError):
            p.commit_transaction()
        _fast(started)
        with pytest.raises(errors.AbortableError):
            future.get(timeout=5)
        p.abort_transaction()
        with p.transaction():
            p.send(topics.allowed, b"after", partition=0)
    assert committed(topics.allowed) == [b"after"]


def transactional_id_without_describe(settings: dict[str, Any], acls: AclAdmin, topics: AuthzTopics,
                                      committed: Committed) -> None:
    """No ACL on the id: the coordinator lookup is refused, fatal as in the Java client
    (FindCoordinatorHandler); a new producer works once the ACL is granted."""
    txn_id = f"other-app-{topics.allowed}"
    with producer(txn_id, **settings) as p:
        started = time.monotonic()
        with pytest.raises(errors.TransactionalIdAuthorizationError, match="create a new producer"):
            p.init_transactions()
        _fast(started)
        with pytest.raises(errors.TransactionalIdAuthorizationError):
            p.init_transactions()
    acls.add_acl(ALICE, "transactional_id", txn_id, "Write")
    with producer(txn_id, **settings) as p:
        p.init_transactions()
        with p.transaction():
            p.send(topics.allowed, b"after-grant", partition=0)
    assert committed(topics.allowed) == [b"after-grant"]


def transactional_id_without_write(settings: dict[str, Any], acls: AclAdmin, topics: AuthzTopics,
                                   committed: Committed) -> None:
    """DESCRIBE only: InitProducerId is refused, and as in the Java client (InitProducerIdHandler)
    the producer is left uninitialized: init_transactions() may be called again after the grant."""
    txn_id = f"describe-only-{topics.allowed}"
    acls.add_acl(ALICE, "transactional_id", txn_id, "Describe")
    with producer(txn_id, **settings) as p:
        started = time.monotonic()
        with pytest.raises(errors.TransactionalIdAuthorizationError):
            p.init_transactions()
        _fast(started)
        acls.add_acl(ALICE, "transactional_id", txn_id, "Write")
        p.init_transactions()
        with p.transaction():
            p.send(topics.allowed, b"after-grant", partition=0)
    assert committed(topics.allowed) == [b"after-grant"]


def group_without_read(settings: dict[str, Any], acls: AclAdmin, topics: AuthzTopics,
                       committed: Committed) -> None:
    with producer("tx-no-group", **settings) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(topics.allowed, b"with-offsets", partition=0)
        started = time.monotonic()
        with pytest.raises(errors.GroupAuthorizationError):
            p.send_offsets_to_transaction({TopicPartition(topics.allowed, 0): OffsetAndMetadata(1, "", -1)},
                                          "readers")
        _fast(started)
        p.abort_transaction()
        with p.transaction():
            p.send(topics.allowed, b"after", partition=0)
    assert committed(topics.allowed) == [b"after"]


#: every scenario, for parametrized tests
SCENARIOS: list[Callable[[dict[str, Any], AclAdmin, AuthzTopics, Committed], None]] = [
    topic_without_describe, topic_without_write, transactional_id_without_describe,
    transactional_id_without_write, group_without_read,
]


class KafkaAcls:
    """:class:`AclAdmin` for a real broker: CreateAcls through kafka-python's admin client (as a super user),
    then wait until the broker's authorizer lists the ACL (KRaft applies it asynchronously to the write)."""

    def __init__(self, admin_bootstrap: str, **client: Any) -> None:
        from kafka.admin import KafkaAdminClient

        self._admin = KafkaAdminClient(bootstrap_servers=admin_bootstrap, client_id="tests-acl-admin",
                                       **client)

    def close(self) -> None:
        self._admin.close()

    def add_acl(self, principal: str, resource_type: str, name: str, operation: str,
                pattern: str = "literal", permission: str = "allow") -> Any:
        from kafka.admin import (
            ACL,
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePattern,
            ResourceType,
        )

        acl = ACL(principal, "*", ACLOperation[operation.upper()], ACLPermissionType[permission.upper()],
                  ResourcePattern(ResourceType[resource_type.upper()], name,
                                  ACLResourcePatternType[pattern.upper()]))
        result = self._admin.create_acls([acl])
        assert not result["failed"], result["failed"]
        wanted = ACLFilter(principal, "*", acl.operation, acl.permission_type, acl.resource_pattern)
        deadline = time.monotonic() + 10
        while True:
            found, error = self._admin.describe_acls(wanted)
            if found:
                return acl
            assert time.monotonic() < deadline, f"the broker did not apply {acl} within 10 s ({error})"
            time.sleep(0.05)  # polling an external process's metadata: there is no event to wait on
