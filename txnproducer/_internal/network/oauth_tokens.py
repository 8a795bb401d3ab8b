"""The OAUTHBEARER token cache between the user's provider and the SASL mechanism.

The mechanism (:mod:`.sasl_mechanisms`) asks for a token (``token()``, then ``extensions()``) on the
network thread - the producer's Sender - for every authentication. This class serves a cached
:class:`~txnproducer.oauth.OAuthBearerToken` and keeps it fresh from a small daemon thread, so that an
HTTP round trip to a token endpoint never stalls the Sender (see :mod:`txnproducer.oauth` for the
refresh rule and why).

A provider that fails is reported, not retried silently forever: while a cached token is still
valid the refresh retries with backoff and logs a warning; once no valid token is left,
``token()`` raises :class:`TokenProviderFailed`, which the connection's failure handler turns
into a :class:`~txnproducer.errors.SaslAuthenticationError` naming the provider's error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from txnproducer._internal.log import get_logger
from txnproducer.oauth import OAuthBearerToken, check_extensions

__all__ = ["TokenCache", "TokenProviderFailed", "as_token_source"]

# The Java client's defaults (sasl.login.refresh.window.factor / .jitter, sasl.login.retry.backoff.*).
_REFRESH_AT = 0.8
_RETRY_BACKOFF_S = 0.1
_RETRY_BACKOFF_MAX_S = 10.0
# How long an authentication waits for a token while the refresh thread fetches one (it holds up
# the Sender's network loop meanwhile, so well under request_timeout_ms).
_FIRST_TOKEN_WAIT_S = 10.0


class TokenProviderFailed(Exception):
    """The token provider raised or returned something unusable; the message says which."""


def as_token_source(provider: Any) -> Callable[[], OAuthBearerToken]:
    """One calling convention for the forms ``sasl_oauth_token_provider`` accepts."""
    # an object with token() (kafka-python's AbstractTokenProvider among them), not a plain callable
    if callable(getattr(provider, "token", None)) and not callable(provider):
        def from_object() -> OAuthBearerToken:
            extensions = provider.extensions() if callable(getattr(provider, "extensions", None)) else {}
            return _as_token(provider.token(), extensions or {})
        return from_object
    if callable(provider):
        return lambda: _as_token(provider(), {})
    raise TypeError("sasl_oauth_token_provider must be callable or have a token() method")


def _as_token(value: Any, extensions: Any) -> OAuthBearerToken:
    if isinstance(value, OAuthBearerToken):
        return value
    if isinstance(value, str):
        return OAuthBearerToken(value, None, check_extensions(extensions))
    raise TokenProviderFailed(
        f"the token provider returned a {type(value).__name__}, not an OAuthBearerToken or a str")


class TokenCache:
    """Serves tokens to the OAUTHBEARER mechanism; refreshes them in the background."""

    def __init__(self, source: Callable[[], OAuthBearerToken], name: str) -> None:
        self._source = source
        self._log = get_logger("txnproducer.network").bind(transactional_id=name)
        self._cond = threading.Condition()
        self._current: OAuthBearerToken | None = None
        self._refresh_at = 0.0  # wall clock (as expires_at): when to fetch the next token
        self._served: OAuthBearerToken | None = None
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._refresh_loop, name=f"txnproducer-oauth-{name}",
                                        daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return "TokenCache(<token not shown>)"

    # -- the mechanism's side (the network thread) -----------------------------------------------------

    def token(self) -> str:
        token = self._usable_token()
        self._served = token
        return token.value

    def extensions(self) -> dict[str, str]:
        served = self._served
        return dict(served.extensions) if served is not None else {}

    def _usable_token(self) -> OAuthBearerToken:
        deadline = time.monotonic() + _FIRST_TOKEN_WAIT_S
        with self._cond:
            while True:
                token = self._current
                if token is not None and (token.expires_at is None or token.expires_at > time.time()):
                    if token.expires_at is None:
                        self._current = None  # no expiry known: the next authentication fetches anew
                        self._cond.notify_all()
                    return token
                if self._error is not None and token is None:
                    raise TokenProviderFailed(f"the OAuth token provider failed: {self._error}")
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    raise TokenProviderFailed(
                        f"the OAuth token provider gave no valid token within {_FIRST_TOKEN_WAIT_S:.0f} s"
                        + (f" (last error: {self._error})" if self._error is not None else ""))
                self._cond.notify_all()  # wake the refresher: a token is needed now
                self._cond.wait(remaining)

    # -- the refresh thread ----------------------------------------------------------------------------

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _refresh_loop(self) -> None:
        backoff = _RETRY_BACKOFF_S
        while True:
            with self._cond:
                while not self._closed and self._current is not None and time.time() < self._refresh_at:
                    self._cond.wait(min(self._refresh_at - time.time(), 3600.0))
                if self._closed:
                    return
            try:
                token = self._source()
            except Exception as exc:  # the provider's own error, reported to whoever needs a token
                with self._cond:
                    self._error = exc
                    still_valid = self._current is not None and not self._expired(self._current)
                    if not still_valid:
                        self._current = None
                    self._cond.notify_all()
                self._log.warning("oauth.token_refresh_failed", error=f"{type(exc).__name__}: {exc}",
                                  retry_in_s=backoff)
                with self._cond:
                    self._cond.wait_for(lambda: self._closed, timeout=backoff)
                backoff = min(backoff * 2, _RETRY_BACKOFF_MAX_S)
                continue
            backoff = _RETRY_BACKOFF_S
            now = time.time()
            with self._cond:
                self._current = token
                self._refresh_at = (now + (token.expires_at - now) * _REFRESH_AT
                                    if token.expires_at is not None else float("inf"))
                self._error = None
                self._cond.notify_all()
            self._log.debug("oauth.token_refreshed", expires_in_s=None if token.expires_at is None
                            else round(token.expires_at - time.time(), 1))
            if token.expires_at is None:
                # no expiry: fetched again when an authentication takes it (see _usable_token)
                with self._cond:
                    self._cond.wait_for(lambda: self._closed or self._current is None)

    @staticmethod
    def _expired(token: OAuthBearerToken) -> bool:
        return token.expires_at is not None and token.expires_at <= time.time()
