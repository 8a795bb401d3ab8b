"""SASL/GSSAPI (Kerberos) on our connections, with the ``gssapi`` package (the ``gssapi`` extra).

Why here and not kafka-python's: every request now goes over our own connections (:mod:`.connection`),
GSSAPI included, so that a Kerberos producer has the same bounds, errors and re-authentication (KIP-368:
the broker's session ends with the ticket) as every other mechanism. ``gssapi`` is imported when the
first connection authenticates; a producer configured for GSSAPI without it is refused when it is made
(``ConfigError``: ``pip install gssapi``), never sent down another path.

The exchange is RFC 4752's, as the Java client's (the JDK's ``GssKrb5Client``) runs it inside
SaslAuthenticate:

1. the security context is established with the service ``<sasl_kerberos_service_name>@<host>`` (the
   host is ``sasl_kerberos_domain_name`` when set, else the broker's host as connected to), each of the
   broker's tokens answered with the context's next one (an empty answer once the context is complete);
2. the broker sends a wrapped 4-byte message: the security layers it offers and its largest buffer;
3. we answer, wrapped: layer 1 (no security layer: TLS, when wanted, protects the connection), the same
   buffer size, and our principal as the authorization id;
4. the broker's empty answer ends the exchange.

The credentials are the process's Kerberos ones (``kinit`` or a keytab through ``KRB5_CLIENT_KTNAME``);
nothing here reads or logs a secret.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["GssapiClient", "GssapiError"]

_NO_SECURITY_LAYER = 1


class GssapiError(Exception):
    """The Kerberos exchange could not go on (a malformed answer of the broker)."""


class GssapiClient:
    """One GSSAPI authentication (see the module docstring)."""

    name = "GSSAPI"

    def __init__(self, service: str, host: str) -> None:
        self._service = service
        self._host = host
        self._context: Any = None
        self._layer_sent = False

    def __repr__(self) -> str:
        return f"GSSAPI({self._service}@{self._host})"

    def initial_token(self) -> bytes:
        gssapi = importlib.import_module("gssapi")
        target = gssapi.Name(f"{self._service}@{self._host}", name_type=gssapi.NameType.hostbased_service)
        self._context = gssapi.SecurityContext(name=target, usage="initiate")
        return bytes(self._context.step() or b"")

    def respond(self, challenge: bytes) -> bytes | None:
        context = self._context
        assert context is not None
        if not context.complete:
            return bytes(context.step(challenge) or b"")
        if self._layer_sent:
            return None  # the broker's last, empty answer: authenticated
        offer = context.unwrap(challenge).message
        if len(offer) != 4:
            raise GssapiError(f"the broker's security-layer message has {len(offer)} bytes, not 4")
        principal = str(context.initiator_name).encode()
        reply = bytes([_NO_SECURITY_LAYER]) + bytes(offer[1:4]) + principal
        self._layer_sent = True
        return bytes(context.wrap(reply, False).message)
