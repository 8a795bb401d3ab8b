"""The producer on a secured MockCluster: every protocol and mechanism commits and aborts, and every
day-one mistake (wrong CA, wrong host, wrong password, unknown user, missing client certificate, a
token the broker refuses) is a typed error naming its cause within seconds, not after max_block_ms.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests._support.security import (
    FAST_FAIL_S,
    SecuredTarget,
    check_commit_and_abort,
    producer,
    producer_settings,
)
from txnproducer import errors
from txnproducer.oauth import OAuthBearerToken
from txnproducer.testing import MockCluster, OAuthToken

trustme = pytest.importorskip("trustme")

USERS = {"alice": "alice-secret-pw", "bob": "bob-secret-pw"}
TOKENS = {"alice-token-value": OAuthToken("alice"), "bob-token-value": OAuthToken("bob")}


def _token_for(user: str) -> OAuthBearerToken:
    return OAuthBearerToken(f"{user}-token-value", time.time() + 3600)


def target_of(cluster: MockCluster) -> SecuredTarget:
    tls = cluster.security_protocol in ("SSL", "SASL_SSL")
    return SecuredTarget(bootstrap=cluster.bootstrap_servers, security_protocol=cluster.security_protocol,
                         ca_file=cluster.ca_file if tls else None, users=USERS, oauth_token=_token_for,
                         client_certificate=cluster.client_certificate if tls else None)


# (name, MockCluster security options, mechanism the producer uses)
SETUPS: list[tuple[str, dict[str, Any], str | None]] = [
    ("SASL_SSL-PLAIN", {"tls": True, "sasl_mechanisms": ["PLAIN"], "users": USERS}, "PLAIN"),
    ("SASL_SSL-SCRAM-SHA-256", {"tls": True, "sasl_mechanisms": ["SCRAM-SHA-256"], "users": USERS},
     "SCRAM-SHA-256"),
    ("SASL_SSL-SCRAM-SHA-512", {"tls": True, "sasl_mechanisms": ["SCRAM-SHA-512"], "users": USERS},
     "SCRAM-SHA-512"),
    ("SASL_SSL-OAUTHBEARER", {"tls": True, "sasl_mechanisms": ["OAUTHBEARER"], "oauth_tokens": TOKENS},
     "OAUTHBEARER"),
    ("SASL_PLAINTEXT-SCRAM-SHA-512", {"sasl_mechanisms": ["SCRAM-SHA-512"], "users": USERS}, "SCRAM-SHA-512"),
    ("SSL-mutual", {"tls": True, "tls_client_auth": "required"}, None),
]


@pytest.mark.parametrize("transaction_version", [1, 2], ids=["tv1", "tv2"])
@pytest.mark.parametrize(("name", "options", "mechanism"), SETUPS, ids=[s[0] for s in SETUPS])
def test_each_protocol_and_mechanism_commits_and_aborts(
        name: str, options: dict[str, Any], mechanism: str | None, transaction_version: int) -> None:
    with MockCluster(num_brokers=2, transaction_version=transaction_version, **options) as cluster:
        cluster.create_topic("secured", partitions=1)
        check_commit_and_abort(target_of(cluster), mechanism, "secured", f"tx-{name}")
        produced = cluster.wait_for_request(lambda e: e.api == "Produce")
        assert produced.principal == "User:alice"


# -- failures: typed, named, fast -----------------------------------------------------------------------


@pytest.fixture
def expect_refusal() -> Callable[..., errors.AuthenticationError]:
    """Run init_transactions() with max_block_ms=60 s; return the AuthenticationError it raised in
    under FAST_FAIL_S."""
    def run(txn_id: str, error_class: type[errors.AuthenticationError], **settings: Any
            ) -> errors.AuthenticationError:
        with producer(txn_id, **settings) as p:
            started = time.monotonic()
            with pytest.raises(error_class) as caught:
                p.init_transactions()
            elapsed = time.monotonic() - started
            assert elapsed < FAST_FAIL_S, f"took {elapsed:.1f}s"
            # fatal: the producer says so on the next call too, at once
            with pytest.raises(errors.AuthenticationError):
                p.init_transactions(timeout=1)
        return caught.value
    return run


@pytest.fixture(scope="module")
def sasl_ssl_cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["SCRAM-SHA-512", "PLAIN", "OAUTHBEARER"],
                     users=USERS,
                     oauth_tokens={**TOKENS, "expired-token": OAuthToken("alice", expires_at_ms=1000)}) as c:
        yield c


def test_wrong_password(sasl_ssl_cluster: MockCluster, expect_refusal: Any) -> None:
    settings = producer_settings(target_of(sasl_ssl_cluster), "SCRAM-SHA-512")
    settings["sasl_plain_password"] = "not-the-password"
    err = expect_refusal("tx-wrong-pw", errors.SaslAuthenticationError, **settings)
    text = str(err)
    # the broker's own reason (kafka-python loses it when the answer arrives with the close)
    assert "invalid credentials" in text and "'alice'" in text and "SCRAM-SHA-512" in text
    assert "127.0.0.1" in text and "sasl_plain_password" in text
    assert "not-the-password" not in text and USERS["alice"] not in text
    assert err.error_code == 58


def test_wrong_password_with_plain(sasl_ssl_cluster: MockCluster, expect_refusal: Any) -> None:
    settings = producer_settings(target_of(sasl_ssl_cluster), "PLAIN")
    settings["sasl_plain_password"] = "not-the-password"
    err = expect_refusal("tx-wrong-plain", errors.SaslAuthenticationError, **settings)
    assert "Invalid username or password" in str(err) and "not-the-password" not in str(err)


def test_unknown_user(sasl_ssl_cluster: MockCluster, expect_refusal: Any) -> None:
    settings = producer_settings(target_of(sasl_ssl_cluster), "SCRAM-SHA-512")
    settings.update(sasl_plain_username="mallory", sasl_plain_password="whatever")
    err = expect_refusal("tx-unknown-user", errors.SaslAuthenticationError, **settings)
    assert "'mallory'" in str(err) and "invalid credentials" in str(err)


@pytest.mark.parametrize("token", ["unknown-token", "expired-token"])
def test_a_token_the_broker_refuses(sasl_ssl_cluster: MockCluster, expect_refusal: Any, token: str) -> None:
    settings = producer_settings(target_of(sasl_ssl_cluster), "OAUTHBEARER")
    settings["sasl_oauth_token_provider"] = lambda: token
    err = expect_refusal(f"tx-{token}", errors.SaslAuthenticationError, **settings)
    assert "invalid_token" in str(err) and "sasl_oauth_token_provider" in str(err)
    assert token not in str(err)


def test_a_token_provider_that_fails(sasl_ssl_cluster: MockCluster, expect_refusal: Any) -> None:
    def provider() -> OAuthBearerToken:
        raise RuntimeError("identity provider is down")

    settings = producer_settings(target_of(sasl_ssl_cluster), "OAUTHBEARER")
    settings["sasl_oauth_token_provider"] = provider
    err = expect_refusal("tx-provider-down", errors.SaslAuthenticationError, **settings)
    assert "identity provider is down" in str(err)


def test_a_mechanism_the_listener_does_not_enable(sasl_ssl_cluster: MockCluster, expect_refusal: Any) -> None:
    settings = producer_settings(target_of(sasl_ssl_cluster), "SCRAM-SHA-512")
    settings["sasl_mechanism"] = "SCRAM-SHA-256"
    err = expect_refusal("tx-no-scram-256", errors.SaslAuthenticationError, **settings)
    assert "does not enable the mechanism SCRAM-SHA-256" in str(err)


def test_a_ca_that_did_not_sign_the_broker(sasl_ssl_cluster: MockCluster, expect_refusal: Any,
                                           tmp_path: Any) -> None:
    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    settings = producer_settings(target_of(sasl_ssl_cluster), "SCRAM-SHA-512")
    settings["ssl_cafile"] = str(other_ca)
    err = expect_refusal("tx-wrong-ca", errors.SslAuthenticationError, **settings)
    assert "not trusted" in str(err) and str(other_ca) in str(err)


def test_a_certificate_that_does_not_name_the_host(expect_refusal: Any) -> None:
    with MockCluster(num_brokers=1, tls=True, tls_hostnames=["kafka.example.com"]) as cluster:
        settings = producer_settings(target_of(cluster), None, client_cert=False)
        err = expect_refusal("tx-wrong-host", errors.SslAuthenticationError, **settings)
        assert "does not name the host" in str(err) and "ssl_check_hostname" in str(err)


def test_a_missing_client_certificate(expect_refusal: Any) -> None:
    with MockCluster(num_brokers=1, tls=True, tls_client_auth="required") as cluster:
        settings = producer_settings(target_of(cluster), None, client_cert=False)
        err = expect_refusal("tx-no-client-cert", errors.SslAuthenticationError, **settings)
        assert "ssl_certfile" in str(err)


def test_tls_to_a_listener_without_tls(expect_refusal: Any) -> None:
    with MockCluster(num_brokers=1) as cluster:
        err = expect_refusal("tx-not-tls", errors.SslAuthenticationError,
                             bootstrap_servers=cluster.bootstrap_servers, security_protocol="SSL")
        assert "TLS" in str(err) and cluster.bootstrap_servers.split(",")[0] in str(err)


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_plaintext_to_a_tls_listener(expect_refusal: Any, protocol: str) -> None:
    """The broker answers a plaintext request on its TLS listener with a TLS alert (Kafka 4.1 does, and
    so does the mock): typed at once, instead of retried until max_block_ms."""
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["PLAIN"], users=USERS) as cluster:
        sasl = {"sasl_mechanism": "PLAIN", "sasl_plain_username": "alice",
                "sasl_plain_password": USERS["alice"]} if protocol == "SASL_PLAINTEXT" else {}
        err = expect_refusal(f"tx-plain-to-tls-{protocol}", errors.SslAuthenticationError,
                             bootstrap_servers=cluster.bootstrap_servers, security_protocol=protocol, **sasl)
        wanted = "SASL_SSL" if protocol == "SASL_PLAINTEXT" else "SSL"
        assert "speaks TLS" in str(err) and f"security_protocol={wanted!r}" in str(err)
        assert cluster.bootstrap_servers.split(",")[0] in str(err) and USERS["alice"] not in str(err)


def test_a_refused_connection_does_not_reconnect_in_a_storm() -> None:
    """kafka-python counts a failed SASL exchange on a broker connection as a successful connect and
    resets its backoff, so it reconnects as fast as it polls; the producer keeps the backoff growing.
    Here bootstrap authenticates and every later connection is refused (the token provider's second
    token is one the broker does not know), answered at once (no failed-authentication delay)."""
    tokens = iter(["alice-token-value"])
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["OAUTHBEARER"], oauth_tokens=TOKENS,
                     failed_authentication_delay_ms=0) as cluster:
        settings = producer_settings(target_of(cluster), "OAUTHBEARER")
        settings["sasl_oauth_token_provider"] = lambda: next(tokens, "revoked-token")

        def handshakes() -> int:
            return sum(1 for e in cluster.request_log if e.api == "SaslHandshake")

        with producer("tx-storm", **settings) as p:
            with pytest.raises(errors.SaslAuthenticationError):
                p.init_transactions()
            refused_at = handshakes()
            # the producer stays open (fatal, not yet closed); count its attempts over a fixed
            # window: a measurement, not a synchronisation - nothing waits for anything to happen
            time.sleep(2.0)
            attempts = handshakes() - refused_at
    # reconnect_backoff_ms 50 doubling to 1000 (+-20 %): about 6 attempts in 2 s
    assert attempts <= 12, attempts


def test_a_tls_handshake_that_never_finishes_is_bounded() -> None:
    """A peer that accepts the connection and never answers the ClientHello: kafka-python's handshake
    loop has no deadline; the producer's is ``socket_connection_setup_timeout_ms``, and the call that
    waits says what it waited for."""
    import socket
    import threading

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        accepted: list[socket.socket] = []
        stop = threading.Event()

        def accept() -> None:
            server.settimeout(0.2)
            while not stop.is_set():
                try:
                    accepted.append(server.accept()[0])  # held open, never answered
                except OSError:
                    continue

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            with producer("tx-silent", bootstrap_servers=f"127.0.0.1:{server.getsockname()[1]}",
                          security_protocol="SSL", socket_connection_setup_timeout_ms=500) as p:
                started = time.monotonic()
                with pytest.raises(errors.TimeoutError, match=r"TLS handshake .* not finished") as waited:
                    p.init_transactions(timeout=3)
                assert time.monotonic() - started < 3 + 1
                assert "socket_connection_setup_timeout_ms" in str(waited.value)
        finally:
            stop.set()
            thread.join(2)
            for conn in accepted:
                conn.close()
