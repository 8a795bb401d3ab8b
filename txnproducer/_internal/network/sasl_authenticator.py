"""SASL on the Sender's own connections: the SaslHandshake + SaslAuthenticate exchange, and KIP-368.

Why its own object: the exchange is a small state machine over a connection's request pipeline, the same
for every mechanism (:mod:`.sasl_mechanisms` makes the tokens), and it runs twice in a connection's life:
once before the connection is ready (after ApiVersions, as the Java client's ``SaslClientAuthenticator``:
ApiVersions, SaslHandshake v1, SaslAuthenticate until the mechanism is done), and again before the
broker's session ends (KIP-368 re-authentication).

Re-authentication: a SaslAuthenticate answer (v1+) carries the session lifetime, the broker's
``connections.max.reauth.ms`` shortened to the credential's expiry (an OAUTHBEARER token's); after it the
broker closes the connection at its next request. As the Java client, the connection re-authenticates
at 85-95 % of the lifetime (jittered, so that many connections do not re-authenticate at once), counted
from when the request that completed the authentication was sent. Unlike the Java client, which begins
when it next has a request to write, ours begins on time even when idle (:meth:`DirectConnection.tick`),
so an idle connection is not found expired by its next request. Requests already sent stay in flight:
the broker answers them before it reads the SaslHandshake (it handles a connection's requests one at a
time, in order), so their answers arrive first and complete as usual; requests sent meanwhile are held
and written once the exchange is done. A failed re-authentication closes the connection with the
broker's reason, which is classified like a first authentication's (``auth_failures.py``).

Errors are kafka-python's classes, the ones its connections raise, so that one classifier reads both:
``UnsupportedSaslMechanismError``, ``IllegalSaslStateError``, ``SaslAuthenticationFailedError`` (with the
broker's message), and the token cache's ``TokenProviderFailed``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import kafka.errors as kerrors
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from txnproducer._internal.protocol import error_codes as ec

from .future import Future
from .sasl_gssapi import GssapiError
from .sasl_mechanisms import SaslMechanismClient
from .scram_client import ScramClientError

__all__ = ["SaslAuthenticator", "reauthentication_time"]

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
_AUTHENTICATE_MAX = 2  # v1: session lifetime (KIP-368); v2: flexible


def reauthentication_time(sent_at: float, session_lifetime_ms: int) -> float | None:
    """When to re-authenticate (monotonic), or None when the broker set no lifetime: at 85-95 % of it
    (the Java client's ``SaslClientAuthenticator``: room for network latency and clock drift, and jitter
    against re-authentication storms)."""
    if session_lifetime_ms <= 0:
        return None
    return sent_at + session_lifetime_ms / 1000 * (0.85 + random.random() * 0.10)


class SaslAuthenticator:
    """One run of the exchange on one connection (a new one for each re-authentication).

    ``new_client(host)`` makes the mechanism's client for the broker at ``host`` (GSSAPI names the
    service by it); ``send(request)`` writes a request ahead of any held by the connection and returns
    its future;
    ``done(session_lifetime_ms, sent_at)`` is told the outcome; ``fail(error)`` closes the connection.
    """

    def __init__(self, mechanism: str, new_client: Callable[[str], SaslMechanismClient], *, host: str,
                 send: Callable[[Any], Future], done: Callable[[int, float], None],
                 fail: Callable[[BaseException], None]) -> None:
        self._mechanism = mechanism
        self._new_client = new_client
        self._host = host
        self._send = send
        self._done = done
        self._fail = fail
        self._client: SaslMechanismClient | None = None
        self._version = 1
        self._sent_at = 0.0

    def start(self, api_versions: dict[int, tuple[int, int]]) -> None:
        """Send SaslHandshake, with the versions this broker speaks (its ApiVersions answer)."""
        handshake = api_versions.get(SASL_HANDSHAKE_KEY)
        authenticate = api_versions.get(SASL_AUTHENTICATE_KEY)
        if handshake is None or handshake[1] < 1 or authenticate is None:
            self._fail(kerrors.UnsupportedVersionError(
                "the broker does not speak SaslHandshake v1 / SaslAuthenticate (Kafka 1.0+, KIP-152)"))
            return
        self._version = min(authenticate[1], _AUTHENTICATE_MAX)
        future = self._send(SaslHandshakeRequest(version=1, mechanism=self._mechanism))
        future.add_callback(self._on_handshake)

    def _on_handshake(self, response: Any) -> None:
        code = response.error_code
        if code == ec.UNSUPPORTED_SASL_MECHANISM or (code == ec.NONE
                                                     and self._mechanism not in response.mechanisms):
            self._fail(kerrors.UnsupportedSaslMechanismError(
                f"the broker does not enable SASL mechanism {self._mechanism}; it enables "
                f"{list(response.mechanisms or [])}"))
            return
        if code == ec.ILLEGAL_SASL_STATE:
            self._fail(kerrors.IllegalSaslStateError("SaslHandshake answered ILLEGAL_SASL_STATE"))
            return
        if code != ec.NONE:
            self._fail(kerrors.for_code(code)(f"SaslHandshake answered {ec.error_name(code)}"))
            return
        try:
            self._client = self._new_client(self._host)
            token = self._client.initial_token()
        except Exception as exc:  # the token provider failed (TokenProviderFailed): the cause as it is
            self._fail(exc)
            return
        self._authenticate(token)

    def _authenticate(self, token: bytes) -> None:
        self._sent_at = time.monotonic()
        future = self._send(SaslAuthenticateRequest(version=self._version, auth_bytes=token))
        future.add_callback(self._on_authenticate)

    def _on_authenticate(self, response: Any) -> None:
        code = response.error_code
        if code != ec.NONE:
            message = response.error_message or ec.error_name(code)
            error = (kerrors.IllegalSaslStateError(message) if code == ec.ILLEGAL_SASL_STATE
                     else kerrors.SaslAuthenticationFailedError(message))
            self._fail(error)
            return
        client = self._client
        assert client is not None
        try:
            token = client.respond(bytes(response.auth_bytes or b""))
        except (ScramClientError, GssapiError) as exc:  # the broker's answer did not check out: as a refusal
            self._fail(kerrors.SaslAuthenticationFailedError(str(exc)))
            return
        except Exception as exc:  # the mechanism's library failed (gssapi: no ticket): the cause as it is
            self._fail(exc)
            return
        if token is not None:
            self._authenticate(token)
            return
        lifetime = int(getattr(response, "session_lifetime_ms", 0) or 0)
        self._done(lifetime, self._sent_at)
