"""The client side of the SASL mechanisms our connections speak: PLAIN, SCRAM, OAUTHBEARER, GSSAPI.

Why a mechanism is a small object with two calls (:class:`SaslMechanismClient`): the exchange on the wire
(SaslHandshake, then SaslAuthenticate until done: :mod:`.sasl_authenticator`) is the same for every
mechanism; only the tokens differ. One object per authentication, so that nothing of an attempt (a SCRAM
nonce, a served token) outlives it.

The tokens are the Java client's:

* PLAIN (RFC 4616): ``NUL user NUL password``, no authorization id (``PlainSaslClient``);
* SCRAM-SHA-256/512: :mod:`.scram_client`;
* OAUTHBEARER (RFC 7628): ``n,,<SOH>auth=Bearer <token>[<SOH>key=value...]<SOH><SOH>`` with the token and
  extensions of the producer's token cache (:mod:`.oauth_tokens`); a broker that refuses the token answers
  an error challenge, to which the client sends ``<SOH>`` and the broker then fails the exchange with its
  reason (``OAuthBearerSaslClient``).

* GSSAPI (RFC 4752): :mod:`.sasl_gssapi`, with the ``gssapi`` package.

Nothing here logs, and no ``repr`` shows a credential.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .sasl_gssapi import GssapiClient
from .scram_client import SCRAM_MECHANISMS, ScramClient

__all__ = ["MECHANISMS", "SaslMechanismClient", "mechanism_factory"]

PLAIN = "PLAIN"
OAUTHBEARER = "OAUTHBEARER"
GSSAPI = "GSSAPI"
#: the mechanisms our connections speak
MECHANISMS = frozenset({PLAIN, OAUTHBEARER, GSSAPI, *SCRAM_MECHANISMS})
_SOH = "\x01"


class SaslMechanismClient(Protocol):
    """One authentication with one mechanism, client side."""

    name: str

    def initial_token(self) -> bytes:
        """The first SaslAuthenticate token (may raise: a token provider that failed)."""
        ...

    def respond(self, challenge: bytes) -> bytes | None:
        """The next token answering the broker's ``challenge``; None when the exchange is complete."""
        ...


class _Plain:
    name = PLAIN

    def __init__(self, username: str, password: str) -> None:
        self._token = f"\x00{username}\x00{password}".encode()

    def __repr__(self) -> str:
        return "PLAIN(<credentials not shown>)"

    def initial_token(self) -> bytes:
        return self._token

    def respond(self, challenge: bytes) -> bytes | None:
        return None  # the broker answered the one message without an error: authenticated


class _Scram:
    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.name = mechanism
        self._client = ScramClient(mechanism, username, password)
        self._round = 0

    def __repr__(self) -> str:
        return f"{self.name}(<credentials not shown>)"

    def initial_token(self) -> bytes:
        return self._client.first_message()

    def respond(self, challenge: bytes) -> bytes | None:
        self._round += 1
        if self._round == 1:
            return self._client.final_message(challenge)
        self._client.verify(challenge)
        return None


class _OAuthBearer:
    name = OAUTHBEARER

    def __init__(self, tokens: Any) -> None:
        self._tokens = tokens  # the token cache: token() then extensions() of the token it served
        self._refused = False

    def __repr__(self) -> str:
        return "OAUTHBEARER(<token not shown>)"

    def initial_token(self) -> bytes:
        value = self._tokens.token()
        extensions = "".join(f"{_SOH}{key}={val}" for key, val in self._tokens.extensions().items())
        return f"n,,{_SOH}auth=Bearer {value}{extensions}{_SOH}{_SOH}".encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if not challenge:
            return None
        if self._refused:  # a second error challenge: end the exchange the same way
            return _SOH.encode()
        self._refused = True
        return _SOH.encode()  # RFC 7628: the broker then fails the exchange and says why


def mechanism_factory(mechanism: str, *, username: str | None = None, password: str | None = None,
                      tokens: Any = None, kerberos_service: str = "kafka",
                      kerberos_domain: str | None = None) -> Callable[[str], SaslMechanismClient]:
    """A function making a fresh client of ``mechanism`` for each authentication, given the broker's host."""
    if mechanism == PLAIN or mechanism in SCRAM_MECHANISMS:
        user, secret = username or "", password or ""
        if mechanism == PLAIN:
            return lambda _host: _Plain(user, secret)
        return lambda _host: _Scram(mechanism, user, secret)
    if mechanism == OAUTHBEARER:
        if tokens is None:
            raise ValueError("OAUTHBEARER needs the token cache")
        return lambda _host: _OAuthBearer(tokens)
    if mechanism == GSSAPI:
        return lambda host: GssapiClient(kerberos_service, kerberos_domain or host)
    raise ValueError(f"our connections do not speak SASL mechanism {mechanism!r}")
