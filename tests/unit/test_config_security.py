"""Security settings: what a user coming from the Java client or kafka-python relies on - Java names
that carry over, Java-only ones refused with what to use instead, settings that would be silently
ignored refused, and no secret in any message or repr."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from txnproducer.config import ProducerConfig
from txnproducer.errors import ConfigError

SASL = {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice"}


def make(**kw: Any) -> ProducerConfig:
    return ProducerConfig(transactional_id="tx-1", **kw)


def java(**props: Any) -> ProducerConfig:
    return ProducerConfig.from_mapping({"transactional.id": "tx-1", **props})


@pytest.mark.parametrize(("key", "advice"), [
    ("ssl.truststore.location", "ssl_cafile"),
    ("ssl.truststore.password", "ssl_cafile"),
    ("ssl.keystore.location", "ssl_certfile and ssl_keyfile"),
    ("ssl.keystore.password", "ssl_certfile and ssl_keyfile"),
    ("sasl.jaas.config", "sasl_plain_username and sasl_plain_password"),
    ("sasl.login.callback.handler.class", "sasl_oauth_token_provider"),
    ("sasl.oauthbearer.token.endpoint.url", "ClientCredentialsTokenProvider"),
    ("ssl.enabled.protocols", "ssl_context"),
])
def test_java_only_settings_say_what_to_use_instead(key: str, advice: str) -> None:
    secret = "do-not-echo-me"
    with pytest.raises(ConfigError, match="not supported by this Python client") as refused:
        java(**{key: secret})
    assert advice in str(refused.value) and secret not in str(refused.value)


def test_java_names_that_carry_over() -> None:
    config = java(**{"security.protocol": "SSL", "ssl.key.password": "pw", "ssl.certfile": "/c.pem",
                     "ssl.cipher.suites": "ECDHE-RSA-AES256-GCM-SHA384"})
    assert (config.ssl_password, config.ssl_ciphers) == ("pw", "ECDHE-RSA-AES256-GCM-SHA384")
    assert java(**{"sasl.kerberos.service.name": "kafka-prod"}).sasl_kerberos_service_name == "kafka-prod"
    off = java(**{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""})
    assert off.ssl_check_hostname is False
    assert java(**{"ssl.endpoint.identification.algorithm": "https"}).ssl_check_hostname is True
    with pytest.raises(ConfigError, match="'https' or ''"):
        java(**{"ssl.endpoint.identification.algorithm": "dns"})


def test_secrets_are_never_echoed() -> None:
    with pytest.raises(ConfigError) as refused:
        make(**SASL, sasl_plain_password=b"bytes-secret")
    assert "bytes-secret" not in str(refused.value) and "not shown" in str(refused.value)
    with pytest.raises(ConfigError) as refused:
        make(security_protocol="SSL", ssl_certfile="/c.pem", ssl_password=12345)
    assert "12345" not in str(refused.value)
    config = make(**SASL, sasl_plain_password="pw-in-repr?")
    assert "pw-in-repr?" not in repr(config)
    assert "key-pw" not in repr(make(security_protocol="SSL", ssl_certfile="/c.pem", ssl_password="key-pw"))
    provider_config = make(security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
                           sasl_oauth_token_provider=lambda: "token-in-repr?")
    assert "sasl_oauth_token_provider" not in repr(provider_config)


@pytest.mark.parametrize(("settings", "message"), [
    ({"ssl_cafile": "/ca.pem"}, "ssl_cafile set but security_protocol is 'PLAINTEXT'"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "sasl_plain_username": "a",
      "sasl_plain_password": "p", "ssl_certfile": "/c.pem"}, "does not use TLS"),
    ({"security_protocol": "SSL", "ssl_keyfile": "/k.pem"}, "ssl_keyfile is set without ssl_certfile"),
    ({"security_protocol": "SSL", "ssl_context": ssl.create_default_context(), "ssl_cafile": "/ca.pem"},
     "ssl_context is set, so ssl_cafile would be ignored"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"}, "needs sasl_oauth_token_provider"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "a",
      "sasl_plain_password": "p", "sasl_oauth_token_provider": lambda: "t"}, "use 'OAUTHBEARER'"),
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": "tok"},
     "must be a callable"),
    ({"security_protocol": "SSL", "ssl_ciphers": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}, "OpenSSL names"),
    ({"security_protocol": "SSL", "ssl_context": "not a context"}, "an ssl.SSLContext or None"),
])
def test_settings_that_would_be_ignored_or_cannot_work_are_refused(settings: dict[str, Any],
                                                                   message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make(**settings)


def test_gssapi_needs_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gssapi" else real(name, *a))
    with pytest.raises(ConfigError, match="pip install gssapi"):
        make(security_protocol="SASL_SSL", sasl_mechanism="GSSAPI")


def test_tls_files_are_checked_when_the_producer_is_built(tmp_path: Path) -> None:
    """Not per connection, minutes later: a missing or unreadable file is a ConfigError naming it."""
    from txnproducer._internal.network.tls_context import build_ssl_context

    missing = str(tmp_path / "nope.pem")
    with pytest.raises(ConfigError, match=r"ssl_cafile .*nope\.pem.*file not found"):
        build_ssl_context(make(security_protocol="SSL", ssl_cafile=missing))
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    with pytest.raises(ConfigError, match=r"ssl_cafile .*garbage\.pem.*not a PEM file"):
        build_ssl_context(make(security_protocol="SSL", ssl_cafile=str(garbage)))
    with pytest.raises(ConfigError, match=r"ssl_certfile .*nope\.pem"):
        build_ssl_context(make(security_protocol="SSL", ssl_certfile=missing))
    context = build_ssl_context(make(security_protocol="SSL", ssl_ciphers="ECDHE-RSA-AES256-GCM-SHA384"))
    assert context is not None and context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    names = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert names == {"ECDHE-RSA-AES256-GCM-SHA384"}
    assert build_ssl_context(make()) is None


def test_an_encrypted_key_needs_the_right_password(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    from cryptography.hazmat.primitives import serialization

    from txnproducer._internal.network.tls_context import build_ssl_context

    leaf = trustme.CA().issue_cert("client")
    cert = tmp_path / "cert.pem"
    key = tmp_path / "key.pem"
    leaf.cert_chain_pems[0].write_to_path(str(cert))
    private = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.BestAvailableEncryption(b"right-pw")))
    ok = make(security_protocol="SSL", ssl_certfile=str(cert), ssl_keyfile=str(key), ssl_password="right-pw")
    assert build_ssl_context(ok) is not None
    wrong = make(security_protocol="SSL", ssl_certfile=str(cert), ssl_keyfile=str(key),
                 ssl_password="wrong-pw")
    with pytest.raises(ConfigError, match="could not be opened with ssl_password") as refused:
        build_ssl_context(wrong)
    assert "wrong-pw" not in str(refused.value) and "right-pw" not in str(refused.value)


def test_redacted_settings_keep_their_spelling_and_hide_every_secret() -> None:
    settings = {"sasl.plain.password": "pw-1", "sasl_plain_password": "pw-2", "ssl.key.password": "pw-3",
                "sasl.jaas.config": 'PlainLoginModule required password="pw-4";', "linger.ms": "5",
                "not.a.setting": "kept"}
    shown = ProducerConfig.redacted(settings)
    assert list(shown) == list(settings)
    assert {shown[k] for k in list(settings)[:4]} == {"<redacted>"}
    assert shown["linger.ms"] == "5" and shown["not.a.setting"] == "kept"


def test_the_spark_sinks_options_never_show_a_password() -> None:
    from txnproducer.spark.sink.options import SinkOptions

    options = SinkOptions.parse({"kafka.bootstrap.servers": "h:9093", "kafka.security.protocol": "SASL_SSL",
                                 "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.plain.username": "alice",
                                 "kafka.sasl.plain.password": "Sp4rk-pa55word", "topic": "t"},
                                streaming=False)
    assert options.producer_settings["sasl.plain.password"] == "Sp4rk-pa55word"  # still there to use
    assert "Sp4rk-pa55word" not in repr(options) and "alice" in repr(options)
