"""The MockCluster's SCRAM server (``testing/security/scram.py``) against RFC 7677's example and
kafka-python's client: the same salted password, nonces, proof and server signature, and every failure
named."""

from __future__ import annotations

import base64

import pytest
from kafka.net.sasl.scram import ScramClient

from txnproducer.testing.security.scram import ITERATIONS, ScramCredential, ScramError, ScramExchange

# RFC 7677 section 3: user "user", password "pencil"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _exchange(mechanism: str = "SCRAM-SHA-256", password: str = "pencil", user: str = "user",
              **kwargs: object) -> ScramExchange:
    credential = ScramCredential.from_password(mechanism, password, **kwargs)  # type: ignore[arg-type]
    return ScramExchange(mechanism, {user: credential}.get,
                         server_nonce=RFC_SERVER_NONCE if mechanism == "SCRAM-SHA-256" else None)


def test_rfc_7677_example_exchange() -> None:
    exchange = _exchange(salt=RFC_SALT)
    assert exchange.first(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert exchange.final(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert exchange.complete and exchange.username == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_client_authenticates_and_checks_the_server_signature(mechanism: str) -> None:
    exchange = _exchange(mechanism, password="alice-secret", user="alice")
    client = ScramClient("alice", "alice-secret", mechanism)
    server_first = exchange.first(client.first_message())
    assert b",i=%d" % ITERATIONS in server_first
    client.process_server_first_message(server_first)
    client.process_server_final_message(exchange.final(client.final_message()))  # raises on a wrong signature
    assert exchange.complete


def test_a_wrong_password_fails_the_proof() -> None:
    exchange = _exchange(password="alice-secret", user="alice")
    client = ScramClient("alice", "not-the-secret", "SCRAM-SHA-256")
    client.process_server_first_message(exchange.first(client.first_message()))
    with pytest.raises(ScramError, match="Invalid client credentials") as failed:
        exchange.final(client.final_message())
    assert "not-the-secret" not in str(failed.value) and not exchange.complete


def test_an_unknown_user_fails_at_the_first_message() -> None:
    exchange = _exchange(user="alice")
    with pytest.raises(ScramError, match="unknown user 'mallory'"):
        exchange.first(b"n,,n=mallory,r=abc")


@pytest.mark.parametrize("message", [b"p=tls-unique,,n=user,r=abc", b"n,,r=abc,n=user", b"n,,n=user",
                                     b"n,x,n=user,r=a", b"\xff\xfe", b"n,,n=us=er,r=abc"])
def test_malformed_client_first_messages_are_refused(message: bytes) -> None:
    with pytest.raises(ScramError):
        _exchange().first(message)


def test_the_final_message_must_carry_the_combined_nonce_and_the_channel_binding() -> None:
    exchange = _exchange(salt=RFC_SALT)
    exchange.first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match="nonce"):
        exchange.final(RFC_CLIENT_FINAL.replace(b"hNlF$k0", b"hNlF$k1"))
    exchange = _exchange(salt=RFC_SALT)
    exchange.first(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError, match="channel binding"):
        exchange.final(RFC_CLIENT_FINAL.replace(b"c=biws", b"c=eSws"))


def test_credentials_do_not_show_their_keys() -> None:
    credential = ScramCredential.from_password("SCRAM-SHA-512", "alice-secret")
    assert repr(credential) == "ScramCredential(SCRAM-SHA-512, iterations=4096)"
