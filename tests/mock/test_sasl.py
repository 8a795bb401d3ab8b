"""SASL on the MockCluster (``testing/security/sasl.py``, ``connection_auth.py`` and the SaslHandshake /
SaslAuthenticate handlers), on the wire: each mechanism with the right secret and the wrong one, the error
code and message a client reads, the connection closed after a failure as Kafka closes it, requests before
authentication, unframed v0 tokens, KIP-368 session lifetime and re-authentication, and no secret in any log
line or request log entry of the mock."""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.net.sasl.oauth import AbstractTokenProvider
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from tests.mock._secure_wire import api_versions, authenticate, connect, metadata, oauth_token, plain_token
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster, OAuthToken

PASSWORD = "alice-secret"
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
USERS = {"alice": PASSWORD, "bob": "bob-secret"}


def _now_ms(cluster: MockCluster) -> int:
    return cluster.state.now_ms()


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    now = int(time.time() * 1000)  # the cluster's clock (ClusterState.now_ms)
    tokens: dict[str, OAuthToken | str] = {
        "alice-token": "alice",
        "bob-token": "bob",
        "expired-token": OAuthToken("alice", expires_at_ms=now - 1000),
        "traced-token": OAuthToken("alice", extensions={"traceId": "t-1"}),
    }
    with MockCluster(num_brokers=1, sasl_mechanisms=MECHANISMS, users=USERS, oauth_tokens=tokens) as c:
        yield c


def _login(cluster: MockCluster, mechanism: str, client: Any, secret: str = PASSWORD,
           user: str = "alice") -> Any:
    if mechanism == "OAUTHBEARER":
        return authenticate(client, mechanism, token=oauth_token(secret))
    return authenticate(client, mechanism, user=user, password=secret)


def test_sasl_apis_are_advertised_only_on_a_sasl_listener(cluster: MockCluster) -> None:
    with connect(cluster) as client:
        keys = {k.api_key: (k.min_version, k.max_version) for k in api_versions(client).api_keys}
    assert keys[17] == (0, 1) and keys[36] == (0, 2)
    assert cluster.security_protocol == "SASL_PLAINTEXT"
    with MockCluster(num_brokers=1) as plain, connect(plain) as client:
        assert not {17, 36} & {k.api_key for k in api_versions(client).api_keys}


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_mechanism_authenticates_with_the_right_secret(cluster: MockCluster, mechanism: str) -> None:
    secret = "alice-token" if mechanism == "OAUTHBEARER" else PASSWORD
    with connect(cluster) as client:
        answer = _login(cluster, mechanism, client, secret)
        assert (answer.error_code, answer.error_message, answer.session_lifetime_ms) == (0, None, 0)
        assert metadata(client).brokers
    entry = cluster.wait_for_request(lambda e: e.api == "Metadata")
    assert entry.principal == "User:alice"
    shake = cluster.wait_for_request(lambda e: e.api == "SaslHandshake")
    assert shake.fields == {"mechanism": mechanism} and shake.principal == "User:ANONYMOUS"


GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


@pytest.mark.parametrize(("mechanism", "user", "secret", "message"), [
    ("PLAIN", "alice", "wrong", "Authentication failed: Invalid username or password"),
    ("PLAIN", "mallory", PASSWORD, "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "alice", "wrong", GENERIC.format("SCRAM-SHA-256")),
    ("SCRAM-SHA-512", "alice", "wrong", GENERIC.format("SCRAM-SHA-512")),
    ("SCRAM-SHA-512", "mallory", PASSWORD, GENERIC.format("SCRAM-SHA-512")),
    ("OAUTHBEARER", "", "nobody-token", '{"status":"invalid_token"}: unknown token'),
])
def test_a_failed_authentication_is_answered_then_the_connection_closed(
        cluster: MockCluster, mechanism: str, user: str, secret: str, message: str) -> None:
    with connect(cluster) as client:
        answer = _login(cluster, mechanism, client, secret, user)
        assert answer.error_code == ec.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == message
        assert client.is_closed_by_peer(timeout=5)


def test_a_failed_authentication_is_answered_after_kafkas_delay() -> None:
    # connection.failed.authentication.delay.ms (KIP-306): the answer and the close are held back
    with MockCluster(num_brokers=1, sasl_mechanisms=["PLAIN"], users=USERS,
                     failed_authentication_delay_ms=300) as cluster, connect(cluster) as client:
        assert client.send(SaslHandshakeRequest[1](mechanism="PLAIN")).error_code == 0
        started = time.monotonic()
        answer = client.send(SaslAuthenticateRequest[2](auth_bytes=plain_token("alice", "wrong")))
        assert answer.error_code == ec.SASL_AUTHENTICATION_FAILED
        assert time.monotonic() - started >= 0.3
        assert client.is_closed_by_peer(timeout=5)
    with pytest.raises(ValueError, match="failed_authentication_delay_ms"):
        MockCluster(failed_authentication_delay_ms=-1)


def test_an_expired_oauth_token_says_so(cluster: MockCluster) -> None:
    with connect(cluster) as client:
        challenge = client.send(SaslHandshakeRequest[1](mechanism="OAUTHBEARER"))
        assert challenge.error_code == 0
        first = client.send(SaslAuthenticateRequest[2](auth_bytes=oauth_token("expired-token")))
        # RFC 7628: the failure comes as a challenge first, as Kafka's OAuthBearerSaslServer sends it
        assert (first.error_code, first.auth_bytes) == (0, b'{"status":"invalid_token"}')
        final = client.send(SaslAuthenticateRequest[2](auth_bytes=b"\x01"))
        assert final.error_code == ec.SASL_AUTHENTICATION_FAILED
        assert final.error_message.startswith('{"status":"invalid_token"}: the token expired at ')
        assert client.is_closed_by_peer(timeout=5)


@pytest.mark.parametrize(("extensions", "why"), [({}, "missing"), ({"traceId": "other"}, "unexpected value")])
def test_an_oauth_token_requires_its_extensions(
        cluster: MockCluster, extensions: dict[str, str], why: str) -> None:
    with connect(cluster) as client:
        answer = authenticate(client, "OAUTHBEARER", token=oauth_token("traced-token", extensions))
        assert answer.error_code == ec.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == (
            f"Authentication failed: 1 extensions are invalid! They are: traceId: {why}")
    with connect(cluster) as client:
        ok = authenticate(client, "OAUTHBEARER", token=oauth_token("traced-token", {"traceId": "t-1"}))
        assert ok.error_code == 0


def test_an_authorization_id_must_be_the_user(cluster: MockCluster) -> None:
    with connect(cluster) as client:
        answer = authenticate(client, "PLAIN", token=plain_token("alice", PASSWORD, authzid="bob"))
        assert answer.error_code == ec.SASL_AUTHENTICATION_FAILED
        assert "authorization id that is different from username" in answer.error_message


def test_an_unknown_mechanism_lists_the_enabled_ones_then_closes(cluster: MockCluster) -> None:
    with connect(cluster) as client:
        answer = client.send(SaslHandshakeRequest[1](mechanism="GSSAPI"))
        assert answer.error_code == ec.UNSUPPORTED_SASL_MECHANISM
        assert answer.mechanisms == MECHANISMS
        assert client.is_closed_by_peer(timeout=5)


def test_a_request_before_authentication_closes_the_connection_unanswered(cluster: MockCluster) -> None:
    with connect(cluster) as client:
        assert api_versions(client).error_code == 0  # allowed before authentication
        client.send_nowait(MetadataRequest[12](topics=None))
        assert client.is_closed_by_peer(timeout=5)
    entry = cluster.wait_for_request(lambda e: e.api == "Metadata")
    assert entry.dropped and entry.principal == "User:ANONYMOUS"


def test_a_request_in_the_middle_of_an_exchange_is_illegal_sasl_state(cluster: MockCluster) -> None:
    with connect(cluster) as client:
        assert client.send(SaslHandshakeRequest[1](mechanism="PLAIN")).error_code == 0
        answer = metadata(client, "orders")
        assert [(t.name, t.error_code) for t in answer.topics] == [("orders", ec.ILLEGAL_SASL_STATE)]
        assert client.is_closed_by_peer(timeout=5)


def test_sasl_requests_after_authentication_without_a_lifetime_are_illegal_but_harmless(
        cluster: MockCluster) -> None:
    with connect(cluster) as client:
        assert _login(cluster, "PLAIN", client).error_code == 0
        again = client.send(SaslAuthenticateRequest[2](auth_bytes=plain_token("alice", PASSWORD)))
        assert again.error_code == ec.ILLEGAL_SASL_STATE
        assert again.error_message == "SaslAuthenticate request received after successful authentication"
        shake = client.send(SaslHandshakeRequest[1](mechanism="PLAIN"))
        assert (shake.error_code, shake.mechanisms) == (ec.ILLEGAL_SASL_STATE, [])
        assert metadata(client).brokers  # still authenticated, still open


def _unframed(client: Any, token: bytes) -> bytes:
    client.send_raw(struct.pack(">i", len(token)) + token)
    return client.read_frame()


def test_handshake_v0_switches_to_unframed_tokens(cluster: MockCluster) -> None:
    with connect(cluster) as client:
        shake = client.send(SaslHandshakeRequest[0](mechanism="PLAIN"))
        assert shake.error_code == 0
        assert _unframed(client, plain_token("alice", PASSWORD)) == b""
        assert metadata(client).brokers
    with connect(cluster) as client:
        client.send(SaslHandshakeRequest[0](mechanism="PLAIN"))
        client.send_raw(struct.pack(">i", 16) + plain_token("alice", "wrong-passw"))
        assert client.is_closed_by_peer(timeout=5)  # v0 has no error answer
    tokens = [e for e in cluster.request_log if e.api == "SaslBytes"]
    assert [t.dropped for t in tokens] == [False, True]


@pytest.fixture
def lifetime_cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1, sasl_mechanisms=MECHANISMS, users=USERS,
                     oauth_tokens={"alice-token": "alice"}, sasl_session_lifetime_ms=60_000) as c:
        yield c


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_a_session_lifetime_is_announced_and_re_authentication_accepted(
        lifetime_cluster: MockCluster, mechanism: str) -> None:
    secret = "alice-token" if mechanism == "OAUTHBEARER" else PASSWORD
    with connect(lifetime_cluster) as client:
        assert _login(lifetime_cluster, mechanism, client, secret).session_lifetime_ms == 60_000
        again = _login(lifetime_cluster, mechanism, client, secret)  # KIP-368 re-authentication
        assert (again.error_code, again.session_lifetime_ms) == (0, 60_000)
        assert metadata(client).brokers
    connections = {e.connection_id for e in lifetime_cluster.request_log}
    assert len(connections) == 1


def test_re_authentication_cannot_change_the_principal(lifetime_cluster: MockCluster) -> None:
    with connect(lifetime_cluster) as client:
        assert _login(lifetime_cluster, "PLAIN", client).error_code == 0
        answer = authenticate(client, "PLAIN", user="bob", password="bob-secret")
        assert answer.error_code == ec.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == (
            "Cannot change principals during re-authentication from User.alice: User.bob")
        assert client.is_closed_by_peer(timeout=5)


def test_re_authentication_cannot_change_the_mechanism(lifetime_cluster: MockCluster) -> None:
    with connect(lifetime_cluster) as client:
        assert _login(lifetime_cluster, "PLAIN", client).error_code == 0
        assert client.send(SaslHandshakeRequest[1](mechanism="SCRAM-SHA-256")).error_code == 0
        client.send_nowait(SaslAuthenticateRequest[2](auth_bytes=b"n,,n=alice,r=x"))
        assert client.is_closed_by_peer(timeout=5)


def test_a_request_after_the_session_expired_closes_the_connection(
        lifetime_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    with connect(lifetime_cluster) as client:
        assert _login(lifetime_cluster, "PLAIN", client).error_code == 0
        later = _now_ms(lifetime_cluster) + 61_000
        monkeypatch.setattr(lifetime_cluster.state, "now_ms", lambda: later)  # the session's end has passed
        client.send_nowait(MetadataRequest[12](topics=None))
        assert client.is_closed_by_peer(timeout=5)


def test_an_expiring_token_shortens_the_session(lifetime_cluster: MockCluster) -> None:
    now = _now_ms(lifetime_cluster)
    with MockCluster(num_brokers=1, sasl_mechanisms=["OAUTHBEARER"],
                     oauth_tokens={"short": OAuthToken("alice", expires_at_ms=now + 30_000)}) as cluster, \
            connect(cluster) as client:
        lifetime = authenticate(client, "OAUTHBEARER", token=oauth_token("short")).session_lifetime_ms
        # Kafka: the token's remaining life when connections.max.reauth.ms is not set
        assert 25_000 < lifetime <= 30_000


class _Tokens(AbstractTokenProvider):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def token(self) -> str:
        self.calls += 1
        return "alice-token"


def test_kafka_python_re_authenticates_before_the_session_ends() -> None:
    # 3 s: kafka-python re-authenticates at 85-95 % of it, and a handshake after the session's end is
    # refused; with 1 s the thread had 50-150 ms to wake on a loaded machine
    with MockCluster(num_brokers=1, sasl_mechanisms=["OAUTHBEARER"], oauth_tokens={"alice-token": "alice"},
                     sasl_session_lifetime_ms=3000) as cluster:
        cluster.create_topic("reauth", 1)
        provider = _Tokens()
        # a producer: its sender thread keeps kafka-python's network loop (and so the re-auth timer) running
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                                 security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                                 sasl_oauth_token_provider=provider)
        try:
            producer.send("reauth", b"before").get(timeout=10)
            produced = cluster.wait_for_request(lambda e: e.api == "Produce")
            # kafka-python re-authenticates at 85-95 % of the announced 3000 ms, on the same connection
            again = cluster.wait_for_request(
                lambda e: e.api == "SaslAuthenticate" and e.connection_id == produced.connection_id,
                timeout=10, since=produced.seq)
            assert not again.error_codes and again.principal == "User:alice"
            assert provider.calls >= 2
            producer.send("reauth", b"after").get(timeout=10)
        finally:
            producer.close(timeout=5)


def test_no_secret_reaches_a_log_line_or_the_request_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="txnproducer")
    secrets_ = {"alice-secret", "wrong-secret", "alice-token", "nobody-token"}
    with MockCluster(num_brokers=1, sasl_mechanisms=MECHANISMS, users={"alice": "alice-secret"},
                     oauth_tokens={"alice-token": "alice"}) as cluster:
        for mechanism in MECHANISMS:
            for secret in (("alice-token", "nobody-token") if mechanism == "OAUTHBEARER"
                           else ("alice-secret", "wrong-secret")):
                with connect(cluster) as client:
                    _login(cluster, mechanism, client, secret)
        logged = [r.getMessage() for r in caplog.records if r.name.startswith("txnproducer")]
        entries = [repr(e) for e in cluster.request_log]
        settings = repr(cluster.listener.sasl)
    assert any("mock.sasl_failed" in line for line in logged) and any("mock.sasl_authenticated" in line
                                                                       for line in logged)
    leaks = [text for text in [*logged, *entries, settings] for s in secrets_ if s in text]
    assert leaks == []


def test_sasl_options_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown SASL mechanism"):
        MockCluster(sasl_mechanisms=["GSSAPI"])
    with pytest.raises(ValueError, match="need sasl_mechanisms"):
        MockCluster(users={"alice": "x"})
    with pytest.raises(ValueError, match="need 'OAUTHBEARER'"):
        MockCluster(sasl_mechanisms=["PLAIN"], oauth_tokens={"t": "alice"})
