"""The server side of the SASL mechanisms a MockCluster offers: PLAIN, SCRAM-SHA-256/512, OAUTHBEARER.

Why one object per attempt (:class:`MechanismServer`): a mechanism is a short conversation (PLAIN one
message, SCRAM two, OAUTHBEARER one or two) whose state must not outlive the attempt; the connection
(``connection_auth.py``) creates one per SaslHandshake from :class:`SaslSettings`, feeds it the client's
tokens and reads who authenticated and until when.

What the client is told on failure follows Kafka's servers (``PlainSaslServer``, ``ScramSaslServer``,
``OAuthBearerSaslServer``): PLAIN answers "Authentication failed: Invalid username or password" (and says
when the user name or password is empty); every SCRAM failure but one gets Kafka's generic "Authentication
failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" (Kafka does not
tell an unknown user from a wrong password); OAUTHBEARER first answers a failed token with the RFC 7628
error challenge ``{"status":"invalid_token"}``, and after the client's ``%x01`` fails with that JSON as
the message - here followed by what was wrong ("unknown token", "the token expired at ..."), which Kafka's
default validator does not say. Messages never carry a password, token or proof.

OAUTHBEARER tokens are configured as :class:`OAuthToken` (the principal a token stands for, its expiry, the
SASL extensions it requires) instead of being validated as JWTs: tests choose what is valid directly.

Simplifications: no GSSAPI; no SASLprep; OAUTHBEARER tokens are opaque strings looked up in a table (no JWT
parsing, scopes or signature checks, the status is always ``invalid_token``).
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs

from .acl import ANONYMOUS
from .scram import MECHANISMS as SCRAM_MECHANISMS
from .scram import ScramCredential, ScramError, ScramExchange

__all__ = ["MECHANISMS", "MechanismServer", "OAuthToken", "SaslFailure", "SaslSettings"]

PLAIN = "PLAIN"
OAUTHBEARER = "OAUTHBEARER"
#: every mechanism this mock can enable, in Kafka's spelling
MECHANISMS = (PLAIN, *SCRAM_MECHANISMS, OAUTHBEARER)


class SaslFailure(Exception):
    """The attempt failed.

    ``client_message`` is the SaslAuthenticate error message (None: Kafka's generic message for the
    mechanism); ``str(failure)`` is the reason the broker logs. Neither may carry a secret.
    """

    def __init__(self, reason: str, client_message: str | None = None) -> None:
        super().__init__(reason)
        self.client_message = client_message


_AUTHZID_DIFFERS = ("Authentication failed: Client requested an authorization id that is different from "
                    "username")


def generic_message(mechanism: str, reauthenticating: bool) -> str:
    """Kafka's answer to a failure whose details it keeps to itself (``SaslServerAuthenticator``)."""
    what = "re-authentication" if reauthenticating else "authentication"
    return f"Authentication failed during {what} due to invalid credentials with SASL mechanism {mechanism}"


@attrs.frozen(repr=False)
class OAuthToken:
    """What an OAUTHBEARER token stands for: ``principal`` (the user name, principal ``User:<principal>``),
    ``expires_at_ms`` (wall-clock ms since the epoch, like a JWT's ``exp``; None: never) and the SASL
    extensions a client must send with it (name -> value)."""

    principal: str
    expires_at_ms: int | None = None
    extensions: Mapping[str, str] = attrs.field(factory=dict, converter=dict)

    def __repr__(self) -> str:
        return f"OAuthToken(principal={self.principal!r}, expires_at_ms={self.expires_at_ms})"


class MechanismServer(Protocol):
    """One authentication attempt with one mechanism, server side."""

    mechanism: str

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        """The challenge answering the client's ``token``; raises :class:`SaslFailure`."""
        ...

    @property
    def complete(self) -> bool: ...

    @property
    def principal(self) -> str:
        """``User:<name>`` once complete."""
        ...

    @property
    def credential_expiry_ms(self) -> int | None:
        """When the credential stops being valid (OAUTHBEARER token expiry), or None."""
        ...


class _PlainServer:
    """RFC 4616: one message ``[authzid] NUL authcid NUL passwd``, checked against the configured users."""

    mechanism = PLAIN
    credential_expiry_ms = None

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.principal = ANONYMOUS

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        parts = token.decode("utf-8", errors="replace").split("\x00")
        if len(parts) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = parts
        if not username:
            raise SaslFailure("no user name", "Authentication failed: username not specified")
        if not password:
            raise SaslFailure("no password", "Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not _equal(expected, password):
            reason = "unknown user" if expected is None else "wrong password"
            raise SaslFailure(f"{reason} {username!r}", "Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslFailure(_AUTHZID_DIFFERS, _AUTHZID_DIFFERS)
        self.complete = True
        self.principal = f"User:{username}"
        return b""


class _ScramServer:
    """SCRAM-SHA-256/512: two rounds (``scram.py``), Kafka's messages."""

    credential_expiry_ms = None

    def __init__(self, mechanism: str, credentials: Mapping[str, ScramCredential]) -> None:
        self.mechanism = mechanism
        self._exchange = ScramExchange(mechanism, credentials.get)
        self._round = 0
        self.principal = ANONYMOUS

    @property
    def complete(self) -> bool:
        return self._exchange.complete

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        self._round += 1
        try:
            if self._round == 1:
                challenge = self._exchange.first(token)
                user, authzid = self._exchange.username, self._exchange.authorization_id
                if authzid and authzid != user:
                    raise SaslFailure(_AUTHZID_DIFFERS, _AUTHZID_DIFFERS)
                return challenge
            challenge = self._exchange.final(token)
        except ScramError as exc:
            raise SaslFailure(str(exc)) from None
        self.principal = f"User:{self._exchange.username}"
        return challenge


_SASL_NAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # RFC 5801 saslname: no "," or "=" but escaped
_KV_PAIRS = r"(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+\x01)*"
#: RFC 7628 client initial response, as Kafka's OAuthBearerClientInitialResponse parses it
_OAUTH_RESPONSE = re.compile(rf"n,(?:a=(?P<authzid>{_SASL_NAME}))?,\x01(?P<kvpairs>{_KV_PAIRS})\x01")
_AUTH_VALUE = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")
_INVALID_TOKEN = json.dumps({"status": "invalid_token"}, separators=(",", ":"))


class _OAuthBearerServer:
    """RFC 7628 as Kafka's ``OAuthBearerSaslServer``: the client initial response carries the token and
    extensions; a token that fails gets the JSON error challenge, and the client's ``%x01`` the failure."""

    mechanism = OAUTHBEARER

    def __init__(self, tokens: Mapping[str, OAuthToken]) -> None:
        self._tokens = tokens
        self._error: str | None = None
        self.complete = False
        self.principal = ANONYMOUS
        self.credential_expiry_ms: int | None = None

    def evaluate(self, token: bytes, now_ms: int) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslFailure(self._error, self._error)
        self._error = None
        match = _OAUTH_RESPONSE.fullmatch(token.decode("utf-8", errors="replace"))
        if match is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message")
        pairs = dict(p.split("=", 1) for p in match.group("kvpairs").split("\x01") if p)
        auth = _AUTH_VALUE.fullmatch(pairs.pop("auth", ""))
        if auth is None or auth.group("scheme").lower() != "bearer":
            raise SaslFailure("Invalid OAUTHBEARER client first message: no 'auth=Bearer <token>'")
        found = self._tokens.get(auth.group("token"))
        expiry = None if found is None else found.expires_at_ms
        if found is None or (expiry is not None and expiry <= now_ms):
            what = ("unknown token" if expiry is None
                    else f"the token expired at {expiry} ({now_ms - expiry} ms ago)")
            self._error = f"{_INVALID_TOKEN}: {what}"
            return _INVALID_TOKEN.encode("utf-8")
        authzid = match.group("authzid") or ""
        if authzid and authzid != found.principal:
            message = (f"Authentication failed: Client requested an authorization id ({authzid}) that is "
                       f"different from the token's principal name ({found.principal})")
            raise SaslFailure(message, message)
        invalid = {name: "missing" if name not in pairs else "unexpected value"
                   for name, value in found.extensions.items() if pairs.get(name) != value}
        if invalid:
            listed = "; ".join(f"{name}: {why}" for name, why in invalid.items())
            message = f"Authentication failed: {len(invalid)} extensions are invalid! They are: {listed}"
            raise SaslFailure(message, message)
        self.complete = True
        self.principal = f"User:{found.principal}"
        self.credential_expiry_ms = found.expires_at_ms
        return b""


def _equal(expected: str, given: str) -> bool:
    """Constant-time comparison, so a test double does not teach timing attacks by example."""
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8"))


class SaslSettings:
    """The SASL side of a listener: enabled mechanisms, users, tokens, ``connections.max.reauth.ms``.

    SCRAM credentials are derived once here (PBKDF2, 4096 iterations) so an authentication costs a few
    HMACs; the passwords are kept only for PLAIN. ``repr`` shows no secret.
    """

    def __init__(
        self,
        mechanisms: Sequence[str],
        users: Mapping[str, str] | None = None,
        oauth_tokens: Mapping[str, OAuthToken | str] | None = None,
        session_lifetime_ms: int = 0,
    ) -> None:
        mechanisms = tuple(mechanisms)
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown or not mechanisms:
            what = f"unknown SASL mechanism(s) {unknown}" if unknown else "no SASL mechanism"
            raise ValueError(f"{what}; choose from {list(MECHANISMS)}")
        if oauth_tokens and OAUTHBEARER not in mechanisms:
            raise ValueError("oauth_tokens need 'OAUTHBEARER' in sasl_mechanisms")
        if session_lifetime_ms < 0:
            raise ValueError("sasl_session_lifetime_ms must be >= 0 (0: sessions never expire)")
        self.mechanisms = mechanisms
        self.session_lifetime_ms = session_lifetime_ms
        self._users = dict(users or {})
        # a token given as just the principal's name never expires and needs no extension
        tokens = oauth_tokens or {}
        self._tokens = {t: OAuthToken(v) if isinstance(v, str) else v for t, v in tokens.items()}
        self._scram: dict[str, dict[str, ScramCredential]] = {
            m: {user: ScramCredential.from_password(m, password) for user, password in self._users.items()}
            for m in mechanisms if m in SCRAM_MECHANISMS
        }

    def __repr__(self) -> str:
        return (f"SaslSettings(mechanisms={list(self.mechanisms)}, users={sorted(self._users)}, "
                f"tokens={len(self._tokens)}, session_lifetime_ms={self.session_lifetime_ms})")

    def new_attempt(self, mechanism: str) -> MechanismServer:
        """A fresh server for one authentication with ``mechanism`` (which must be enabled)."""
        if mechanism == PLAIN:
            return _PlainServer(self._users)
        if mechanism == OAUTHBEARER:
            return _OAuthBearerServer(self._tokens)
        return _ScramServer(mechanism, self._scram[mechanism])
