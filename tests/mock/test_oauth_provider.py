"""OAUTHBEARER end to end: the client-credentials provider against a local token endpoint, and a producer
that keeps working across token expiry because its tokens are refreshed before the broker's sessions end."""

from __future__ import annotations

import time

import pytest

from tests._support.security import SecuredTarget, producer, producer_settings
from tests._support.token_endpoint import token_endpoint
from txnproducer import errors
from txnproducer.oauth import ClientCredentialsTokenProvider
from txnproducer.testing import MockCluster, OAuthToken


def test_client_credentials_provider() -> None:
    with token_endpoint("kafka-client", "s3cret", ["tok-A"], expires_in=120) as endpoint:
        provider = ClientCredentialsTokenProvider(endpoint.url, "kafka-client", "s3cret", scope="kafka",
                                                  extensions={"logicalCluster": "lkc-1"})
        before = time.time()
        token = provider()
        assert token.value == "tok-A" and token.extensions == {"logicalCluster": "lkc-1"}
        assert token.expires_at is not None and before + 119 <= token.expires_at <= time.time() + 121
        assert "s3cret" not in repr(provider)
        wrong = ClientCredentialsTokenProvider(endpoint.url, "kafka-client", "not-it")
        with pytest.raises(errors.SaslAuthenticationError, match="HTTP 401") as refused:
            wrong()
        assert "not-it" not in str(refused.value)
    with pytest.raises(errors.SaslAuthenticationError, match="could not be reached"):
        ClientCredentialsTokenProvider(endpoint.url, "kafka-client", "s3cret", timeout_s=2)()


def test_tokens_are_refreshed_before_the_brokers_sessions_need_them() -> None:
    """Each token is valid for 3 s at the broker; the broker re-authenticates every connection each
    second (KIP-368). Transactions over 8 s succeed only if each re-authentication presents a token
    fetched in time: the endpoint must have been asked several times, by the background refresh."""
    now_ms = int(time.time() * 1000)
    names = [f"tok-{i}" for i in range(40)]
    with token_endpoint("kafka-client", "s3cret", names, expires_in=3) as endpoint:
        # the broker learns each token's expiry as the endpoint hands it out: 3 s from issue
        tokens = {name: OAuthToken("alice", expires_at_ms=now_ms + 3000 * (i + 1))
                  for i, name in enumerate(names)}
        with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["OAUTHBEARER"], oauth_tokens=tokens,
                         sasl_session_lifetime_ms=1000) as cluster:
            cluster.create_topic("t", partitions=1)
            target = SecuredTarget(cluster.bootstrap_servers, cluster.security_protocol, cluster.ca_file)
            settings = {**producer_settings(target, None),
                        "security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER",
                        "sasl_oauth_token_provider": ClientCredentialsTokenProvider(
                            endpoint.url, "kafka-client", "s3cret")}
            with producer("tx-refresh", **settings) as p:
                p.init_transactions()
                deadline = time.monotonic() + 8
                committed = 0
                while time.monotonic() < deadline:
                    with p.transaction():
                        p.send("t", b"v", partition=0)
                    committed += 1
            reauthentications = sum(1 for e in cluster.request_log if e.api == "SaslAuthenticate")
    assert committed > 10
    assert endpoint.requests >= 3, endpoint.requests
    assert reauthentications >= 5, reauthentications
