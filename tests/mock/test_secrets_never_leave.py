"""No password, token, client secret or key password leaves the producer: DEBUG on for every logger,
every secured scenario run (successes and refusals), and all that was logged, printed, raised,
repr'd and reported as a metric is scanned for each secret.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests._support.secrets_scan import DebugCapture, describe_chain, everything_about
from tests._support.security import SecuredTarget, producer, producer_settings
from tests._support.token_endpoint import token_endpoint
from txnproducer import ProducerConfig, errors
from txnproducer.oauth import ClientCredentialsTokenProvider, OAuthBearerToken
from txnproducer.testing import MockCluster, OAuthToken

pytest.importorskip("trustme")

SECRETS = {
    "plain": "Pl41n-pa55word-xyz",
    "scram": "Scr4m-pa55word-xyz",
    "wrong": "Wr0ng-pa55word-xyz",
    "token": "eyJ-bearer-token-value-xyz",
    "client_secret": "0auth-client-secret-xyz",
    "key_password": "K3y-pa55word-xyz",
    "bytes_password": "Byt3s-pa55word-xyz",
}


def _encrypted_key(keyfile: str, password: str, out: Path) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(Path(keyfile).read_bytes(), password=None)
    out.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.BestAvailableEncryption(password.encode())))
    return str(out)


def test_no_secret_in_any_log_repr_metric_or_error(debug_everywhere: DebugCapture, capfd: Any,
                                                   tmp_path: Path) -> None:
    seen: list[str] = []
    users = {"alice": SECRETS["plain"], "bob": SECRETS["scram"]}
    tokens = {SECRETS["token"]: OAuthToken("alice")}
    with MockCluster(num_brokers=1, tls=True, tls_client_auth="requested",
                     sasl_mechanisms=["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"], users=users,
                     oauth_tokens=tokens) as cluster, \
            token_endpoint("kafka-client", SECRETS["client_secret"], [SECRETS["token"]]) as endpoint:
        cluster.create_topic("t", partitions=1)
        target = SecuredTarget(cluster.bootstrap_servers, cluster.security_protocol, cluster.ca_file, users,
                               oauth_token=lambda _user: OAuthBearerToken(SECRETS["token"]))
        certfile, keyfile = cluster.client_certificate("alice")
        encrypted = _encrypted_key(keyfile, SECRETS["key_password"], tmp_path / "key.pem")
        provider = ClientCredentialsTokenProvider(endpoint.url, "kafka-client", SECRETS["client_secret"])
        seen.append(repr(provider))
        runs: list[tuple[str, dict[str, Any]]] = [
            ("plain", producer_settings(target, "PLAIN", "alice")),
            ("scram", producer_settings(target, "SCRAM-SHA-512", "bob")),
            ("oauth", {**producer_settings(target, "OAUTHBEARER"), "sasl_oauth_token_provider": provider}),
            ("mtls-encrypted-key", {**producer_settings(target, "PLAIN", "alice"), "ssl_certfile": certfile,
                                    "ssl_keyfile": encrypted, "ssl_password": SECRETS["key_password"]}),
        ]
        for name, settings in runs:
            with producer(f"tx-{name}", **settings) as p:
                p.init_transactions()
                with p.transaction():
                    p.send("t", b"v", partition=0)
                everything_about(p, seen)
        # refusals: the wrong password is a secret too
        wrong = {**producer_settings(target, "PLAIN", "alice"), "sasl_plain_password": SECRETS["wrong"]}
        with producer("tx-wrong", **wrong) as p:
            with pytest.raises(errors.SaslAuthenticationError) as refused:
                p.init_transactions()
            describe_chain(refused.value, seen)
            everything_about(p, seen)
        bad_key = {**runs[3][1], "ssl_password": SECRETS["wrong"]}
        with pytest.raises(errors.ConfigError) as bad:
            producer("tx-bad-key", **bad_key).__enter__()
        describe_chain(bad.value, seen)
        with pytest.raises(errors.ConfigError) as not_text:
            ProducerConfig(transactional_id="x", sasl_plain_password=SECRETS["bytes_password"].encode())
        describe_chain(not_text.value, seen)
        with pytest.raises(errors.ConfigError) as jaas:
            ProducerConfig.from_mapping({"transactional.id": "x", "sasl.jaas.config":
                                         f'PlainLoginModule required password="{SECRETS["plain"]}";'})
        describe_chain(jaas.value, seen)
    captured = capfd.readouterr()
    everything = "\n".join([*debug_everywhere.lines, captured.out, captured.err, *seen])
    # the scan found the DEBUG output it was meant to scan (our connections' authentication lines included)
    assert "txn.connection_ready" in everything and "DEBUG" in everything
    leaks = {name: secret for name, secret in SECRETS.items() if secret in everything}
    assert not leaks, f"secrets found in the output: {sorted(leaks)}"


def _authenticate_with_kafka_python(settings: dict[str, Any]) -> None:
    """One SASL connection through kafka-python's own client (an application's, beside ours: the filter
    covers it, docs/guide/security.md)."""
    from kafka.net.compat import KafkaNetClient

    client = KafkaNetClient(**settings)
    try:
        client._manager.bootstrap(timeout_ms=5000)
    finally:
        client.close()


def test_the_filter_is_what_keeps_kafka_pythons_debug_lines_clean(debug_everywhere: DebugCapture) -> None:
    """Regression guard for the filter itself: without it kafka-python logs the PLAIN password."""
    from txnproducer._internal.network.redaction import LOGGERS, SecretFilter

    with MockCluster(num_brokers=1, sasl_mechanisms=["PLAIN"], users={"alice": SECRETS["plain"]}) as cluster:
        target = SecuredTarget(cluster.bootstrap_servers, cluster.security_protocol, None,
                               {"alice": SECRETS["plain"]})
        removed = []
        for name in LOGGERS:
            lg = logging.getLogger(name)
            removed += [(lg, f) for f in lg.filters if isinstance(f, SecretFilter)]
        try:
            for lg, f in removed:
                lg.removeFilter(f)
            _authenticate_with_kafka_python(producer_settings(target, "PLAIN"))
            unfiltered = "\n".join(debug_everywhere.lines)
            debug_everywhere.lines.clear()
            for lg, f in removed:
                lg.addFilter(f)
            _authenticate_with_kafka_python(producer_settings(target, "PLAIN"))
            filtered = "\n".join(debug_everywhere.lines)
        finally:
            for lg, f in removed:
                if f not in lg.filters:
                    lg.addFilter(f)
    assert SECRETS["plain"] in unfiltered
    assert SECRETS["plain"] not in filtered and "SaslAuthenticateRequest: redacted" in filtered



def test_no_secret_and_no_record_value_in_any_span_or_metric(telemetry: Any) -> None:
    """Traced and measured (spans per batch and per record), over SASL with a password, successes and a
    refusal: every span (attributes, events, links) and every metric point, as their exporters serialize
    them, holds neither a secret nor a record's value - nor a key given as bytes."""
    pytest.importorskip("opentelemetry.sdk")
    value = b"r3cord-value-xyz"
    users = {"alice": SECRETS["plain"]}
    collected: list[str] = []
    with MockCluster(num_brokers=1, sasl_mechanisms=["PLAIN"], users=users) as cluster:
        cluster.create_topic("t", partitions=1)
        target = SecuredTarget(cluster.bootstrap_servers, cluster.security_protocol, None, users)
        for record_spans in (False, True):
            with producer(f"tx-traced-{record_spans}", **producer_settings(target, "PLAIN"),
                          record_spans=record_spans, **telemetry.providers) as p:
                p.init_transactions()
                with p.transaction():
                    p.send("t", value, key=b"k-" + value, headers=[("h", value)])
                    p.send_offsets_to_transaction({("in", 0): 1}, "group")
                p.begin_transaction()
                p.send("t", value, partition=0)
                p.abort_transaction()
                collected.append(telemetry.reader.get_metrics_data().to_json())
        wrong = {**producer_settings(target, "PLAIN"), "sasl_plain_password": SECRETS["wrong"]}
        with producer("tx-traced-wrong", **wrong, **telemetry.providers) as p:
            with pytest.raises(errors.SaslAuthenticationError):
                p.init_transactions()
            collected.append(telemetry.reader.get_metrics_data().to_json())  # its metrics' attributes
    collected.extend(span.to_json() for span in telemetry.spans())
    collected.append(telemetry.reader.get_metrics_data().to_json())
    everything = "\n".join(collected)
    # the scan read what it was meant to: both kinds of send span, the commit, the refused producer's metrics
    for expected in ('"messaging.batch.message_count"', '"messaging.kafka.offset"', '"EndTxn"',
                     '"kafka.producer.records_sent"', '"tx-traced-wrong"', '"txnproducer.transactions"'):
        assert expected in everything, expected
    leaks = {name: secret for name, secret in SECRETS.items() if secret in everything}
    assert not leaks, f"secrets found in spans or metrics: {sorted(leaks)}"
    assert value.decode() not in everything and value.hex() not in everything


def test_no_secret_leaves_the_senders_own_connections(debug_everywhere: DebugCapture, capfd: Any) -> None:
    """The fast path (the Sender's own TLS and SASL connections) with DEBUG on: each mechanism commits,
    re-authenticates (KIP-368) and is refused once; its connections, their TLS and SASL state and the
    refusal are repr'd and scanned with everything logged."""
    seen: list[str] = []
    users = {"alice": SECRETS["plain"], "bob": SECRETS["scram"]}
    tokens = {SECRETS["token"]: OAuthToken("alice")}
    with MockCluster(num_brokers=1, tls=True, sasl_mechanisms=["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"],
                     users=users, oauth_tokens=tokens, sasl_session_lifetime_ms=1_000) as cluster:
        cluster.create_topic("t", partitions=1)
        target = SecuredTarget(cluster.bootstrap_servers, cluster.security_protocol, cluster.ca_file, users,
                               oauth_token=lambda _user: OAuthBearerToken(SECRETS["token"]))
        for user, mechanism in (("alice", "PLAIN"), ("bob", "SCRAM-SHA-512"), ("alice", "OAUTHBEARER")):
            with producer(f"tx-fast-{mechanism}", **producer_settings(target, mechanism, user)) as p:
                p.init_transactions()
                since = cluster.requests.next_seq()
                with p.transaction():
                    p.send("t", b"v", partition=0)
                [conn] = p._net._direct._conns.values()
                _wait_for_reauthentication(cluster, since)
                with p.transaction():  # held until the re-authentication is done, if it is not yet
                    p.send("t", b"w", partition=0)
                seen.extend([repr(conn), repr(conn._security), repr(conn._tls), repr(conn.__dict__)])
                everything_about(p, seen)
        wrong = {**producer_settings(target, "SCRAM-SHA-512", "bob"), "sasl_plain_password": SECRETS["wrong"]}
        with producer("tx-fast-wrong", **wrong) as p:
            with pytest.raises(errors.SaslAuthenticationError) as refused:
                p.init_transactions()
            describe_chain(refused.value, seen)
            everything_about(p, seen)
    captured = capfd.readouterr()
    everything = "\n".join([*debug_everywhere.lines, captured.out, captured.err, *seen])
    assert "txn.sasl_reauthenticated" in everything  # the scan read the fast path's own DEBUG lines
    leaks = {name: secret for name, secret in SECRETS.items() if secret in everything}
    assert not leaks, f"secrets found in the output: {sorted(leaks)}"


def _wait_for_reauthentication(cluster: MockCluster, since: int) -> None:
    """Until the connection that carried the last Produce re-authenticates (a SaslHandshake once
    authenticated)."""
    sender = cluster.wait_for_request(lambda e: e.api == "Produce", since=since).connection_id
    cluster.wait_for_request(lambda e: (e.connection_id == sender and e.api == "SaslHandshake"
                                        and e.principal != "User:ANONYMOUS"), timeout=10, since=since)
