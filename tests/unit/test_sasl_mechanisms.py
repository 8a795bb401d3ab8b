"""The SASL tokens of our connections (``network/sasl_mechanisms.py``, ``network/sasl_gssapi.py``), which of
the producer's settings they speak (``network/channel_security.py``) and when they re-authenticate
(``network/sasl_authenticator.py``).

What a user relies on: the tokens Kafka's brokers accept (the Java client's: PLAIN without an
authorization id, OAUTHBEARER's RFC 7628 message with the token's extensions, and the ``%x01`` that makes a
broker say why it refused a token), GSSAPI's RFC 4752 exchange with the broker's service principal, no
credential in any repr, and a re-authentication at 85-95 % of the session the broker granted.
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
    plain = mechanism_factory("PLAIN", username="alice", password="pw-1")("broker-1")
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
    oauth = mechanism_factory("OAUTHBEARER", tokens=tokens)("broker-1")
    message = oauth.initial_token().decode()
    match = _KAFKA_OAUTH.fullmatch(message)
    assert match is not None, message
    pairs = dict(p.split("=", 1) for p in match.group("kv").split("\x01") if p)
    assert pairs == {"auth": "Bearer eyJ.abc.def", "logicalCluster": "lkc-1", "identityPoolId": "pool-2"}
    assert oauth.respond(b"") is None  # accepted
    assert "eyJ" not in repr(oauth)


def test_oauthbearer_answers_an_error_challenge_so_the_broker_says_why() -> None:
    oauth = mechanism_factory("OAUTHBEARER", tokens=_Tokens("t", {}))("broker-1")
    oauth.initial_token()
    assert oauth.respond(b'{"status":"invalid_token"}') == b"\x01"


def test_each_authentication_gets_a_fresh_token() -> None:
    tokens = _Tokens("t", {})
    factory = mechanism_factory("OAUTHBEARER", tokens=tokens)
    factory("broker-1").initial_token()
    factory("broker-1").initial_token()
    assert tokens.calls == 2


def _settings(**overrides: Any) -> Any:
    base = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "u",
            "sasl_plain_password": "pw-secret", "sasl_kerberos_service_name": "kafka"}
    return types.SimpleNamespace(**{**base, **overrides})


def test_gssapi_is_spoken_on_our_connections() -> None:
    context: Any = object()
    security = channel_security(_settings(sasl_mechanism="GSSAPI"), context)
    assert security.sasl_mechanism == "GSSAPI" and security.new_sasl_client is not None
    assert repr(security.new_sasl_client("b1.example")) == "GSSAPI(kafka@b1.example)"
    domain = channel_security(_settings(sasl_mechanism="GSSAPI", sasl_kerberos_service_name="kafka",
                                        sasl_kerberos_domain_name="kafka.example"), context)
    assert domain.new_sasl_client is not None
    assert repr(domain.new_sasl_client("10.0.0.7")) == "GSSAPI(kafka@kafka.example)"


class _FakeContext:
    """Stands in for ``gssapi.SecurityContext``: two context tokens, then the wrap/unwrap of RFC 4752's
    security-layer messages (a real KDC is not on CI's machines; tests/broker covers GSSAPI with one)."""

    def __init__(self, name: Any, usage: str) -> None:
        self.target, self.usage, self.complete, self.steps = name, usage, False, []
        self.initiator_name = "alice@EXAMPLE.COM"

    def step(self, token: bytes | None = None) -> bytes | None:
        self.steps.append(token)
        if token is None:
            return b"ap-req"
        self.complete = True
        return None  # the broker's AP-REP completes the context; nothing more to send

    def unwrap(self, message: bytes) -> Any:
        assert message.startswith(b"wrapped:")
        return types.SimpleNamespace(message=message[len(b"wrapped:"):])

    def wrap(self, message: bytes, encrypt: bool) -> Any:
        assert encrypt is False
        return types.SimpleNamespace(message=b"wrapped:" + message)


def test_gssapi_runs_rfc_4752_with_the_brokers_service_principal(monkeypatch: Any) -> None:
    made: list[_FakeContext] = []

    def context(name: Any, usage: str) -> _FakeContext:
        made.append(_FakeContext(name, usage))
        return made[-1]

    fake = types.SimpleNamespace(
        Name=lambda text, name_type: ("name", text, name_type),
        NameType=types.SimpleNamespace(hostbased_service="hostbased"),
        SecurityContext=context)
    monkeypatch.setitem(__import__("sys").modules, "gssapi", fake)
    client = mechanism_factory("GSSAPI", kerberos_service="kafka")("b1.example")
    assert client.initial_token() == b"ap-req"
    assert made[0].target == ("name", "kafka@b1.example", "hostbased") and made[0].usage == "initiate"
    assert client.respond(b"ap-rep") == b""  # the context is complete: an empty answer
    # the broker offers its security layers (1: none) and its largest buffer (0x010000)
    reply = client.respond(b"wrapped:\x01\x01\x00\x00")
    assert reply == b"wrapped:\x01\x01\x00\x00alice@EXAMPLE.COM"  # no layer, same size, our principal
    assert client.respond(b"") is None  # the broker's empty answer: authenticated


def test_the_security_of_each_protocol() -> None:
    context: Any = object()
    plain = channel_security(_settings(security_protocol="PLAINTEXT"), None)
    assert plain.ssl_context is None and plain.sasl_mechanism is None
    tls = channel_security(_settings(security_protocol="SSL"), context)
    assert tls.ssl_context is context and tls.sasl_mechanism is None
    sasl = channel_security(_settings(security_protocol="SASL_PLAINTEXT"), None)
    assert sasl.ssl_context is None and sasl.sasl_mechanism == "SCRAM-SHA-512"
    assert "pw-secret" not in repr(sasl) and "SCRAM-SHA-512" in repr(sasl)


def test_reauthentication_at_85_to_95_percent_of_the_session() -> None:
    random.seed(7)
    times = [reauthentication_time(100.0, 10_000) for _ in range(2_000)]
    assert all(t is not None and 108.5 <= t <= 109.5 for t in times)
    spread = [t for t in times if t is not None]
    assert max(spread) - min(spread) > 0.8  # jittered, not all at once
    assert reauthentication_time(100.0, 0) is None  # the broker set no lifetime: never
