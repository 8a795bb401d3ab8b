"""The SCRAM client of the Sender's own connections (``network/scram_client.py``).

What a user relies on: the exchange a Kafka broker accepts (RFC 5802/7677, checked against RFC 7677's
published example and against an independent server, the MockCluster's), a broker that does not know the
password found out (its signature does not verify), the broker's refusal reported with its reason, user
names with ``,`` or ``=`` sent as RFC 5802 wants them, and no credential in any repr or error.
"""

from __future__ import annotations

import base64

import pytest

from txnproducer._internal.network.scram_client import ScramClient, ScramClientError
from txnproducer.testing.security.scram import ScramCredential, ScramError, ScramExchange


def test_rfc_7677_example() -> None:
    # RFC 7677 section 3: user "user", password "pencil"
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,"
                    b"i=4096")
    assert client.final_message(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")


def _exchange(mechanism: str, user: str, password: str, known: dict[str, str]) -> ScramClient:
    """Run a whole exchange against the MockCluster's server side; raises what either side raises."""
    credentials = {u: ScramCredential.from_password(mechanism, p) for u, p in known.items()}
    server = ScramExchange(mechanism, credentials.get)
    client = ScramClient(mechanism, user, password)
    final = client.final_message(server.first(client.first_message()))
    client.verify(server.final(final))
    assert server.complete and server.username == user
    return client


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_an_exchange_the_server_accepts(mechanism: str) -> None:
    _exchange(mechanism, "alice", "alice-secret", {"alice": "alice-secret"})


def test_a_user_name_with_comma_and_equals_is_escaped() -> None:
    name = "team=a,orders"
    client = ScramClient("SCRAM-SHA-512", name, "pw")
    assert b"n=team=3Da=2Corders," in client.first_message()
    _exchange("SCRAM-SHA-512", name, "pw", {name: "pw"})  # the server decodes it back to the name


def test_a_wrong_password_is_refused_by_the_server() -> None:
    with pytest.raises(ScramError, match="Invalid client credentials"):
        _exchange("SCRAM-SHA-512", "alice", "not-the-password", {"alice": "alice-secret"})


def test_a_server_that_does_not_know_the_password_is_found_out() -> None:
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    nonce = client.first_message().decode().split("r=", 1)[1]
    salt = base64.b64encode(b"0123456789abcdef").decode()
    client.final_message(f"r={nonce}xyz,s={salt},i=4096".encode())
    impostor = base64.b64encode(b"\x00" * 32).decode()
    with pytest.raises(ScramClientError, match="signature does not match"):
        client.verify(f"v={impostor}".encode())


@pytest.mark.parametrize(("server_first", "why"), [
    ("e=unknown-user", "refused the SCRAM exchange: unknown-user"),
    ("r=someone-elses-nonce,s=c2FsdA==,i=4096", "does not extend ours"),
    ("r={nonce}x,s=c2FsdA==,i=1024", "1024 SCRAM iterations"),
    ("r={nonce}x,s=c2FsdA==,i=99999999", "99999999 SCRAM iterations"),
    ("r={nonce}x,i=4096", "lacks r=, s= or i="),
    ("garbage", "malformed"),
])
def test_a_server_first_message_that_is_refused(server_first: str, why: str) -> None:
    client = ScramClient("SCRAM-SHA-512", "alice", "alice-secret")
    nonce = client.first_message().decode().split("r=", 1)[1]
    with pytest.raises(ScramClientError) as refused:
        client.final_message(server_first.format(nonce=nonce).encode())
    assert why in str(refused.value)


def test_the_server_final_error_is_reported() -> None:
    client = ScramClient("SCRAM-SHA-512", "alice", "alice-secret")
    nonce = client.first_message().decode().split("r=", 1)[1]
    client.final_message(f"r={nonce}x,s=c2FsdA==,i=4096".encode())
    with pytest.raises(ScramClientError, match="invalid-proof"):
        client.verify(b"e=invalid-proof")


def test_no_credential_in_repr_or_errors() -> None:
    client = ScramClient("SCRAM-SHA-512", "alice", "alice-secret")
    assert "alice-secret" not in repr(client)
    with pytest.raises(ScramError) as refused:
        _exchange("SCRAM-SHA-512", "alice", "wrong-secret", {"alice": "alice-secret"})
    assert "wrong-secret" not in str(refused.value) and "alice-secret" not in str(refused.value)
