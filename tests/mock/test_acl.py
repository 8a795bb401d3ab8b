"""The MockCluster's authorizer (``testing/security/acl.py``): Kafka's StandardAuthorizer rules - literal,
wildcard and prefixed patterns, ``User:*``, the operations that imply Describe, DENY over ALLOW, super users,
``allow.everyone.if.no.acl.found`` and authorizeByResourceType - and the ACL API of MockCluster."""

from __future__ import annotations

import pytest

from txnproducer.testing import Acl, MockCluster
from txnproducer.testing.security.acl import Authorizer, Operation, PatternType, Permission, ResourceType

ALICE = "User:alice"
TOPIC = ResourceType.TOPIC


def _authorizer(*acls: Acl, **kwargs: object) -> Authorizer:
    return Authorizer(acls, **kwargs)  # type: ignore[arg-type]


def test_acl_fields_accept_kafka_spellings() -> None:
    acl = Acl(ALICE, "Transactional-Id", "tx", "idempotent_write", "PREFIXED", "Deny")
    assert (acl.resource_type, acl.operation, acl.pattern, acl.permission) == (
        ResourceType.TRANSACTIONAL_ID,
        Operation.IDEMPOTENT_WRITE,
        PatternType.PREFIXED,
        Permission.DENY,
    )
    assert str(Acl(ALICE, "topic", "orders", "Write")) == "allow User:alice Write on topic literal 'orders'"
    with pytest.raises(ValueError, match="'Type:name'"):
        Acl("alice", "topic", "orders", "Write")
    with pytest.raises(ValueError, match="unknown Operation 'Frobnicate'"):
        Acl(ALICE, "topic", "orders", "Frobnicate")


def test_literal_wildcard_and_prefixed_patterns() -> None:
    literal = _authorizer(Acl(ALICE, "topic", "orders", "Write"))
    assert literal.authorize(ALICE, Operation.WRITE, TOPIC, "orders")
    assert not literal.authorize(ALICE, Operation.WRITE, TOPIC, "orders-2")
    wildcard = _authorizer(Acl(ALICE, "topic", "*", "Write"))
    assert wildcard.authorize(ALICE, Operation.WRITE, TOPIC, "anything")
    prefixed = _authorizer(Acl(ALICE, "topic", "orders-", "Write", "prefixed"))
    assert prefixed.authorize(ALICE, Operation.WRITE, TOPIC, "orders-eu")
    assert not prefixed.authorize(ALICE, Operation.WRITE, TOPIC, "order")
    assert not prefixed.authorize(ALICE, Operation.WRITE, ResourceType.GROUP, "orders-eu")  # another type


def test_principals_match_exactly_or_by_the_user_wildcard() -> None:
    acls = _authorizer(Acl("User:*", "group", "g", "Read"), Acl(ALICE, "topic", "t", "Read"))
    assert acls.authorize("User:bob", Operation.READ, ResourceType.GROUP, "g")
    assert not acls.authorize("User:bob", Operation.READ, TOPIC, "t")


@pytest.mark.parametrize("granted", ["Read", "Write", "Delete", "Alter", "Describe", "All"])
def test_describe_is_implied_by_read_write_delete_alter_and_all(granted: str) -> None:
    assert _authorizer(Acl(ALICE, "topic", "t", granted)).authorize(ALICE, Operation.DESCRIBE, TOPIC, "t")


@pytest.mark.parametrize(
    ("granted", "asked"),
    [
        ("Describe", "Read"),
        ("Read", "Write"),
        ("Write", "Create"),
        ("DescribeConfigs", "AlterConfigs"),
        ("Write", "IdempotentWrite"),
    ],
)
def test_no_other_implication(granted: str, asked: str) -> None:
    acls = _authorizer(Acl(ALICE, "topic", "t", granted))
    assert not acls.authorize(ALICE, Operation.parse(asked), TOPIC, "t")


def test_alter_configs_implies_describe_configs() -> None:
    acls = _authorizer(Acl(ALICE, "topic", "t", "AlterConfigs"))
    assert acls.authorize(ALICE, Operation.DESCRIBE_CONFIGS, TOPIC, "t")


def test_deny_wins_and_deny_all_denies_everything() -> None:
    acls = _authorizer(
        Acl(ALICE, "topic", "*", "All"), Acl(ALICE, "topic", "secret", "Read", permission="deny")
    )
    assert acls.authorize(ALICE, Operation.READ, TOPIC, "public")
    assert not acls.authorize(ALICE, Operation.READ, TOPIC, "secret")
    assert acls.authorize(ALICE, Operation.DESCRIBE, TOPIC, "secret")  # a deny has no implications
    acls.add(Acl(ALICE, "topic", "sec", "All", "prefixed", "deny"))
    assert not acls.authorize(ALICE, Operation.DESCRIBE, TOPIC, "secret")


def test_super_users_and_the_no_acl_rule() -> None:
    acls = _authorizer(Acl("User:bob", "topic", "bobs", "Read"), super_users=["User:admin"])
    assert acls.authorize("User:admin", Operation.ALTER, TOPIC, "bobs")
    assert not acls.authorize(ALICE, Operation.READ, TOPIC, "no-acl-at-all")
    everyone = _authorizer(Acl("User:bob", "topic", "bobs", "Read"), allow_everyone_if_no_acl_found=True)
    assert everyone.authorize(ALICE, Operation.READ, TOPIC, "no-acl-at-all")
    assert not everyone.authorize(ALICE, Operation.READ, TOPIC, "bobs")  # an ACL names it: rules apply


def test_authorize_by_resource_type() -> None:
    acls = _authorizer(Acl(ALICE, "topic", "orders-", "Write", "prefixed"))
    assert acls.authorize_by_resource_type(ALICE, Operation.WRITE, TOPIC)
    assert not acls.authorize_by_resource_type("User:bob", Operation.WRITE, TOPIC)
    assert not acls.authorize_by_resource_type(ALICE, Operation.WRITE, ResourceType.GROUP)
    acls.add(Acl(ALICE, "topic", "order", "Write", "prefixed", "deny"))  # covers every allowed name
    assert not acls.authorize_by_resource_type(ALICE, Operation.WRITE, TOPIC)
    assert _authorizer(super_users=[ALICE]).authorize_by_resource_type(ALICE, Operation.WRITE, TOPIC)


def test_cluster_acl_api() -> None:
    with MockCluster(num_brokers=1, acls=[("User:bob", "topic", "t", "Read")]) as cluster:
        added = cluster.add_acl(ALICE, "topic", "orders", "Write")
        cluster.add_acl(ALICE, "topic", "orders", "Write")  # again: no duplicate
        assert cluster.acls == [Acl("User:bob", "topic", "t", "Read"), added]
        assert cluster.remove_acl(ALICE, "topic", "orders", "Write")
        assert not cluster.remove_acl(ALICE, "topic", "orders", "Write")
        assert cluster.acls == [Acl("User:bob", "topic", "t", "Read")]


def test_acls_need_an_authorizer() -> None:
    with MockCluster(num_brokers=1) as cluster:
        assert cluster.acls == []
        with pytest.raises(ValueError, match="needs an authorizer"):
            cluster.add_acl(ALICE, "topic", "orders", "Write")
    with pytest.raises(ValueError, match="need acls"):
        MockCluster(super_users=["User:admin"])
