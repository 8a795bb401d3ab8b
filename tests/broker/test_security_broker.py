"""The secured-cluster scenarios against a real Apache Kafka: TLS, SASL and ACLs (StandardAuthorizer).

The same scenarios as tests/mock (``tests/_support/security.py`` and ``authorization.py``), on a broker
this module starts from ``KAFKA_HOME`` with every secured listener (``tests/_support/kafka_secure.py``):
each protocol and mechanism commits and aborts; each day-one mistake is its typed error naming the cause
within 5 s although ``max_block_ms`` is 60 s; each ACL refusal is typed, prompt and recoverable; and
with DEBUG on for every logger no secret shows anywhere.

Needs ``KAFKA_HOME`` (an existing cluster from ``KAFKA_BOOTSTRAP_SERVERS`` has no listeners we know).
``KAFKA_TRANSACTION_VERSION=1`` runs it against Transaction Version 1.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support.authorization import BASE_ACLS, SCENARIOS, AuthzTopics, KafkaAcls
from tests._support.readers import read_values
from tests._support.secrets_scan import DebugCapture, describe_chain, everything_about
from tests._support.security import (
    FAST_FAIL_S,
    SecuredTarget,
    check_commit_and_abort,
    producer,
    producer_settings,
    reader_settings,
)
from txnproducer import errors
from txnproducer.oauth import OAuthBearerToken

trustme = pytest.importorskip("trustme")

USERS = {"alice": "alice-Secr3t-pw", "bob": "bob-Secr3t-pw"}


@pytest.fixture(scope="module")
def secured() -> Iterator[Any]:
    from tests._support.kafka_secure import SecuredKafkaHomeBroker

    kafka_home = os.environ.get("KAFKA_HOME")
    if not kafka_home:
        pytest.skip("the secured tier starts its own broker: set KAFKA_HOME")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("KAFKA_HOME is set but no java on PATH (or JAVA_HOME)")
    workdir = Path(tempfile.mkdtemp(prefix="txnproducer-kafka-secured-"))
    broker = SecuredKafkaHomeBroker(Path(kafka_home), workdir, USERS)
    try:
        broker.start()
        acls = KafkaAcls(broker.bootstrap)
        try:
            for acl in BASE_ACLS:
                acls.add_acl(*acl)
            broker.acls = acls
            yield broker
        finally:
            acls.close()
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def create_topics(broker: Any, *names: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="tests-topic-admin")
    try:
        admin.create_topics([NewTopic(name, 1, 1) for name in names])
    finally:
        admin.close()


def target(broker: Any, listener: str) -> SecuredTarget:
    return SecuredTarget(bootstrap=broker.bootstrap_of(listener),
                         security_protocol=broker.security_protocol_of(listener), ca_file=broker.ca_file,
                         users=USERS, oauth_token=lambda user: _jwt(user),
                         client_certificate=broker.client_certificate)


def _jwt(user: str) -> OAuthBearerToken:
    from tests._support.kafka_secure import unsecured_jwt

    return unsecured_jwt(user)


# (listener, mechanism): every way in that a user meets
SETUPS = [("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"),
          ("SASL_SSL", "OAUTHBEARER"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"), ("MTLS", None)]


@pytest.mark.parametrize(("listener", "mechanism"), SETUPS,
                         ids=[f"{lst}-{m or 'mutual'}" for lst, m in SETUPS])
def test_each_protocol_and_mechanism_commits_and_aborts(secured: Any, listener: str,
                                                       mechanism: str | None) -> None:
    topic = f"allowed-{listener}-{mechanism or 'mtls'}".lower()
    create_topics(secured, topic)
    check_commit_and_abort(target(secured, listener), mechanism, topic, f"tx-{topic}")


def test_transactions_keep_committing_across_reauthentications(secured: Any,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """KIP-368 against Kafka itself: the SASL_PLAINTEXT listener ends sessions after REAUTH_MS; the
    Sender's connection re-authenticates twice while transactions run, and never reconnects (Kafka
    closes a connection whose session ended at its next request)."""
    from tests._support.kafka_secure import REAUTH_MS

    topic = "allowed-reauth"
    create_topics(secured, topic)
    caplog.set_level(logging.DEBUG, logger="txnproducer.network")
    committed: list[bytes] = []
    with producer("tx-reauth", **producer_settings(target(secured, "SASL_PLAINTEXT"), "SCRAM-SHA-512")) as p:
        p.init_transactions()
        connections = set()
        deadline = time.monotonic() + 6 * REAUTH_MS / 1000
        while sum("txn.sasl_reauthenticated" in r.getMessage() for r in caplog.records) < 2:
            assert time.monotonic() < deadline, "two re-authentications"
            value = f"v{len(committed)}".encode()
            with p.transaction():
                p.send(topic, value, partition=0)
            committed.append(value)
            connections.update(id(c) for c in p._net._direct._conns.values())
        lost = [r.getMessage() for r in caplog.records if "txn.connection_lost" in r.getMessage()]
    assert len(connections) == 1 and not lost, ("the Sender's connection was replaced", lost)
    reader = reader_settings(target(secured, "SASL_PLAINTEXT"), "SCRAM-SHA-512")
    assert read_values(secured.bootstrap_of("SASL_PLAINTEXT"), topic, 1, wait_s=30, **reader) == committed


# -- day-one mistakes: typed, named, fast ---------------------------------------------------------------


def refused(txn_id: str, error_class: type[errors.AuthenticationError], **settings: Any
            ) -> errors.AuthenticationError:
    """init_transactions() with max_block_ms=60 s raises ``error_class`` in under FAST_FAIL_S."""
    with producer(txn_id, **{**settings, "max_block_ms": 60_000}) as p:
        started = time.monotonic()
        with pytest.raises(error_class) as caught:
            p.init_transactions()
        elapsed = time.monotonic() - started
        assert elapsed < FAST_FAIL_S, f"took {elapsed:.1f}s"
        with pytest.raises(errors.AuthenticationError):
            p.init_transactions(timeout=1)
    return caught.value


def test_wrong_password(secured: Any) -> None:
    settings = {**producer_settings(target(secured, "SASL_SSL"), "SCRAM-SHA-512"),
                "sasl_plain_password": "not-the-password"}
    err = refused("tx-wrong-pw", errors.SaslAuthenticationError, **settings)
    text = str(err)
    assert "invalid credentials" in text and "'alice'" in text and "SCRAM-SHA-512" in text
    assert secured.bootstrap_of("SASL_SSL") in text and "sasl_plain_password" in text
    assert "not-the-password" not in text and USERS["alice"] not in text


def test_wrong_password_with_plain(secured: Any) -> None:
    settings = {**producer_settings(target(secured, "SASL_SSL"), "PLAIN"), "sasl_plain_password": "nope-pw"}
    err = refused("tx-wrong-plain", errors.SaslAuthenticationError, **settings)
    assert "Invalid username or password" in str(err) and "nope-pw" not in str(err)


def test_unknown_user(secured: Any) -> None:
    settings = {**producer_settings(target(secured, "SASL_SSL"), "SCRAM-SHA-512"),
                "sasl_plain_username": "mallory", "sasl_plain_password": "whatever"}
    err = refused("tx-unknown-user", errors.SaslAuthenticationError, **settings)
    assert "'mallory'" in str(err) and "invalid credentials" in str(err)


def test_an_expired_token(secured: Any) -> None:
    from tests._support.kafka_secure import unsecured_jwt

    expired = unsecured_jwt("alice", lifetime_s=-60)
    settings = {**producer_settings(target(secured, "SASL_SSL"), "OAUTHBEARER"),
                "sasl_oauth_token_provider": lambda: expired.value}
    err = refused("tx-expired-token", errors.SaslAuthenticationError, **settings)
    assert "sasl_oauth_token_provider" in str(err) and expired.value not in str(err)


def test_a_ca_that_did_not_sign_the_broker(secured: Any, tmp_path: Path) -> None:
    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    settings = {**producer_settings(target(secured, "SASL_SSL"), "SCRAM-SHA-512"),
                "ssl_cafile": str(other_ca)}
    err = refused("tx-wrong-ca", errors.SslAuthenticationError, **settings)
    assert "not trusted" in str(err) and str(other_ca) in str(err)


def test_a_certificate_that_does_not_name_the_host(secured: Any) -> None:
    settings = producer_settings(target(secured, "WRONGHOST"), None, client_cert=False)
    err = refused("tx-wrong-host", errors.SslAuthenticationError, **settings)
    assert "does not name the host" in str(err) and "ssl_check_hostname" in str(err)


def test_a_missing_client_certificate(secured: Any) -> None:
    settings = producer_settings(target(secured, "MTLS"), None, client_cert=False)
    err = refused("tx-no-client-cert", errors.SslAuthenticationError, **settings)
    assert "ssl_certfile" in str(err)


# -- ACLs -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_acl_refusal_is_typed_prompt_and_recoverable(secured: Any, scenario: Callable[..., None]) -> None:
    topics = AuthzTopics.named(scenario.__name__.replace("_", "-") + "-" + uuid.uuid4().hex[:6])
    create_topics(secured, topics.allowed, topics.readonly, topics.forbidden)
    sasl = target(secured, "SASL_SSL")

    def committed(topic: str) -> list[bytes]:
        return read_values(sasl.bootstrap, topic, 1, wait_s=30, **reader_settings(sasl, "SCRAM-SHA-512"))

    scenario(producer_settings(sasl, "SCRAM-SHA-512"), secured.acls, topics, committed)


# -- secrets ----------------------------------------------------------------------------------------------


def test_no_secret_in_any_log_repr_metric_or_error(secured: Any, debug_everywhere: DebugCapture,
                                                   capfd: Any) -> None:
    """Every mechanism's success and the refusals above, DEBUG on for every logger: no password or token
    in anything logged, printed, raised, repr'd or reported as a metric."""
    token = _jwt("alice")
    wrong_password = "Wr0ng-pa55word-xyz"
    secrets = {*USERS.values(), token.value, wrong_password}
    seen: list[str] = []
    create_topics(secured, "allowed-secrets")
    for listener, mechanism in SETUPS:
        settings = producer_settings(target(secured, listener), mechanism)
        if mechanism == "OAUTHBEARER":
            settings["sasl_oauth_token_provider"] = lambda: token
        with producer(f"tx-secrets-{listener}-{mechanism}", **settings) as p:
            p.init_transactions()
            with p.transaction():
                p.send("allowed-secrets", b"v", partition=0)
            everything_about(p, seen)
    for mechanism in ("PLAIN", "SCRAM-SHA-512"):
        wrong = {**producer_settings(target(secured, "SASL_SSL"), mechanism),
                 "sasl_plain_password": wrong_password}
        with producer(f"tx-secrets-wrong-{mechanism}", **wrong) as p:
            with pytest.raises(errors.SaslAuthenticationError) as caught:
                p.init_transactions()
            describe_chain(caught.value, seen)
            everything_about(p, seen)
    captured = capfd.readouterr()
    everything = "\n".join([*debug_everywhere.lines, captured.out, captured.err, *seen])
    # the scan saw the DEBUG lines it is meant to scan (our connections' authentications among them)
    assert "txn.connection_ready" in everything and "DEBUG" in everything
    leaks = [secret[:4] + "..." for secret in secrets if secret in everything]
    assert not leaks, f"secrets found in the output: {leaks}"
