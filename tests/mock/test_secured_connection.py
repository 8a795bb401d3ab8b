"""Our connections over TLS and SASL (``network/connection.py``, ``connection_setup.py``,
``tls_channel.py``, ``sasl_authenticator.py``), against MockCluster's TLS and SASL listeners.

Driven here without a producer (``DirectConnections`` polled as the Sender polls them), so that what is
asserted is one connection's path and nothing else: a producer's bootstrap connection would hit most of
these failures first. What a user relies on:

- every mechanism authenticates and the principal is the one configured;
- KIP-368: a re-authentication leaves the requests in flight to be answered, holds the ones sent meanwhile
  and writes them after it, in order, and a refused re-authentication is an authentication error;
- the day-one mistakes are typed errors naming the broker and the cause (``auth_failures.py``), well
  within 5 s;
- a broker closing in the middle of a TLS or SASL handshake, or slower than
  ``socket_connection_setup_timeout_ms``, ends that attempt (transient, retried), and only repeated closes
  become an authentication error; a handshake within the bound succeeds;
- a certificate rotated between connections is the one the next connection sees.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import kafka.errors as kerrors
import pytest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from tests._support.security import FAST_FAIL_S
from txnproducer import errors
from txnproducer._internal.network.auth_failures import EOF_FAILURES_BEFORE_FATAL, ConnectionDiagnosis
from txnproducer._internal.network.channel_security import channel_security
from txnproducer._internal.network.connection import DirectConnection
from txnproducer._internal.network.connection_errors import ClosedBeforeReady, TlsHandshakeFailed
from txnproducer._internal.network.direct_connections import DirectConnections
from txnproducer._internal.network.future import Future
from txnproducer._internal.network.oauth_tokens import TokenCache, as_token_source
from txnproducer._internal.network.tls_context import build_ssl_context
from txnproducer.config import ProducerConfig
from txnproducer.oauth import OAuthBearerToken
from txnproducer.testing import MockCluster, OAuthToken

trustme = pytest.importorskip("trustme")

USERS = {"alice": "alice-secret-pw", "bob": "bob-secret-pw"}
TOKENS = {"alice-token-value": OAuthToken("alice"), "bob-token-value": OAuthToken("bob")}


class Harness:
    """``DirectConnections`` to one MockCluster broker, polled like the Sender polls them; every failed
    setup is classified as the producer classifies it."""

    def __init__(self, cluster: MockCluster, **settings: Any) -> None:
        tls = cluster.security_protocol in ("SSL", "SASL_SSL")
        defaults: dict[str, Any] = {"bootstrap_servers": cluster.bootstrap_servers, "transactional_id": "t",
                                    "security_protocol": cluster.security_protocol,
                                    "request_timeout_ms": 5_000, "reconnect_backoff_ms": 20,
                                    "reconnect_backoff_max_ms": 50}
        if tls:
            defaults["ssl_cafile"] = cluster.ca_file
        self.config = ProducerConfig(**{**defaults, **settings})
        self.tokens: TokenCache | None = None
        if self.config.sasl_mechanism == "OAUTHBEARER":
            self.tokens = TokenCache(as_token_source(self.config.sasl_oauth_token_provider), "t")
        security = channel_security(self.config, build_ssl_context(self.config), self.tokens)
        self.diagnosis = ConnectionDiagnosis(self.config)
        self.verdicts: list[errors.AuthenticationError] = []
        self.failures: list[BaseException] = []
        host, port = cluster.broker_address(1)
        self.broker = types.SimpleNamespace(node_id=1, host=host, port=port)
        self.conns = DirectConnections(
            self.config, broker_address=lambda _node: self.broker,
            api_versions_request=lambda v: ApiVersionsRequest(version=v, client_software_name="t",
                                                              client_software_version="1"),
            on_ready=lambda conn, _answer: self.diagnosis.connected(conn.node_id),
            on_close=lambda _conn: None,
            security=security, on_setup_failed=self._failed)

    def _failed(self, node: Any, broker: Any, exc: BaseException) -> None:
        self.failures.append(exc)
        verdict = self.diagnosis.failed(node, broker, exc)
        if verdict is not None:
            self.verdicts.append(verdict)

    def pump(self, until: Callable[[], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not until():
            assert time.monotonic() < deadline, "condition not reached within the test's bound"
            self.conns.poll(0.02)

    def send(self, request: Any = None) -> Future:
        request = request or MetadataRequest(version=9, topics=[], allow_auto_topic_creation=False)
        return self.conns.send(1, request)

    def ready_connection(self) -> DirectConnection:
        self.conns.connection(1)
        self.pump(lambda: self.conns.is_ready(1))
        conn = self.conns.get(1)
        assert conn is not None
        return conn

    def close(self) -> None:
        self.conns.close_all(kerrors.KafkaConnectionError("test over"))
        if self.tokens is not None:
            self.tokens.close()


@pytest.fixture
def harnesses() -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(cluster: MockCluster, **settings: Any) -> Harness:
        made.append(Harness(cluster, **settings))
        return made[-1]

    yield make
    for harness in made:
        harness.close()


def sasl(mechanism: str, user: str = "alice") -> dict[str, Any]:
    if mechanism == "OAUTHBEARER":
        def token() -> OAuthBearerToken:
            return OAuthBearerToken(f"{user}-token-value", time.time() + 3600)

        return {"sasl_mechanism": mechanism, "sasl_oauth_token_provider": token}
    return {"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": USERS[user]}


def connection_log(cluster: MockCluster, connection_id: int) -> list[str]:
    return [e.api for e in cluster.request_log if e.connection_id == connection_id]


# (name, MockCluster options, producer settings)
SETUPS: list[tuple[str, dict[str, Any], Callable[[MockCluster], dict[str, Any]]]] = [
    *[(f"SASL_SSL-{m}", {"tls": True, "sasl_mechanisms": [m], "users": USERS, "oauth_tokens": TOKENS}
       if m == "OAUTHBEARER" else {"tls": True, "sasl_mechanisms": [m], "users": USERS},
       lambda _c, m=m: sasl(m)) for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")],
    ("SASL_PLAINTEXT-SCRAM-SHA-512", {"sasl_mechanisms": ["SCRAM-SHA-512"], "users": USERS},
     lambda _c: sasl("SCRAM-SHA-512")),
    ("SSL-mutual", {"tls": True, "tls_client_auth": "required"},
     lambda c: dict(zip(("ssl_certfile", "ssl_keyfile"), c.client_certificate("alice"), strict=True))),
]


@pytest.mark.parametrize(("name", "options", "settings"), SETUPS, ids=[s[0] for s in SETUPS])
def test_each_mechanism_authenticates_and_answers(harnesses: Any, name: str, options: dict[str, Any],
                                                   settings: Callable[[MockCluster], dict[str, Any]]) -> None:
    with MockCluster(num_brokers=1, **options) as cluster:
        harness = harnesses(cluster, **settings(cluster))
        future = harness.send()  # held while the connection sets up, written once it is ready
        harness.pump(lambda: future.is_done)
        assert future.succeeded(), future.exception
        answered = cluster.wait_for_request(lambda e: e.api == "Metadata")
        assert answered.principal == "User:alice"
        if "SASL" in name:
            assert connection_log(cluster, answered.connection_id)[:4] == [
                "ApiVersions", "SaslHandshake", "SaslAuthenticate", *(
                    ["SaslAuthenticate"] if "SCRAM" in name else ["Metadata"])]
        assert not harness.failures


# -- KIP-368 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "OAUTHBEARER"])
def test_reauthentication_answers_what_is_in_flight_and_then_what_waited(harnesses: Any,
                                                                         mechanism: str) -> None:
    credentials = {"oauth_tokens": TOKENS} if mechanism == "OAUTHBEARER" else {"users": USERS}
    # the session (4 s) is shorter than the request timeout (10 s): tick() may be told it is time to
    # re-authenticate without the request in flight counting as timed out
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=[mechanism], sasl_session_lifetime_ms=4_000,
                     **credentials) as cluster:
        harness = harnesses(cluster, request_timeout_ms=10_000, **sasl(mechanism))
        conn = harness.ready_connection()
        assert conn.reauth_at is not None  # the broker set a session lifetime: a re-authentication is due
        cluster.delay_responses("Metadata", 300)
        in_flight = harness.send()  # on the wire, answered 300 ms from now
        conn.tick(conn.reauth_at)  # the re-authentication is due now: it starts behind that request
        waited = harness.send()  # held until the re-authentication is done
        harness.pump(lambda: in_flight.is_done and waited.is_done)
        assert in_flight.succeeded() and waited.succeeded(), (in_flight.exception, waited.exception)
        first = cluster.wait_for_request(lambda e: e.api == "Metadata")
        rounds = ["SaslAuthenticate"] * (2 if mechanism.startswith("SCRAM") else 1)
        after = [e for e in cluster.request_log
                 if e.connection_id == first.connection_id and e.seq >= first.seq]
        assert [e.api for e in after] == ["Metadata", "SaslHandshake", *rounds, "Metadata"]
        assert not any(e.dropped or e.error_codes for e in after)
        assert all(e.principal == "User:alice" for e in after)
        assert conn.reauth_at is not None and not conn.closed  # the next one is scheduled
        assert not harness.failures


def test_a_refused_reauthentication_is_an_authentication_error(harnesses: Any) -> None:
    """KIP-368: the principal may not change; the mock refuses, as Kafka does. The request that waited
    for the re-authentication fails with it rather than waiting forever."""
    tokens = iter(["alice-token-value", "bob-token-value"])
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["OAUTHBEARER"], oauth_tokens=TOKENS,
                     sasl_session_lifetime_ms=4_000) as cluster:
        harness = harnesses(cluster, request_timeout_ms=10_000, sasl_mechanism="OAUTHBEARER",
                            sasl_oauth_token_provider=lambda: next(tokens))
        conn = harness.ready_connection()
        assert conn.reauth_at is not None
        conn.tick(conn.reauth_at)
        waited = harness.send()
        harness.pump(lambda: waited.is_done)
        assert waited.failed() and conn.closed
        assert "Cannot change principals" in str(waited.exception)
        [verdict] = harness.verdicts
        assert isinstance(verdict, errors.SaslAuthenticationError)
        assert "Cannot change principals" in str(verdict) and "broker 1 (127.0.0.1:" in str(verdict)


# -- day-one mistakes: typed errors naming the broker and the cause ----------------------------------------


def _wrong_ca(tmp: Any) -> dict[str, Any]:
    path = tmp / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(path))
    return {"ssl_cafile": str(path)}


# (name, MockCluster options, settings (given tmp_path), error class, what the message says)
MISTAKES: list[tuple[str, dict[str, Any], Callable[[Any], dict[str, Any]], type[errors.AuthenticationError],
                     tuple[str, ...]]] = [
    ("wrong password SCRAM", {"tls": True, "sasl_mechanisms": ["SCRAM-SHA-512"], "users": USERS},
     lambda _t: {**sasl("SCRAM-SHA-512"), "sasl_plain_password": "not-the-pw"},
     errors.SaslAuthenticationError,
     ("invalid credentials", "'alice'", "SCRAM-SHA-512", "sasl_plain_password")),
    ("wrong password PLAIN", {"tls": True, "sasl_mechanisms": ["PLAIN"], "users": USERS},
     lambda _t: {**sasl("PLAIN"), "sasl_plain_password": "not-the-pw"}, errors.SaslAuthenticationError,
     ("Invalid username or password",)),
    ("unknown user", {"tls": True, "sasl_mechanisms": ["SCRAM-SHA-512"], "users": USERS},
     lambda _t: {**sasl("SCRAM-SHA-512"), "sasl_plain_username": "mallory"}, errors.SaslAuthenticationError,
     ("'mallory'", "invalid credentials")),
    ("mechanism not enabled", {"tls": True, "sasl_mechanisms": ["SCRAM-SHA-512"], "users": USERS},
     lambda _t: sasl("SCRAM-SHA-256"), errors.SaslAuthenticationError,
     ("does not enable the mechanism SCRAM-SHA-256",)),
    ("token refused", {"tls": True, "sasl_mechanisms": ["OAUTHBEARER"], "oauth_tokens": TOKENS},
     lambda _t: {"sasl_mechanism": "OAUTHBEARER",
                 "sasl_oauth_token_provider": lambda: "revoked-token"},
     errors.SaslAuthenticationError, ("invalid_token", "sasl_oauth_token_provider")),
    ("untrusted CA", {"tls": True}, _wrong_ca, errors.SslAuthenticationError,
     ("not trusted", "other-ca.pem")),
    ("wrong host name", {"tls": True, "tls_hostnames": ["kafka.example.com"]}, lambda _t: {},
     errors.SslAuthenticationError, ("does not name the host", "ssl_check_hostname")),
    ("missing client certificate", {"tls": True, "tls_client_auth": "required"}, lambda _t: {},
     errors.SslAuthenticationError, ("ssl_certfile",)),
    ("plaintext to a TLS listener", {"tls": True}, lambda _t: {"security_protocol": "PLAINTEXT",
                                                              "ssl_cafile": None},
     errors.SslAuthenticationError, ("speaks TLS", "security_protocol='SSL'")),
    ("SASL_PLAINTEXT to a SASL_SSL listener", {"tls": True, "sasl_mechanisms": ["PLAIN"], "users": USERS},
     lambda _t: {**sasl("PLAIN"), "security_protocol": "SASL_PLAINTEXT", "ssl_cafile": None},
     errors.SslAuthenticationError, ("speaks TLS", "security_protocol='SASL_SSL'")),
    ("TLS to a plaintext listener", {}, lambda _t: {"security_protocol": "SSL"},
     errors.SslAuthenticationError, ("TLS handshake", "a TLS listener")),
]


@pytest.mark.parametrize(("name", "options", "settings", "error_class", "says"), MISTAKES,
                         ids=[m[0] for m in MISTAKES])
def test_a_day_one_mistake_is_its_typed_error_at_once(
        harnesses: Any, tmp_path: Any, name: str, options: dict[str, Any],
        settings: Callable[[Any], dict[str, Any]], error_class: type[errors.AuthenticationError],
        says: tuple[str, ...]) -> None:
    secrets = ("not-the-pw", "revoked-token", *USERS.values())
    with MockCluster(num_brokers=1, failed_authentication_delay_ms=50, **options) as cluster:
        harness = harnesses(cluster, **settings(tmp_path))
        started = time.monotonic()
        pending = harness.send()

        def refused() -> bool:  # until then, reconnect after each backoff, as the Sender does
            harness.conns.connection(1)
            return bool(harness.verdicts)

        harness.pump(refused, timeout=FAST_FAIL_S)
        elapsed = time.monotonic() - started
        assert pending.failed()
        verdict = harness.verdicts[0]
        assert isinstance(verdict, error_class), verdict
        text = str(verdict)
        assert all(s in text for s in says), text
        assert f"broker 1 ({harness.broker.host}:{harness.broker.port})" in text
        assert not any(s in text for s in secrets)
        assert elapsed < FAST_FAIL_S


# -- handshakes that break or lag -------------------------------------------------------------------------


def _retry(harness: Harness, future: Future) -> Future:
    """Send again once the last attempt failed (what the Sender does with a failed request)."""
    harness.pump(lambda: future.is_done)
    if future.succeeded():
        return future
    harness.pump(lambda: harness.conns.connection_delay(1) == 0)
    return harness.send()


def test_a_broker_closing_mid_tls_handshake_is_retried_and_only_repeated_closes_are_fatal(
        harnesses: Any) -> None:
    with MockCluster(num_brokers=1, tls=True) as cluster:
        harness = harnesses(cluster)
        cluster.listener.close_tls_handshakes(1)
        future = _retry(harness, harness.send())
        future = _retry(harness, future)
        harness.pump(lambda: future.is_done)
        assert future.succeeded() and cluster.listener.tls_faults_applied == 1
        [failure] = harness.failures
        assert isinstance(failure, TlsHandshakeFailed) and not harness.verdicts  # once: transient
        harness.conns.close(1, kerrors.KafkaConnectionError("test: reconnect"))
        cluster.listener.close_tls_handshakes(EOF_FAILURES_BEFORE_FATAL)
        for _ in range(EOF_FAILURES_BEFORE_FATAL):
            future = _retry(harness, harness.send())
        harness.pump(lambda: bool(harness.verdicts))
        [verdict] = harness.verdicts
        assert isinstance(verdict, errors.SslAuthenticationError)
        assert f"during the TLS handshake {EOF_FAILURES_BEFORE_FATAL} times in a row" in str(verdict)


def test_a_broker_closing_mid_sasl_exchange_is_retried(harnesses: Any) -> None:
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["SCRAM-SHA-512"], users=USERS) as cluster:
        harness = harnesses(cluster, **sasl("SCRAM-SHA-512"))
        cluster.drop_connection_after("SaslAuthenticate", when="before")
        future = _retry(harness, harness.send())
        harness.pump(lambda: future.is_done)
        assert future.succeeded()
        [failure] = harness.failures
        assert isinstance(failure, ClosedBeforeReady) and "during SASL authentication" in str(failure)
        assert not harness.verdicts
        assert [e.api for e in cluster.request_log if e.dropped] == ["SaslAuthenticate"]


def test_a_tls_handshake_slower_than_the_setup_timeout_is_cut_there(harnesses: Any) -> None:
    with MockCluster(num_brokers=1, tls=True) as cluster:
        harness = harnesses(cluster, socket_connection_setup_timeout_ms=400)
        cluster.listener.delay_tls_handshakes(3_000)
        started = time.monotonic()
        future = harness.send()
        harness.pump(lambda: future.is_done)
        took = time.monotonic() - started
        assert isinstance(future.exception, TlsHandshakeFailed) and 0.35 <= took < 2.0, (
            f"after {took:.4f} s: {future.exception!r}; setup failures {harness.failures!r}; "
            f"handshakes delayed {cluster.listener.tls_faults_applied}; "
            f"requests {[(e.api, e.connection_id) for e in cluster.request_log]}")
        assert "not finished within the connection setup timeout" in str(future.exception)
        assert "socket_connection_setup_timeout_ms (400 ms)" in str(harness.diagnosis.last_errors())
        assert not harness.verdicts  # slow is not refused: retried after the backoff
        retried = _retry(harness, future)
        harness.pump(lambda: retried.is_done)
        assert retried.succeeded()


def test_a_slow_tls_handshake_within_the_setup_timeout_succeeds(harnesses: Any) -> None:
    with MockCluster(num_brokers=1, tls=True) as cluster:
        harness = harnesses(cluster, socket_connection_setup_timeout_ms=5_000)
        cluster.listener.delay_tls_handshakes(500)
        future = harness.send()
        harness.pump(lambda: future.is_done)
        assert future.succeeded() and cluster.listener.tls_faults_applied == 1 and not harness.failures


def test_a_sasl_exchange_slower_than_the_setup_timeout_is_cut_there(harnesses: Any) -> None:
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["PLAIN"], users=USERS) as cluster:
        harness = harnesses(cluster, socket_connection_setup_timeout_ms=400, **sasl("PLAIN"))
        cluster.delay_responses("SaslAuthenticate", 3_000)
        started = time.monotonic()
        future = harness.send()
        harness.pump(lambda: future.is_done)
        assert time.monotonic() - started < 2.0
        assert "SASL authentication with broker 1" in str(future.exception)
        assert "socket_connection_setup_timeout_ms (400 ms)" in str(future.exception)


# -- certificates -------------------------------------------------------------------------------------------


def test_a_certificate_rotated_between_connections_is_the_one_the_next_connection_sees(
        harnesses: Any) -> None:
    with MockCluster(num_brokers=1, tls=True, tls_client_auth="required") as cluster:
        certfile, keyfile = cluster.client_certificate("alice")
        harness = harnesses(cluster, ssl_certfile=certfile, ssl_keyfile=keyfile)
        before = harness.ready_connection().peer_certificate
        rotated = cluster.listener.tls.rotate_broker_certificate()  # type: ignore[union-attr]
        assert before is not None and rotated != before
        harness.conns.close(1, kerrors.KafkaConnectionError("test: reconnect"))
        harness.pump(lambda: harness.conns.connection_delay(1) == 0)
        future = harness.send()
        harness.pump(lambda: future.is_done)
        assert future.succeeded()
        conn = harness.conns.get(1)
        assert conn is not None and conn.peer_certificate == rotated
        assert cluster.wait_for_request(lambda e: e.api == "Metadata").principal == "User:alice"
