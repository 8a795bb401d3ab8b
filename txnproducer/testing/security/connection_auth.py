"""Who is on one connection, and which requests it may send until it has authenticated.

Why per connection: Kafka authenticates connections, not requests. On a SASL listener a connection starts
unauthenticated and may send only ApiVersions and SaslHandshake; after the handshake only SaslAuthenticate;
once authenticated, anything (as its principal). :class:`ConnectionAuth` holds that state for the broker's
connection thread (``server.py`` asks :meth:`ConnectionAuth.admit` before dispatching each request) and for
the SaslHandshake / SaslAuthenticate handlers, which drive it.

What Kafka does and this follows (``SaslServerAuthenticator``, ``KafkaChannel``, ``SocketServer``):

- before the handshake, any request but ApiVersions and SaslHandshake closes the connection unanswered;
- after the handshake, a request other than SaslAuthenticate is answered ILLEGAL_SASL_STATE and the
  connection is closed;
- an unknown mechanism is answered UNSUPPORTED_SASL_MECHANISM with the enabled ones, then closed; a failed
  authentication SASL_AUTHENTICATION_FAILED with the mechanism's message, then closed. Each of these is an
  authentication failure (:attr:`ConnectionAuth.failed`): Kafka holds the answer and the close back by
  ``connection.failed.authentication.delay.ms`` (KIP-306), and so does the server here;
- SaslHandshake v0 switches to unframed tokens (each frame is a bare SASL token, each answer a bare
  challenge; a failure closes the connection without an answer);
- KIP-368: a successful SaslAuthenticate (v1+) carries the session lifetime - the configured
  ``sasl_session_lifetime_ms`` (Kafka's ``connections.max.reauth.ms``), shortened to the OAUTHBEARER token's
  expiry; a session with a lifetime may re-authenticate (SaslHandshake + SaslAuthenticate on the
  authenticated connection, same mechanism and principal, else the connection is closed), and a request
  after the session expired closes the connection. Without a lifetime, SaslHandshake and SaslAuthenticate
  on an authenticated connection are answered ILLEGAL_SASL_STATE and the connection stays, as KafkaApis does.

On a listener without SASL every request passes, as its principal: ``User:<CN>`` of a TLS client
certificate, else ``User:ANONYMOUS``.

Simplifications: ApiVersions may be sent any number of times before the handshake (Kafka allows one); a
session may re-authenticate at any time (Kafka refuses a second re-authentication within one second).
"""

from __future__ import annotations

import enum

import attrs

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol import error_codes as ec

from .acl import ANONYMOUS
from .sasl import MechanismServer, SaslFailure, SaslSettings, generic_message

__all__ = ["AuthenticateResult", "ConnectionAuth", "Verdict"]

_log = get_logger("txnproducer.testing.security")

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36


class Verdict(enum.Enum):
    """What the server does with a request (:meth:`ConnectionAuth.admit`)."""

    PASS = "pass"  # dispatch it to its handler
    CLOSE = "close"  # close the connection without an answer
    REFUSE = "refuse"  # answer ILLEGAL_SASL_STATE, then close


class _State(enum.Enum):
    HANDSHAKE = "handshake"  # SASL, not yet authenticated: ApiVersions or SaslHandshake
    AUTHENTICATE = "authenticate"  # after SaslHandshake v1: SaslAuthenticate
    UNFRAMED = "unframed"  # after SaslHandshake v0: bare tokens
    BAD_MECHANISM = "bad_mechanism"  # re-authentication asked for another mechanism: the next token closes
    COMPLETE = "complete"  # authenticated (or a listener without SASL)
    FAILED = "failed"


@attrs.frozen
class AuthenticateResult:
    """The SaslAuthenticate answer."""

    error_code: int
    error_message: str | None
    auth_bytes: bytes = b""
    session_lifetime_ms: int = 0


class ConnectionAuth:
    """The authentication state of one connection (see the module docstring)."""

    def __init__(self, sasl: SaslSettings | None, tls_principal: str | None = None, *, broker_id: int = 0,
                 connection_id: int = 0) -> None:
        self._sasl = sasl
        self._state = _State.HANDSHAKE if sasl is not None else _State.COMPLETE
        self.principal = tls_principal if sasl is None and tls_principal else ANONYMOUS
        #: set when the answer being written must be the connection's last
        self.close_after_response = False
        self._log = _log.bind(broker_id=broker_id, connection_id=connection_id)
        self._attempt: MechanismServer | None = None
        self._mechanism: str | None = None
        self._expiry_ms: int | None = None
        # (mechanism, principal) of the session being re-authenticated
        self._previous: tuple[str, str] | None = None

    @property
    def unframed(self) -> bool:
        """True after SaslHandshake v0: the next frames are bare SASL tokens
        (:meth:`authenticate_unframed`)."""
        return self._state is _State.UNFRAMED

    @property
    def failed(self) -> bool:
        """True once the connection failed to authenticate: its last answer (if any) and the close remain."""
        return self._state is _State.FAILED

    def admit(self, api_key: int, now_ms: int) -> Verdict:
        """Whether a request of ``api_key`` may be handled now."""
        state = self._state
        if state is _State.COMPLETE:
            if self._expiry_ms is not None and now_ms >= self._expiry_ms:
                self._log.info("mock.sasl_session_expired", principal=self.principal, api_key=api_key)
                return Verdict.CLOSE
            return Verdict.PASS
        if state is _State.HANDSHAKE and api_key in (API_VERSIONS, SASL_HANDSHAKE):
            return Verdict.PASS
        if state is _State.AUTHENTICATE and api_key == SASL_AUTHENTICATE:
            return Verdict.PASS
        if state is not _State.FAILED:
            mechanism = "" if self._attempt is None else self._attempt.mechanism
            self._failed(mechanism, f"unexpected request (api key {api_key}) in SASL state {state.value}")
        return Verdict.REFUSE if state is _State.AUTHENTICATE else Verdict.CLOSE

    def handshake(self, mechanism: str, version: int) -> tuple[int, list[str]]:
        """SaslHandshake: (error code, the enabled mechanisms to list)."""
        assert self._sasl is not None, "SaslHandshake is only dispatched on a SASL listener"
        if self._state is _State.COMPLETE:
            if self._expiry_ms is None or self._mechanism is None:
                return ec.ILLEGAL_SASL_STATE, []  # KafkaApis: not a re-authentication
            self._previous = (self._mechanism, self.principal)
        elif self._state is not _State.HANDSHAKE:
            self.close_after_response = True
            return ec.ILLEGAL_SASL_STATE, []
        enabled = list(self._sasl.mechanisms)
        if mechanism not in enabled:
            self._failed(mechanism, f"mechanism {mechanism!r} is not enabled")
            return ec.UNSUPPORTED_SASL_MECHANISM, enabled
        if self._previous is not None and mechanism != self._previous[0]:
            self._state = _State.BAD_MECHANISM
            return ec.NONE, enabled
        self._attempt = self._sasl.new_attempt(mechanism)
        self._state = _State.AUTHENTICATE if version >= 1 else _State.UNFRAMED
        return ec.NONE, enabled

    def authenticate(self, token: bytes, now_ms: int) -> AuthenticateResult:
        """SaslAuthenticate: evaluate the client's token (see the module docstring for the failures)."""
        attempt = self._attempt
        if self._state is _State.COMPLETE:
            return AuthenticateResult(ec.ILLEGAL_SASL_STATE,
                                      "SaslAuthenticate request received after successful authentication")
        if self._state is not _State.AUTHENTICATE or attempt is None:
            self.close_after_response = True
            return AuthenticateResult(ec.ILLEGAL_SASL_STATE, "SaslAuthenticate request out of order")
        try:
            challenge = attempt.evaluate(token, now_ms)
            if not attempt.complete:
                return AuthenticateResult(ec.NONE, None, challenge)
            lifetime = self._complete(attempt, now_ms)
        except SaslFailure as failure:
            self._failed(attempt.mechanism, str(failure))
            message = failure.client_message or generic_message(attempt.mechanism, self._previous is not None)
            return AuthenticateResult(ec.SASL_AUTHENTICATION_FAILED, message)
        return AuthenticateResult(ec.NONE, None, challenge, lifetime)

    def authenticate_unframed(self, token: bytes, now_ms: int) -> bytes | None:
        """A bare token after SaslHandshake v0: the bare challenge, or None (close: v0 has no error
        answer)."""
        attempt = self._attempt
        if self._state is not _State.UNFRAMED or attempt is None:
            return None
        try:
            challenge = attempt.evaluate(token, now_ms)
            if attempt.complete:
                self._complete(attempt, now_ms)
        except SaslFailure as failure:
            self._failed(attempt.mechanism, str(failure))
            return None
        return challenge

    def _complete(self, attempt: MechanismServer, now_ms: int) -> int:
        """Make the attempt's principal the connection's; the session lifetime to announce (0: none)."""
        assert self._sasl is not None
        if self._previous is not None and attempt.principal != self._previous[1]:
            before, after = (p.replace(":", ".", 1) for p in (self._previous[1], attempt.principal))
            message = f"Cannot change principals during re-authentication from {before}: {after}"
            raise SaslFailure(message, message)
        max_ms = self._sasl.session_lifetime_ms
        expiry = attempt.credential_expiry_ms
        lifetime = 0
        self._expiry_ms = None
        # as Kafka's ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs
        if expiry is not None or max_ms > 0:
            left = None if expiry is None else max(0, expiry - now_ms)
            lifetime = max_ms if left is None else (left if max_ms <= 0 else min(left, max_ms))
            self._expiry_ms = now_ms + lifetime
        reauthenticated = self._previous is not None
        self.principal = attempt.principal
        self._mechanism = attempt.mechanism
        self._state = _State.COMPLETE
        self._attempt = None
        self._previous = None
        self._log.info("mock.sasl_authenticated", principal=self.principal, mechanism=attempt.mechanism,
                       reauthentication=reauthenticated, session_lifetime_ms=lifetime)
        return lifetime

    def _failed(self, mechanism: str, reason: str) -> None:
        self._state = _State.FAILED
        self._attempt = None
        self.close_after_response = True
        self._log.info("mock.sasl_failed", mechanism=mechanism, reason=reason,
                       reauthentication=self._previous is not None)
