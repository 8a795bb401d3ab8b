"""The secured-cluster scenarios, written once for MockCluster (tests/mock) and a real Kafka (tests/broker).

A :class:`SecuredTarget` says how to reach one listener of a cluster and how to authenticate there;
``producer_settings`` / ``reader_settings`` turn it into our producer's and kafka-python's settings for
one mechanism, and the ``check_*`` functions are the scenarios themselves: a transaction committed and
one aborted, read back by a read_committed consumer authenticated the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests._support.readers import assert_no_open_transaction, read_values
from txnproducer import TransactionalProducer
from txnproducer.oauth import OAuthBearerToken

__all__ = ["FAST_FAIL_S", "SecuredTarget", "check_commit_and_abort", "producer", "producer_settings",
           "reader_settings"]

#: the issue's bound: a refused connection is reported within this, whatever max_block_ms says
FAST_FAIL_S = 5.0

SASL_USER_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass
class SecuredTarget:
    """One listener of a secured cluster, and the credentials it accepts."""

    bootstrap: str
    security_protocol: str
    ca_file: str | None = None
    users: dict[str, str] = field(default_factory=dict)
    #: principal name -> a token the listener accepts for it (OAUTHBEARER)
    oauth_token: Callable[[str], OAuthBearerToken] | None = None
    #: principal name -> (certfile, keyfile) of a client certificate the listener trusts
    client_certificate: Callable[[str], tuple[str, str]] | None = None


def _tls(target: SecuredTarget, user: str, client_cert: bool) -> dict[str, Any]:
    if target.security_protocol not in ("SSL", "SASL_SSL"):
        return {}
    settings: dict[str, Any] = {"ssl_cafile": target.ca_file}
    if client_cert and target.client_certificate is not None:
        settings["ssl_certfile"], settings["ssl_keyfile"] = target.client_certificate(user)
    return settings


def _sasl(target: SecuredTarget, mechanism: str | None, user: str, provider: Callable[[Any], Any]
          ) -> dict[str, Any]:
    """The SASL settings for ``user``: a password, or ``provider(token_for_user)`` for OAUTHBEARER."""
    if mechanism is None:
        return {}
    settings: dict[str, Any] = {"sasl_mechanism": mechanism}
    if mechanism in SASL_USER_MECHANISMS:
        settings.update(sasl_plain_username=user, sasl_plain_password=target.users[user])
    elif mechanism == "OAUTHBEARER":
        assert target.oauth_token is not None
        token_for = target.oauth_token
        settings["sasl_oauth_token_provider"] = provider(lambda: token_for(user))
    return settings


def producer_settings(target: SecuredTarget, mechanism: str | None, user: str = "alice",
                      client_cert: bool = True) -> dict[str, Any]:
    """TransactionalProducer settings authenticating as ``user`` with ``mechanism`` (None: TLS only)."""
    return {"bootstrap_servers": target.bootstrap, "security_protocol": target.security_protocol,
            **_tls(target, user, client_cert), **_sasl(target, mechanism, user, lambda fetch: fetch)}


def reader_settings(target: SecuredTarget, mechanism: str | None, user: str = "alice") -> dict[str, Any]:
    """kafka-python consumer settings for the same listener and user (a reader that authenticates)."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    def kafka_python_provider(fetch: Callable[[], OAuthBearerToken]) -> AbstractTokenProvider:
        class _Provider(AbstractTokenProvider):  # type: ignore[misc]
            def token(self) -> str:
                return fetch().value

        return _Provider()

    return {"security_protocol": target.security_protocol, **_tls(target, user, True),
            **_sasl(target, mechanism, user, kafka_python_provider)}


@contextmanager
def producer(txn_id: str, **settings: Any) -> Iterator[TransactionalProducer]:
    """A producer with short bounds (unless given), closed at the end whatever happens."""
    defaults: dict[str, Any] = {"request_timeout_ms": 5_000, "delivery_timeout_ms": 20_000,
                                "max_block_ms": 60_000}
    p = TransactionalProducer(transactional_id=txn_id, **{**defaults, **settings})
    try:
        yield p
    finally:
        p.close(5)


def check_commit_and_abort(target: SecuredTarget, mechanism: str | None, topic: str, txn_id: str,
                           user: str = "alice") -> None:
    """A committed transaction is visible once and an aborted one never, to a read_committed reader
    authenticated the same way; nothing is left open."""
    committed = [f"{mechanism}-{i}".encode() for i in range(3)]
    with producer(txn_id, **producer_settings(target, mechanism, user)) as p:
        started = time.monotonic()
        p.init_transactions()
        assert time.monotonic() - started < 30
        with p.transaction():
            for value in committed:
                p.send(topic, value, partition=0)
        p.begin_transaction()
        for i in range(2):
            p.send(topic, f"aborted-{i}".encode(), partition=0)
        p.flush()
        p.abort_transaction()
    reader = reader_settings(target, mechanism, user)
    assert read_values(target.bootstrap, topic, 1, wait_s=30, **reader) == committed
    assert_no_open_transaction(target.bootstrap, topic, 1, **reader)
