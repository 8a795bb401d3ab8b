"""How the Sender's own connections secure themselves: the TLS context and the SASL mechanism, once.

Why a value object: every connection to every broker uses the same context and mechanism, and the
producer builds them when it starts (a missing CA file is a ``ConfigError`` from the constructor,
``tls_context.py``); each connection (:mod:`.connection`) only asks it for a :class:`~.tls_channel.TlsChannel`
and a fresh mechanism client per authentication.

:func:`channel_security` says None when the fast path does not speak the protocol's mechanism (GSSAPI):
then the producer keeps kafka-python's connections for every request (``client.py``).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import attrs

from .sasl_mechanisms import FAST_PATH_MECHANISMS, SaslMechanismClient, mechanism_factory
from .settings import ConnectionSettings

__all__ = ["ChannelSecurity", "channel_security"]

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@attrs.frozen(repr=False)
class ChannelSecurity:
    """The security protocol, the TLS context (SSL, SASL_SSL) and the SASL mechanism (SASL_*)."""

    protocol: str
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str | None = None
    new_sasl_client: Callable[[], SaslMechanismClient] | None = None

    def __repr__(self) -> str:
        return f"ChannelSecurity({self.protocol}, sasl_mechanism={self.sasl_mechanism})"


def channel_security(config: ConnectionSettings, ssl_context: ssl.SSLContext | None,
                     oauth_tokens: Any = None) -> ChannelSecurity | None:
    """The security of the Sender's own connections for ``config``; None when they cannot speak it."""
    protocol = config.security_protocol
    if protocol not in _PROTOCOLS:
        return None
    tls = protocol in ("SSL", "SASL_SSL")
    if tls and ssl_context is None:
        return None
    if not protocol.startswith("SASL_"):
        return ChannelSecurity(protocol, ssl_context if tls else None)
    mechanism = config.sasl_mechanism or "PLAIN"
    if mechanism not in FAST_PATH_MECHANISMS:
        return None
    if mechanism == "OAUTHBEARER" and oauth_tokens is None:
        return None
    factory = mechanism_factory(mechanism, username=config.sasl_plain_username,
                                password=config.sasl_plain_password, tokens=oauth_tokens)
    return ChannelSecurity(protocol, ssl_context if tls else None, mechanism, factory)
