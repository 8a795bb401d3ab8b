"""OAUTHBEARER tokens (KIP-255) for ``sasl_mechanism="OAUTHBEARER"``.

``sasl_oauth_token_provider`` takes any of:

* a callable with no arguments returning an :class:`OAuthBearerToken` (or a bare token string),
  such as :class:`ClientCredentialsTokenProvider` for an OAuth 2 / OIDC token endpoint - what
  managed Kafka services and Java's ``sasl.oauthbearer.token.endpoint.url`` use;
* an object with a ``token()`` method returning a string (kafka-python's
  ``AbstractTokenProvider``), and optionally ``extensions()`` returning a dict.

Why the producer caches and refreshes: the token is needed on the producer's network thread for
every new connection and every re-authentication (KIP-368). Fetching it there would stall all
I/O for an HTTP round trip, and fetching it only when needed would let the first connection after
expiry fail. So, as the Java client's login refresh thread does, the producer fetches a token when
it starts, serves the cached one to connections, and fetches the next in the background at 80 % of
the token's lifetime (retrying with backoff while the old one is still valid). A token without an
expiry is fetched again for every authentication.

May import: errors.
"""

from __future__ import annotations

import base64
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

import attrs

from txnproducer.errors import ConfigError, SaslAuthenticationError

__all__ = ["ClientCredentialsTokenProvider", "OAuthBearerToken", "check_extensions"]

# RFC 7628 section 3.1: extension keys are letters only; "auth" is the token itself.
_EXTENSION_KEY = re.compile(r"^[A-Za-z]+$")
_EXTENSION_VALUE = re.compile(r"^[\x21-\x7E \t\r\n]+$")


def check_extensions(extensions: Mapping[str, str]) -> dict[str, str]:
    """The SASL extensions to send, validated as the Java client validates them (RFC 7628)."""
    out: dict[str, str] = {}
    for key, value in extensions.items():
        if not isinstance(key, str) or not _EXTENSION_KEY.match(key) or key == "auth":
            raise ConfigError(f"SASL extension name {key!r} is invalid: use letters only, and not 'auth'")
        if not isinstance(value, str) or not _EXTENSION_VALUE.match(value):
            raise ConfigError(f"SASL extension {key!r} must be printable ASCII text")
        out[key] = value
    return out


@attrs.frozen
class OAuthBearerToken:
    """A bearer token and when it expires.

    ``expires_at`` is in seconds since the epoch (``time.time()``); None means unknown, and the
    token is then fetched again for each authentication. ``extensions`` are SASL extensions
    (KIP-342) some brokers require, e.g. a logical cluster or identity pool id. The token's value
    is left out of ``repr``.
    """

    value: str = attrs.field(repr=False)
    expires_at: float | None = None
    extensions: Mapping[str, str] = attrs.field(factory=dict, converter=check_extensions)

    @value.validator
    def _check_value(self, _attr: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or not value or any(c.isspace() for c in value):
            raise ConfigError("an OAuth bearer token must be a non-empty string without whitespace")


def jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT (seconds since the epoch), None if ``token`` is not a JWT.

    Read without checking the signature: the broker checks it; the client only needs to know
    when to fetch the next token (the Java client reads ``exp`` the same way)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    exp = payload.get("exp") if isinstance(payload, dict) else None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


@attrs.define(repr=False)
class ClientCredentialsTokenProvider:
    """Fetches tokens from an OAuth 2 token endpoint with the client credentials grant.

    The flow of Java's ``OAuthBearerLoginCallbackHandler`` with ``sasl.oauthbearer.token.endpoint.url``
    (KIP-768): a POST of ``grant_type=client_credentials`` (and ``scope``), the client id and
    secret in HTTP basic authentication; the answer's ``access_token`` is the token and
    ``expires_in`` (else the JWT's ``exp``) its lifetime. ``extensions`` are sent with every
    token. Uses only the standard library (``urllib``); for anything else (mTLS to the endpoint,
    a cloud SDK), pass your own callable.

    ``ssl_context`` verifies the endpoint's certificate (default: the system's CAs).
    """

    token_endpoint_url: str
    client_id: str
    client_secret: str = attrs.field(repr=False)
    scope: str | None = None
    extensions: Mapping[str, str] = attrs.field(factory=dict, converter=check_extensions)
    timeout_s: float = 10.0
    ssl_context: Any = None

    def __attrs_post_init__(self) -> None:
        scheme = urllib.parse.urlsplit(self.token_endpoint_url).scheme
        if scheme not in ("https", "http"):
            raise ConfigError(
                f"token_endpoint_url must be an https:// URL, got scheme {scheme!r}")

    def __repr__(self) -> str:
        return (f"ClientCredentialsTokenProvider(token_endpoint_url={self.token_endpoint_url!r}, "
                f"client_id={self.client_id!r}, scope={self.scope!r})")

    def __call__(self) -> OAuthBearerToken:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        basic = base64.b64encode(
            f"{urllib.parse.quote(self.client_id)}:{urllib.parse.quote(self.client_secret)}".encode()
        ).decode()
        request = urllib.request.Request(
            self.token_endpoint_url, data=urllib.parse.urlencode(form).encode(), method="POST",
            headers={"Authorization": f"Basic {basic}", "Accept": "application/json",
                     "Content-Type": "application/x-www-form-urlencoded"})
        where = f"token endpoint {self.token_endpoint_url} (client id {self.client_id!r})"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=self.ssl_context) as answer:
                body = answer.read()
        except urllib.error.HTTPError as exc:
            raise SaslAuthenticationError(
                f"{where} refused the client credentials: HTTP {exc.code} {exc.reason}; check the "
                "client id and secret, and the scope") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SaslAuthenticationError(f"{where} could not be reached: {reason}") from None
        try:
            answer_json = json.loads(body)
            token = answer_json["access_token"]
        except (ValueError, KeyError, TypeError):
            raise SaslAuthenticationError(f"{where} answered without an access_token") from None
        lifetime = answer_json.get("expires_in")
        if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool) and lifetime > 0:
            expires_at: float | None = time.time() + float(lifetime)
        else:
            expires_at = jwt_expiry(token)
        return OAuthBearerToken(token, expires_at, self.extensions)
