"""The SASL tokens of the Sender's own connections (``network/sasl_mechanisms.py``), which of the
producer's settings they speak (``network/channel_security.py``) and when they re-authenticate
(``network/sasl_authenticator.py``).

What a user relies on: the tokens Kafka's brokers accept (the Java client's: PLAIN without an
authorization id, OAUTHBEARER's RFC 7628 message with the token's extensions, and the ``%x01`` that makes a
broker say why it refused a token), no credential in any repr, GSSAPI left to kafka-python's connections,
and a re-authentication at 85-95 % of the session the broker granted.
"""

from __future__ import annotations

import random
import re
import types
from typing import Any

from txnproducer._internal.network.channel_security import channel_security
from txnproducer._internal.network.sasl_authenticator import reauthentication_time
from txnproducer._internal.network.sasl_mechanisms import mechanism_factory

# RFC 7628 client initial response, as Kafka's OAuthBearerClientInitialResponse parses it
_KAFKA_OAUTH = re.compile(r"n,,\x01(?P<kv>(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+\x01)*)\x01")


def test_plain_sends_no_authorization_id() -> None:
    plain = mechanism_factory("PLAIN", username="alice", password="pw-1")()
    assert plain.initial_token() == b"\x00alice\x00pw-1"
    assert plain.respond(b"") is None
    assert "pw-1" not in repr(plain)


class _Tokens:
    def __init__(self, value: str, extensions: dict[str, str]) -> None:
        self.value, self._extensions, self.calls = value, extensions, 0

    def token(self) -> str:
        self.calls += 1
        return self.value

    def extensions(self) -> dict[str, str]:
        return self._extensions


def test_oauthbearer_sends_the_token_and_its_extensions_as_kafka_parses_them() -> None:
    tokens = _Tokens("eyJ.abc.def", {"logicalCluster": "lkc-1", "identityPoolId": "pool-2"})
    oauth = mechanism_factory("OAUTHBEARER", tokens=tokens)()
    message = oauth.initial_token().decode()
    match = _KAFKA_OAUTH.fullmatch(message)
    assert match is not None, message
    pairs = dict(p.split("=", 1) for p in match.group("kv").split("\x01") if p)
    assert pairs == {"auth": "Bearer eyJ.abc.def", "logicalCluster": "lkc-1", "identityPoolId": "pool-2"}
    assert oauth.respond(b"") is None  # accepted
    assert "eyJ" not in repr(oauth)


def test_oauthbearer_answers_an_error_challenge_so_the_broker_says_why() -> None:
    oauth = mechanism_factory("OAUTHBEARER", tokens=_Tokens("t", {}))()
    oauth.initial_token()
    assert oauth.respond(b'{"status":"invalid_token"}') == b"\x01"


def test_each_authentication_gets_a_fresh_token() -> None:
    tokens = _Tokens("t", {})
    factory = mechanism_factory("OAUTHBEARER", tokens=tokens)
    factory().initial_token()
    factory().initial_token()
    assert tokens.calls == 2


def _settings(**overrides: Any) -> Any:
    base = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "u",
            "sasl_plain_password": "pw-secret"}
    return types.SimpleNamespace(**{**base, **overrides})


def test_gssapi_stays_on_kafka_pythons_connections() -> None:
    context = object()
    assert channel_security(_settings(sasl_mechanism="GSSAPI"), context) is None  # type: ignore[arg-type]
    assert channel_security(_settings(), context) is not None  # type: ignore[arg-type]


def test_the_security_of_each_protocol() -> None:
    context: Any = object()
    plain = channel_security(_settings(security_protocol="PLAINTEXT"), None)
    assert plain is not None and plain.ssl_context is None and plain.sasl_mechanism is None
    tls = channel_security(_settings(security_protocol="SSL"), context)
    assert tls is not None and tls.ssl_context is context and tls.sasl_mechanism is None
    sasl = channel_security(_settings(security_protocol="SASL_PLAINTEXT"), None)
    assert sasl is not None and sasl.ssl_context is None and sasl.sasl_mechanism == "SCRAM-SHA-512"
    assert "pw-secret" not in repr(sasl) and "SCRAM-SHA-512" in repr(sasl)


def test_reauthentication_at_85_to_95_percent_of_the_session() -> None:
    random.seed(7)
    times = [reauthentication_time(100.0, 10_000) for _ in range(2_000)]
    assert all(t is not None and 108.5 <= t <= 109.5 for t in times)
    spread = [t for t in times if t is not None]
    assert max(spread) - min(spread) > 0.8  # jittered, not all at once
    assert reauthentication_time(100.0, 0) is None  # the broker set no lifetime: never
