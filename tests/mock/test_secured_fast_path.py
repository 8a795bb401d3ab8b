"""Producers and consumers on secured MockClusters: every request on our own connections over TLS and SASL.

Bootstrap, metadata, every request of a transaction (FindCoordinator, InitProducerId, Produce, EndTxn, ...)
and of the consumer's data path (ListOffsets, Fetch) go over our connections. The tests show it twice: no
request passes kafka-python's ``KafkaConnection.send_request`` (a spy, not a stub), and in the broker's
request log every connection that carried them authenticated as the user.

And what the fast path must keep doing over time: re-authenticate (KIP-368) before the broker's session
ends with transactions running, on the same connection, nothing dropped; reconnect with the broker's
rotated certificate; get past a broker that closes once in the middle of a TLS or SASL handshake, or
answers it slowly within the bound.

Marked ``timing``: with the 4-6 s broker sessions used here, a re-authentication is due 200-900 ms
before the session ends (85-95 % of it, as the Java client); a machine starved of CPU for longer can miss
that window (the broker then closes the connection and the Sender reconnects: nothing is lost, but the
one-connection claim fails), so a parallel run runs this module last, when the machine is quietest. With
3 s sessions (a 150-450 ms window) the busy test failed twice in full parallel runs of the suite.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.net.connection import KafkaConnection

from tests._support.producers import committed_values
from tests._support.security import producer, producer_settings
from tests.mock.test_secured_producer import SETUPS, USERS, target_of
from txnproducer import TransactionalConsumer
from txnproducer.oauth import OAuthBearerToken
from txnproducer.testing import MockCluster, OAuthToken

trustme = pytest.importorskip("trustme")

# the requests of a transaction and of a consumer's data path
pytestmark = [pytest.mark.timing]

DATA_PATH = {"FindCoordinator", "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit",
             "Produce", "EndTxn", "ListOffsets", "Fetch", "OffsetForLeaderEpoch"}


@pytest.fixture
def through_kafka_python(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """Counts the requests sent over kafka-python's connections, by API (``SaslAuthenticateRequest`` ->
    ``SaslAuthenticate``)."""
    seen: collections.Counter[str] = collections.Counter()
    original = KafkaConnection.send_request

    def counting(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        seen[type(request).__name__.removesuffix("Request")] += 1
        return original(self, request, *args, **kwargs)

    monkeypatch.setattr(KafkaConnection, "send_request", counting)
    return seen


def assert_on_the_fast_path(cluster: MockCluster, through_kafka_python: collections.Counter[str],
                            principal: str = "User:alice") -> set[int]:
    """Every request went over our connections; the data path's connection ids."""
    assert not through_kafka_python, through_kafka_python
    log = cluster.request_log
    ours = {e.connection_id for e in log if e.api in DATA_PATH}
    assert ours and {e.connection_id for e in log if e.api == "Metadata"}
    assert all(e.principal == principal for e in log if e.connection_id in ours and e.api in DATA_PATH)
    if cluster.listener.sasl is not None:
        assert all(any(e.api == "SaslAuthenticate" and e.connection_id == c for e in log) for c in ours)
    return ours


@pytest.mark.parametrize(("name", "options", "mechanism"), SETUPS, ids=[s[0] for s in SETUPS])
def test_each_mechanism_commits_and_aborts_on_the_fast_path(
        name: str, options: dict[str, Any], mechanism: str | None,
        through_kafka_python: collections.Counter[str]) -> None:
    with MockCluster(num_brokers=2, **options) as cluster:
        cluster.create_topic("secured", partitions=1)
        with producer(f"tx-fast-{name}", **producer_settings(target_of(cluster), mechanism)) as p:
            p.init_transactions()
            with p.transaction():
                p.send("secured", b"committed", partition=0)
            p.begin_transaction()
            p.send("secured", b"aborted", partition=0)
            p.flush()
            p.abort_transaction()
        assert_on_the_fast_path(cluster, through_kafka_python)
        assert committed_values(cluster, "secured", 0) == [b"committed"]


def test_the_consumer_reads_on_the_fast_path(through_kafka_python: collections.Counter[str]) -> None:
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["SCRAM-SHA-512"], users=USERS) as cluster:
        cluster.create_topic("read-secured", partitions=1)
        settings = producer_settings(target_of(cluster), "SCRAM-SHA-512")
        with producer("tx-read-secured", **settings) as p:
            p.init_transactions()
            with p.transaction():
                for i in range(5):
                    p.send("read-secured", f"v{i}".encode(), partition=0)
        seen: list[bytes] = []
        with TransactionalConsumer(auto_offset_reset="earliest", **settings) as consumer:
            consumer.assign([("read-secured", 0)])
            deadline = time.monotonic() + 20
            while len(seen) < 5:
                assert time.monotonic() < deadline, seen
                seen.extend(r.value for r in consumer.poll(timeout=0.2))
        assert seen == [f"v{i}".encode() for i in range(5)]
        assert "Fetch" in {e.api for e in cluster.request_log}
        assert_on_the_fast_path(cluster, through_kafka_python)


# -- KIP-368 re-authentication, end to end ------------------------------------------------------------------


def _sender_connection_ids(cluster: MockCluster, since: int = 0) -> set[int]:
    return {e.connection_id for e in cluster.request_log[since:] if e.api in ("Produce", "EndTxn")}


def _reauthentications(cluster: MockCluster, connection_id: int) -> int:
    """SaslHandshakes on an already authenticated connection."""
    return sum(1 for e in cluster.request_log if e.connection_id == connection_id and e.api == "SaslHandshake"
               and e.principal != "User:ANONYMOUS")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "OAUTHBEARER"])
def test_transactions_keep_committing_across_reauthentications_on_one_connection(
        mechanism: str, through_kafka_python: collections.Counter[str]) -> None:
    """The broker's session is 6 s; transactions run without a pause until the Sender's connection has
    re-authenticated twice. Without re-authentication the broker closes the connection at the
    first request after the session ended (and the Sender reconnects): here there is one connection,
    every transaction commits and no request is dropped or refused."""
    tokens = {f"alice-{i}": OAuthToken("alice") for i in range(50)}
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=[mechanism], users=USERS,
                     **({"oauth_tokens": tokens} if mechanism == "OAUTHBEARER" else {}),
                     sasl_session_lifetime_ms=6_000) as cluster:
        cluster.create_topic("reauth", partitions=2)
        settings = producer_settings(target_of(cluster), mechanism)
        if mechanism == "OAUTHBEARER":  # a token per authentication, each valid, as a refreshing provider
            fresh = iter(tokens)
            settings["sasl_oauth_token_provider"] = lambda: OAuthBearerToken(next(fresh))
        committed = 0
        with producer("tx-reauth", **settings) as p:
            p.init_transactions()
            [sender] = _sender_connection_ids(cluster) or [None]
            deadline = time.monotonic() + 30
            while sender is None or _reauthentications(cluster, sender) < 2:
                assert time.monotonic() < deadline, "two re-authentications within 30 s"
                with p.transaction():
                    p.send("reauth", f"v{committed}".encode(), partition=committed % 2)
                    p.send("reauth", f"w{committed}".encode(), partition=(committed + 1) % 2)
                committed += 1
                sender = sender or next(iter(_sender_connection_ids(cluster)))
        assert _sender_connection_ids(cluster) == {sender}  # never reconnected
        on_sender = [e for e in cluster.request_log if e.connection_id == sender]
        assert not any(e.dropped or e.error_codes for e in on_sender), [e for e in on_sender if e.dropped]
        assert {e.principal for e in on_sender if e.api in DATA_PATH} == {"User:alice"}
        values = committed_values(cluster, "reauth", 0) + committed_values(cluster, "reauth", 1)
        assert len(values) == 2 * committed and len(set(values)) == 2 * committed
        assert_on_the_fast_path(cluster, through_kafka_python)


# -- certificates and handshakes ----------------------------------------------------------------------------


@pytest.fixture
def sasl_ssl_cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["SCRAM-SHA-512"], users=USERS) as cluster:
        cluster.create_topic("handshakes", partitions=1)
        yield cluster


def _lose_the_sender_connection_and_commit(cluster: MockCluster, p: Any, value: bytes) -> int:
    """One transaction whose EndTxn answer is lost with its connection (the Sender reconnects and
    retries EndTxn), then one more on the new connection; returns the new connection's id."""
    since = cluster.requests.next_seq()
    cluster.drop_connection_after("EndTxn", when="after")
    with p.transaction():
        p.send("handshakes", value, partition=0)
    with p.transaction():
        p.send("handshakes", value + b"+", partition=0)
    ids = _sender_connection_ids(cluster, since)
    assert len(ids) == 2, ids
    return max(ids)


def test_a_rotated_broker_certificate_is_the_one_the_next_connection_sees(
        sasl_ssl_cluster: MockCluster) -> None:
    cluster = sasl_ssl_cluster
    with producer("tx-rotate", **producer_settings(target_of(cluster), "SCRAM-SHA-512")) as p:
        p.init_transactions()
        with p.transaction():
            p.send("handshakes", b"before", partition=0)
        [conn] = p._net._direct._conns.values()
        before = conn.peer_certificate
        rotated = cluster.listener.tls.rotate_broker_certificate()  # type: ignore[union-attr]
        _lose_the_sender_connection_and_commit(cluster, p, b"after")
        [conn] = p._net._direct._conns.values()
        assert before is not None and conn.peer_certificate == rotated != before
    assert committed_values(cluster, "handshakes", 0) == [b"before", b"after", b"after+"]


@pytest.mark.parametrize("fault", ["tls-close", "sasl-close", "tls-slow"])
def test_a_handshake_that_breaks_once_or_lags_within_the_bound_is_got_past(
        sasl_ssl_cluster: MockCluster, fault: str) -> None:
    cluster = sasl_ssl_cluster
    settings = {**producer_settings(target_of(cluster), "SCRAM-SHA-512"),
                "socket_connection_setup_timeout_ms": 5_000}
    with producer(f"tx-{fault}", **settings) as p:
        p.init_transactions()
        if fault == "tls-close":
            cluster.listener.close_tls_handshakes(1)
        elif fault == "tls-slow":
            cluster.listener.delay_tls_handshakes(300)
        else:
            cluster.drop_connection_after("SaslAuthenticate", when="before")
        _lose_the_sender_connection_and_commit(cluster, p, fault.encode())
        assert p._net.auth_error is None
    if fault.startswith("tls"):
        assert cluster.listener.tls_faults_applied == 1
    else:
        assert [e.api for e in cluster.request_log if e.dropped and e.api != "EndTxn"] == ["SaslAuthenticate"]
    assert committed_values(cluster, "handshakes", 0) == [fault.encode(), fault.encode() + b"+"]


def test_idle_connections_reauthenticate_on_time(through_kafka_python: collections.Counter[str]) -> None:
    """An idle connection re-authenticates when its time comes (the Java client waits for its next
    request, which the broker then refuses if the session has ended): after an idle pause longer than
    the session, the next transaction still goes out on the same connection."""
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["SCRAM-SHA-512"], users=USERS,
                     sasl_session_lifetime_ms=4_000) as cluster:
        cluster.create_topic("idle", partitions=1)
        with producer("tx-idle", **producer_settings(target_of(cluster), "SCRAM-SHA-512")) as p:
            p.init_transactions()
            with p.transaction():
                p.send("idle", b"a", partition=0)
            [sender] = _sender_connection_ids(cluster)

            def reauthentication(since: int) -> Any:  # a SaslHandshake on the authenticated connection
                return cluster.wait_for_request(
                    lambda e: (e.connection_id == sender and e.api == "SaslHandshake"
                               and e.principal == "User:alice"), timeout=15, since=since)

            # idle: nothing is sent, and the connection re-authenticates twice, each before its session ends
            first = reauthentication(0)
            reauthentication(first.seq + 1)
            with p.transaction():
                p.send("idle", b"b", partition=0)
        assert _sender_connection_ids(cluster) == {sender}
        assert committed_values(cluster, "idle", 0) == [b"a", b"b"]
