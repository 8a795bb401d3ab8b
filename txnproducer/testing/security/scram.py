"""SCRAM-SHA-256 and SCRAM-SHA-512, server side (RFC 5802, RFC 7677), as Kafka's ``ScramSaslServer`` runs it.

Why written here rather than taken from a library: the exchange is four messages and a few HMACs, the
standard library has every primitive (``hashlib.pbkdf2_hmac``, ``hmac``, ``secrets``), and a test double
for authentication should have no dependency that could itself be what is wrong.

The exchange (one :class:`ScramExchange` per authentication attempt):

1. client-first ``n,[a=authzid],n=<user>,r=<client nonce>[,ext...]``: look the user up; answer
   server-first ``r=<client nonce><server nonce>,s=<salt, base64>,i=<iterations>``;
2. client-final ``c=<base64 of the gs2 header>,r=<both nonces>,p=<client proof, base64>``: check the nonce,
   the channel binding and the proof (``H(proof XOR HMAC(StoredKey, AuthMessage)) == StoredKey``); answer
   server-final ``v=<server signature, base64>``.

Only the salted credential (:class:`ScramCredential`: salt, iterations, StoredKey, ServerKey) is kept, as
Kafka stores it; the password is used once, to derive it. Failures raise :class:`ScramError` with a reason
that names what was wrong and never carries a secret (no password, proof or key); what the *client* is
told is decided by the caller (``sasl.py``), as Kafka answers most SCRAM failures with one generic message.

Simplifications: no channel binding (``p=`` is refused, ``y`` and ``n`` accepted), no delegation tokens
(Kafka's ``tokenauth`` extension is ignored like any other extension), no SASLprep of names and passwords.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable

import attrs

__all__ = ["ITERATIONS", "MECHANISMS", "ScramCredential", "ScramError", "ScramExchange"]

#: mechanism -> hashlib name
MECHANISMS: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: Kafka's minimum (and kafka-configs.sh's default) iteration count for both mechanisms
ITERATIONS = 4096


class ScramError(Exception):
    """The exchange failed; ``str(error)`` says why, without any secret."""


@attrs.frozen(repr=False)
class ScramCredential:
    """What the server keeps of a user's password for one mechanism (RFC 5802 section 3)."""

    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_password(
        cls, mechanism: str, password: str, salt: bytes | None = None, iterations: int = ITERATIONS
    ) -> ScramCredential:
        """Derive the credential: SaltedPassword = PBKDF2-HMAC(password, salt, iterations)."""
        digest = MECHANISMS[mechanism]
        salt = secrets.token_bytes(24) if salt is None else salt
        salted = hashlib.pbkdf2_hmac(digest, password.encode("utf-8"), salt, iterations)
        client_key = _hmac(digest, salted, b"Client Key")
        return cls(mechanism, salt, iterations, hashlib.new(digest, client_key).digest(),
                   _hmac(digest, salted, b"Server Key"))

    def __repr__(self) -> str:  # the keys let anyone who sees them log in: never print them
        return f"ScramCredential({self.mechanism}, iterations={self.iterations})"


def _hmac(digest: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, digest).digest()


def _attributes(message: str) -> list[tuple[str, str]]:
    """``"n=u,r=x"`` -> ``[("n", "u"), ("r", "x")]``; ScramError if an attribute is malformed."""
    out = []
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ScramError("malformed SCRAM message")
        out.append((key, value))
    return out


def _sasl_name(value: str) -> str:
    """RFC 5802 saslname: ``=2C`` is ``,`` and ``=3D`` is ``=``; any other ``=`` is an error."""
    if "=" in value.replace("=2C", "").replace("=3D", ""):
        raise ScramError("malformed user name")
    return value.replace("=2C", ",").replace("=3D", "=")


class ScramExchange:
    """The server side of one SCRAM authentication; feed it the client's messages in order.

    ``credentials(user)`` returns the user's :class:`ScramCredential` for this mechanism, or None.
    After :meth:`final` succeeds, :attr:`complete` is True and :attr:`username` is who authenticated.
    """

    def __init__(self, mechanism: str, credentials: Callable[[str], ScramCredential | None],
                 server_nonce: str | None = None) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {mechanism!r}")
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism]
        self._credentials = credentials
        self._server_nonce = server_nonce or secrets.token_urlsafe(18)
        self.username: str | None = None
        self.authorization_id = ""
        self.complete = False
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def first(self, client_first: bytes) -> bytes:
        """Answer client-first with server-first; ScramError for a malformed message or an unknown user."""
        text = _decode(client_first)
        gs2_flag, sep, rest = text.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not (sep and sep2) or gs2_flag not in ("n", "y"):
            raise ScramError("unsupported or malformed gs2 header (channel binding is not supported)")
        if authzid and not authzid.startswith("a="):
            raise ScramError("malformed authorization id")
        attributes = _attributes(bare)
        if len(attributes) < 2 or attributes[0][0] != "n" or attributes[1][0] != "r" or not attributes[1][1]:
            raise ScramError("client-first-message must start with n=<user>,r=<nonce>")
        self.username = _sasl_name(attributes[0][1])
        self.authorization_id = _sasl_name(authzid[2:]) if authzid else ""
        self._credential = self._credentials(self.username)
        if self._credential is None:
            raise ScramError(f"unknown user {self.username!r}")
        self._gs2_header = f"{gs2_flag},{authzid},"
        self._client_first_bare = bare
        self._nonce = attributes[1][1] + self._server_nonce
        salt = base64.b64encode(self._credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        return self._server_first.encode("ascii")

    def final(self, client_final: bytes) -> bytes:
        """Check client-final's nonce, channel binding and proof; answer server-final (the signature)."""
        credential = self._credential
        if credential is None or self.complete:
            raise ScramError("client-final-message out of order")
        text = _decode(client_final)
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final-message has no proof")
        attributes = dict(_attributes(without_proof))
        if attributes.get("r") != self._nonce:
            raise ScramError("Invalid client nonce in the final client message.")
        if attributes.get("c") != base64.b64encode(self._gs2_header.encode("utf-8")).decode("ascii"):
            raise ScramError("channel binding does not match the client-first-message")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ScramError("client proof is not base64") from exc
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        client_signature = _hmac(self._digest, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise ScramError("Invalid client credentials")
        client_key = bytes(p ^ s for p, s in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._digest, client_key).digest(), credential.stored_key):
            raise ScramError("Invalid client credentials")
        self.complete = True
        signature = _hmac(self._digest, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(signature)


def _decode(message: bytes) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScramError("SCRAM message is not UTF-8") from exc
