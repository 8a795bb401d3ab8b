"""How our connections secure themselves: the TLS context and the SASL mechanism, once.

Why a value object: every connection to every broker uses the same context and mechanism, and the
producer builds them when it starts (a missing CA file is a ``ConfigError`` from the constructor,
``tls_context.py``); each connection (:mod:`.connection`) only asks it for a :class:`~.tls_channel.TlsChannel`
and a fresh mechanism client per authentication.

Every security protocol and SASL mechanism the settings accept is spoken here (the settings refuse the
others, and GSSAPI without its package, when they are made): there is no other path to fall back to.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import attrs

from txnproducer.errors import ConfigError

from .sasl_mechanisms import MECHANISMS, SaslMechanismClient, mechanism_factory
from .settings import ConnectionSettings

__all__ = ["ChannelSecurity", "channel_security"]

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@attrs.frozen(repr=False)
class ChannelSecurity:
    """The security protocol, the TLS context (SSL, SASL_SSL) and the SASL mechanism (SASL_*)."""

    protocol: str
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str | None = None
    new_sasl_client: Callable[[str], SaslMechanismClient] | None = None

    def __repr__(self) -> str:
        return f"ChannelSecurity({self.protocol}, sasl_mechanism={self.sasl_mechanism})"


def channel_security(config: ConnectionSettings, ssl_context: ssl.SSLContext | None,
                     oauth_tokens: Any = None) -> ChannelSecurity:
    """The security of our connections for ``config`` (a ConfigError for what they cannot speak: the
    settings' own checks refuse it first)."""
    protocol = config.security_protocol
    if protocol not in _PROTOCOLS:
        raise ConfigError(f"security_protocol {protocol!r} is not one of {', '.join(_PROTOCOLS)}")
    tls = protocol in ("SSL", "SASL_SSL")
    if tls and ssl_context is None:
        raise ConfigError(f"security_protocol {protocol!r} needs a TLS context")
    if not protocol.startswith("SASL_"):
        return ChannelSecurity(protocol, ssl_context if tls else None)
    mechanism = config.sasl_mechanism or "PLAIN"
    if mechanism not in MECHANISMS:
        raise ConfigError(f"sasl_mechanism {mechanism!r} is not one of {', '.join(sorted(MECHANISMS))}")
    if mechanism == "OAUTHBEARER" and oauth_tokens is None:
        raise ConfigError("sasl_mechanism OAUTHBEARER needs sasl_oauth_token_provider")
    factory = mechanism_factory(mechanism, username=config.sasl_plain_username,
                                password=config.sasl_plain_password, tokens=oauth_tokens,
                                kerberos_service=config.sasl_kerberos_service_name,
                                kerberos_domain=getattr(config, "sasl_kerberos_domain_name", None))
    return ChannelSecurity(protocol, ssl_context if tls else None, mechanism, factory)
