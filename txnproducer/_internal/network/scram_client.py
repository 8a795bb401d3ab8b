"""SCRAM-SHA-256 and SCRAM-SHA-512, client side (RFC 5802, RFC 7677), as Kafka's ``ScramSaslClient`` runs it.

Why our own rather than kafka-python's ``ScramClient`` (which could be driven without its connection): the
exchange is three messages and a few HMACs on the standard library, and kafka-python 3.0.12's has small
faults a client of secured clusters should not inherit: a user name with ``,`` or ``=`` is sent unescaped
(RFC 5802 wants ``=2C`` / ``=3D``, as Kafka's ``ScramFormatter`` writes them), a server-final ``e=<error>``
surfaces as a ``KeyError``, the server's signature is compared with ``!=`` instead of in constant time, and
the iteration count is not checked against Kafka's minimum of 4096. The nonce is 24 random bytes
(``secrets``), printable and without ``,``.

The exchange (one :class:`ScramClient` per authentication):

1. client-first ``n,,n=<user>,r=<client nonce>``;
2. the broker's server-first ``r=<client nonce><server nonce>,s=<salt>,i=<iterations>``: check the nonce
   and the iterations, derive SaltedPassword (PBKDF2), answer client-final
   ``c=biws,r=<nonce>,p=<ClientKey XOR HMAC(StoredKey, AuthMessage)>``;
3. the broker's server-final ``v=<ServerSignature>``: check it (the broker knew the password too), or
   ``e=<error>``: the broker refused.

Failures raise :class:`ScramClientError`, whose text never carries the password, a key or a proof.
Simplifications, as Kafka's client: no channel binding (``n,,``), no SASLprep, no authorization id.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

__all__ = ["MAX_ITERATIONS", "MIN_ITERATIONS", "SCRAM_MECHANISMS", "ScramClient", "ScramClientError"]

#: mechanism -> hashlib name
SCRAM_MECHANISMS: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: Kafka's minimum for both mechanisms (``ScramMechanism.minIterations``)
MIN_ITERATIONS = 4096
#: above this a server-first is refused: PBKDF2 would hold the network thread for seconds
MAX_ITERATIONS = 1_000_000
_GS2_HEADER = "n,,"


class ScramClientError(Exception):
    """The exchange failed on the client's side or the broker answered ``e=``; never carries a secret."""


def _sasl_name(value: str) -> str:
    """RFC 5802 saslname: ``=`` as ``=3D`` and ``,`` as ``=2C``."""
    return value.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ScramClientError("the broker's SCRAM message is malformed")
        out.setdefault(key, value)
    return out


class ScramClient:
    """One SCRAM authentication, client side; see the module docstring for the order of the calls."""

    def __init__(self, mechanism: str, username: str, password: str, *, nonce: str | None = None) -> None:
        """``nonce`` is for tests (RFC 7677's example); by default 24 random bytes."""
        if mechanism not in SCRAM_MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {mechanism!r}")
        self.mechanism = mechanism
        self._digest = SCRAM_MECHANISMS[mechanism]
        self._password = password.encode("utf-8")
        self._nonce = nonce or base64.urlsafe_b64encode(secrets.token_bytes(24)).decode("ascii")
        self._client_first_bare = f"n={_sasl_name(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def __repr__(self) -> str:
        return f"ScramClient({self.mechanism}, <credentials not shown>)"

    def first_message(self) -> bytes:
        """client-first-message."""
        return (_GS2_HEADER + self._client_first_bare).encode("utf-8")

    def final_message(self, server_first: bytes) -> bytes:
        """client-final-message answering the broker's server-first-message."""
        text = _decode(server_first)
        attributes = _attributes(text)
        if "e" in attributes:
            raise ScramClientError(f"the broker refused the SCRAM exchange: {attributes['e']}")
        nonce, salt_text, iterations_text = attributes.get("r"), attributes.get("s"), attributes.get("i")
        if nonce is None or salt_text is None or iterations_text is None:
            raise ScramClientError("the broker's server-first-message lacks r=, s= or i=")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise ScramClientError("the broker's SCRAM nonce does not extend ours")
        try:
            salt = base64.b64decode(salt_text, validate=True)
            iterations = int(iterations_text)
        except (binascii.Error, ValueError):
            raise ScramClientError("the broker's salt or iteration count is malformed") from None
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ScramClientError(f"the broker asked for {iterations} SCRAM iterations; accepted: "
                                   f"{MIN_ITERATIONS} to {MAX_ITERATIONS}")
        digest = self._digest
        salted = hashlib.pbkdf2_hmac(digest, self._password, salt, iterations)
        client_key = hmac.new(salted, b"Client Key", digest).digest()
        stored_key = hashlib.new(digest, client_key).digest()
        channel_binding = base64.b64encode(_GS2_HEADER.encode("ascii")).decode("ascii")
        without_proof = f"c={channel_binding},r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_signature = hmac.new(stored_key, auth_message, digest).digest()
        proof = bytes(k ^ s for k, s in zip(client_key, client_signature, strict=True))
        server_key = hmac.new(salted, b"Server Key", digest).digest()
        self._server_signature = hmac.new(server_key, auth_message, digest).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode('ascii')}".encode("ascii")

    def verify(self, server_final: bytes) -> None:
        """Check the broker's server-final-message: it proves the broker knew the password too."""
        expected = self._server_signature
        if expected is None:
            raise ScramClientError("server-final-message before server-first-message")
        attributes = _attributes(_decode(server_final))
        if "e" in attributes:
            raise ScramClientError(f"the broker refused the SCRAM exchange: {attributes['e']}")
        try:
            signature = base64.b64decode(attributes.get("v", ""), validate=True)
        except (binascii.Error, ValueError):
            raise ScramClientError("the broker's server signature is malformed") from None
        if not hmac.compare_digest(signature, expected):
            raise ScramClientError("the broker's SCRAM server signature does not match: it does not know "
                                   "this user's credentials (or is not the broker it claims to be)")


def _decode(message: bytes) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramClientError("the broker's SCRAM message is not UTF-8") from None
