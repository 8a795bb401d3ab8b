"""GroupMember on a secured MockCluster: it joins over every security protocol the producer supports,
a wrong password is a typed error at once (not a timeout), and the group's ACLs are enforced with
the typed error that says which permission is missing."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kafka.structs import TopicPartition

from tests._support.group_members import FAST
from tests._support.security import FAST_FAIL_S, SecuredTarget, producer_settings
from txnproducer import errors
from txnproducer._internal.group import GroupMember, GroupSettings, connection_config
from txnproducer.testing import Acl, MockCluster

pytest.importorskip("trustme")

USERS = {"alice": "alice-secret-pw"}
SETUPS: list[tuple[str, dict[str, Any], str | None]] = [
    ("SASL_SSL-PLAIN", {"tls": True, "sasl_mechanisms": ["PLAIN"], "users": USERS}, "PLAIN"),
    ("SASL_PLAINTEXT-SCRAM-SHA-512", {"sasl_mechanisms": ["SCRAM-SHA-512"], "users": USERS}, "SCRAM-SHA-512"),
    ("SSL-mutual", {"tls": True, "tls_client_auth": "required"}, None),
]


class NoHooks:
    def on_revoke(self, partitions: frozenset[TopicPartition]) -> None:
        pass

    def on_assign(self, partitions: frozenset[TopicPartition]) -> None:
        pass

    def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        pass


def member_for(cluster: MockCluster, mechanism: str | None, **overrides: Any) -> GroupMember:
    tls = cluster.security_protocol in ("SSL", "SASL_SSL")
    target = SecuredTarget(bootstrap=cluster.bootstrap_servers, security_protocol=cluster.security_protocol,
                           ca_file=cluster.ca_file if tls else None, users=USERS,
                           client_certificate=cluster.client_certificate if tls else None)
    security = producer_settings(target, mechanism)
    security.update(overrides)
    bootstrap = security.pop("bootstrap_servers")
    return GroupMember(GroupSettings(group_id="secured", **FAST), NoHooks(),
                       connection=connection_config(bootstrap, client_id="m", **security))


def join(member: GroupMember, bound_s: float) -> None:
    member.subscribe(["t"])
    deadline = time.monotonic() + bound_s
    while not member.poll(time.monotonic() + 0.2):
        assert time.monotonic() < deadline, "the member did not join"


@pytest.mark.parametrize(("name", "options", "mechanism"), SETUPS, ids=[s[0] for s in SETUPS])
def test_a_member_joins_and_leaves_over_each_security_protocol(name: str, options: dict[str, Any],
                                                              mechanism: str | None) -> None:
    with MockCluster(num_brokers=2, **options) as cluster:
        cluster.create_topic("t", partitions=2)
        member = member_for(cluster, mechanism)
        try:
            join(member, 20)
            assert member.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}
            assert member.fetch_committed(member.assignment(), timeout=5) == {}
        finally:
            member.close(5)
        leave = [e for e in cluster.request_log if e.api == "LeaveGroup"]
        assert len(leave) == 1 and not leave[0].error_codes and leave[0].principal == "User:alice"


def test_a_wrong_password_is_a_typed_error_at_once() -> None:
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["PLAIN"], users=USERS) as cluster:
        cluster.create_topic("t", partitions=2)
        member = member_for(cluster, "PLAIN", sasl_plain_password="wrong")
        try:
            started = time.monotonic()
            with pytest.raises(errors.SaslAuthenticationError) as raised:
                join(member, 20)
            assert time.monotonic() - started < FAST_FAIL_S
            assert "wrong" not in str(raised.value)
        finally:
            member.close(5)


def test_a_member_without_read_on_its_group_is_refused() -> None:
    acls = [Acl("User:ANONYMOUS", "topic", "*", "Describe"), Acl("User:ANONYMOUS", "topic", "*", "Read"),
            Acl("User:ANONYMOUS", "group", "secured", "Describe")]  # Describe finds it; Read is missing
    with MockCluster(num_brokers=1, acls=acls) as cluster:
        cluster.create_topic("t", partitions=2)
        member = member_for(cluster, None)
        try:
            with pytest.raises(errors.GroupAuthorizationError, match="grant this principal READ"):
                join(member, 20)
            refused = [e for e in cluster.request_log if e.api == "JoinGroup"]
            assert [e.error_codes for e in refused] == [(30,)]
        finally:
            member.close(5)
