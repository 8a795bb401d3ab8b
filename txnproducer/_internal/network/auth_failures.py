"""What a failed connection means: an authentication error to raise now, or a transient failure.

kafka-python reports a connection's end as an exception whose useful part is buried (the
``ssl.SSLError`` in ``__cause__``/``__context__`` or in ``args[0]``; the broker's SASL message
after two class names). This module digs it out and says, in the user's terms, what happened and
which setting to change - the Java client's ``SslAuthenticationException`` /
``SaslAuthenticationException``, with advice.

What counts as authentication (fatal, see :class:`~txnproducer.errors.AuthenticationError`) and
what does not (retried with reconnect backoff, as any lost connection):

* SASL: the broker's SASL_AUTHENTICATION_FAILED answer, a mechanism it does not enable, an
  illegal SASL state, the OAuth token provider failing. Always authentication.
* TLS: certificate verification (untrusted CA, host name, expiry), the broker's handshake
  alerts (it wants a client certificate, or does not trust ours), a peer that does not speak TLS.
  Authentication.
* The broker closing a TLS or SASL connection before it was ready (end of stream, no alert, no
  answer): a restarting broker can do that once, so it is authentication only after
  ``EOF_FAILURES_BEFORE_FATAL`` such closes in a row with no successful connection to that
  broker in between. That is how a TLS 1.3 broker refuses a missing client certificate when its
  alert does not reach us, and how a TLS listener answers a client speaking plaintext.
* A plaintext connection (PLAINTEXT, SASL_PLAINTEXT) whose first answer is a TLS record: the listener
  speaks TLS (Kafka answers a plaintext request there with a TLS alert). Authentication, at once.
* Anything else (refused, reset, timed out): transient. It is kept as the broker's last error so
  that a call that times out can say why.

Messages never contain a secret: they are built from the user name, mechanism, file paths and
the broker's or OpenSSL's own text.
"""

from __future__ import annotations

import ssl
import threading
import time
from typing import Any

import kafka.errors as kerrors

from txnproducer import errors
from txnproducer._internal.network.connection_errors import (
    ClosedBeforeReady,
    NotReachable,
    TlsAnswerToPlaintext,
    TlsHandshakeFailed,
)
from txnproducer._internal.network.settings import ConnectionSettings

__all__ = ["EOF_FAILURES_BEFORE_FATAL", "ConnectionDiagnosis"]

EOF_FAILURES_BEFORE_FATAL = 3

# OpenSSL reasons (ssl.SSLError.reason) meaning the broker refused our side of the handshake
_BROKER_REFUSED_US = {
    "SSLV3_ALERT_HANDSHAKE_FAILURE", "TLSV13_ALERT_CERTIFICATE_REQUIRED", "SSLV3_ALERT_BAD_CERTIFICATE",
    "TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "TLSV1_ALERT_ACCESS_DENIED",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED", "SSLV3_ALERT_CERTIFICATE_REVOKED", "TLSV1_ALERT_DECRYPT_ERROR",
}
_NOT_TLS = {"WRONG_VERSION_NUMBER", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG",
            "HTTP_REQUEST"}
_PROTOCOL_MISMATCH = {"TLSV1_ALERT_PROTOCOL_VERSION", "UNSUPPORTED_PROTOCOL", "NO_PROTOCOLS_AVAILABLE",
                      "SSLV3_ALERT_ILLEGAL_PARAMETER", "NO_SHARED_CIPHER", "NO_CIPHERS_AVAILABLE",
                      "TLSV1_ALERT_INSUFFICIENT_SECURITY"}


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it wraps: causes, contexts and an exception passed as its first argument."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo and len(seen) < 10:
        cur = todo.pop(0)
        if cur in seen:
            continue
        seen.append(cur)
        for nxt in (cur.__cause__, cur.__context__, cur.args[0] if cur.args else None):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return seen


class ConnectionDiagnosis:
    """Classifies connection failures; remembers each broker's last one. Thread-safe."""

    def __init__(self, config: ConnectionSettings) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._eof_in_a_row: dict[Any, int] = {}
        self._last: dict[Any, str] = {}
        # node -> (monotonic time of the first of the failures in a row, their count): no TCP connection
        self._unreachable: dict[Any, tuple[float, int]] = {}

    def connected(self, node_id: Any) -> None:
        with self._lock:
            self._eof_in_a_row.pop(node_id, None)
            self._last.pop(node_id, None)
            self._unreachable.pop(node_id, None)

    def unreachable(self, nodes: list[Any]) -> tuple[float, int] | None:
        """(seconds, attempts) for which every one of ``nodes`` has failed to take a TCP connection
        in a row (refused, unreachable, unresolvable) - the shortest of them -, or None if one of them
        has not, or ever answered since."""
        now = time.monotonic()
        with self._lock:
            spans = [span for node in nodes if (span := self._unreachable.get(node)) is not None]
        if not nodes or len(spans) != len(nodes):
            return None
        return min(now - since for since, _ in spans), min(count for _, count in spans)

    def last_errors(self) -> str | None:
        """The last failure of each broker that has one, for a timeout's message."""
        with self._lock:
            if not self._last:
                return None
            return "; ".join(f"{node}: {text}" for node, text in list(self._last.items())[-3:])

    def failed(self, node_id: Any, broker: Any, exc: BaseException) -> errors.AuthenticationError | None:
        """The authentication error ``exc`` stands for, or None (a transient failure)."""
        where = self._where(node_id, broker)
        verdict = self._plaintext_to_tls(where, exc) or self._sasl(where, exc) or self._tls(where, exc)
        with self._lock:
            if verdict is None and self._closed_early(exc):
                count = self._eof_in_a_row.get(node_id, 0) + 1
                self._eof_in_a_row[node_id] = count
                if count >= EOF_FAILURES_BEFORE_FATAL:
                    verdict = self._closed_early_verdict(where, broker, exc, count)
            self._last[node_id] = _short(exc)
            if isinstance(exc, NotReachable):
                since, count = self._unreachable.get(node_id, (time.monotonic(), 0))
                self._unreachable[node_id] = (since, count + 1)
            else:
                self._unreachable.pop(node_id, None)
        return verdict

    def _closed_early(self, exc: BaseException) -> bool:
        """The broker closed the connection before it was ready (no error, no alert reached us)."""
        if self._config.security_protocol == "PLAINTEXT":
            return False  # nothing to authenticate: an ordinary lost connection
        for cur in _chain(exc):
            if isinstance(cur, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError,
                                ClosedBeforeReady)):
                return True
            if "socket disconnected" in str(cur):
                return True
        return False

    def _closed_early_verdict(self, where: str, broker: Any, exc: BaseException,
                              count: int) -> errors.AuthenticationError:
        config = self._config
        protocol = config.security_protocol
        address = self._address(broker)
        if isinstance(exc, TlsHandshakeFailed):
            return errors.SslAuthenticationError(
                f"TLS with {where}: the broker closed the connection during the TLS handshake {count} "
                f"times in a row. Is {address} a TLS listener (security_protocol={protocol!r})?")
        if protocol == "SSL":
            return errors.SslAuthenticationError(
                f"TLS with {where}: the broker closed the connection after the handshake, before "
                f"answering, {count} times in a row: it requires a client certificate it trusts "
                f"(a TLS 1.3 broker refuses a missing one this way): {self._client_cert_advice()}")
        if protocol == "SASL_SSL":
            return errors.SaslAuthenticationError(
                f"SASL authentication {self._who()} at {where}: the broker closed the connection "
                f"before answering, {count} times in a row, without saying why. It may require a client "
                f"certificate (ssl_certfile/ssl_keyfile), or have refused the credentials: "
                f"{self._sasl_advice()}")
        return errors.SaslAuthenticationError(
            f"SASL authentication {self._who()} at {where}: the broker closed the connection before "
            f"answering, {count} times in a row. Is {address} a TLS listener (then use SASL_SSL)? "
            f"Otherwise it refused the credentials: {self._sasl_advice()}")

    def _plaintext_to_tls(self, where: str, exc: BaseException) -> errors.AuthenticationError | None:
        """A plaintext connection answered with a TLS alert: the listener speaks TLS (what Kafka sends)."""
        if not any(isinstance(cur, TlsAnswerToPlaintext) for cur in _chain(exc)):
            return None
        protocol = self._config.security_protocol
        wanted = "SASL_SSL" if protocol == "SASL_PLAINTEXT" else "SSL"
        return errors.SslAuthenticationError(
            f"{where} speaks TLS, and security_protocol is {protocol!r}: the broker answered our first "
            f"request with a TLS alert. Set security_protocol={wanted!r} and ssl_cafile (the CA of the "
            "brokers' certificates), or connect to the cluster's plaintext listener.")

    # -- SASL ----------------------------------------------------------------------------------------

    def _sasl(self, where: str, exc: BaseException) -> errors.AuthenticationError | None:
        config = self._config
        if not config.security_protocol.startswith("SASL_"):
            return None
        who = self._who()
        for cur in _chain(exc):
            if isinstance(cur, kerrors.SaslAuthenticationFailedError):
                message = _broker_message(cur)
                return errors.SaslAuthenticationError(
                    f"SASL authentication {who} failed at {where}: {message}. {self._sasl_advice()}",
                    error_code=errors.SaslAuthenticationError.error_code)
            if isinstance(cur, kerrors.UnsupportedSaslMechanismError):
                return errors.SaslAuthenticationError(
                    f"SASL authentication {who} failed at {where}: the broker does not enable the "
                    f"mechanism {config.sasl_mechanism} on this listener. Use one of its "
                    "sasl.enabled.mechanisms (ask the cluster's operator), or the listener that "
                    "enables this one.", error_code=33)
            if isinstance(cur, kerrors.IllegalSaslStateError):
                return errors.SaslAuthenticationError(
                    f"SASL authentication {who} failed at {where}: the broker answered "
                    "ILLEGAL_SASL_STATE (is the listener SASL? does security_protocol match it?)",
                    error_code=34)
            if type(cur).__name__ == "TokenProviderFailed":
                return errors.SaslAuthenticationError(
                    f"SASL/OAUTHBEARER authentication at {where} could not start: {cur}. Check "
                    "sasl_oauth_token_provider (its endpoint, client id and secret).")
            module = type(cur).__module__ or ""
            if module.startswith("gssapi") or isinstance(cur, kerrors.KafkaConfigurationError):
                return errors.SaslAuthenticationError(
                    f"SASL authentication {who} failed at {where}: {type(cur).__name__}: {cur}")
        return None

    def _who(self) -> str:
        config = self._config
        mechanism = config.sasl_mechanism
        if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            return f"as {config.sasl_plain_username!r} with {mechanism}"
        if mechanism == "GSSAPI":
            return f"with GSSAPI (service {config.sasl_kerberos_service_name!r})"
        return f"with {mechanism}"

    def _sasl_advice(self) -> str:
        mechanism = self._config.sasl_mechanism
        if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            extra = (" SCRAM users must exist for this mechanism (kafka-configs.sh --alter "
                     "--add-config 'SCRAM-SHA-512=[password=...]' --entity-type users)."
                     if mechanism != "PLAIN" else "")
            return f"Check sasl_plain_username and sasl_plain_password.{extra}"
        if mechanism == "OAUTHBEARER":
            return ("Check the token sasl_oauth_token_provider returns: its audience, scope, expiry and "
                    "any extensions the broker requires.")
        return "Check the Kerberos ticket (klist) and sasl_kerberos_service_name."

    # -- TLS -----------------------------------------------------------------------------------------

    def _tls(self, where: str, exc: BaseException) -> errors.AuthenticationError | None:
        config = self._config
        if config.security_protocol not in ("SSL", "SASL_SSL"):
            return None
        for cur in _chain(exc):
            if isinstance(cur, ssl.SSLCertVerificationError):
                return errors.SslAuthenticationError(f"TLS with {where}: {self._verify_failure(cur)}")
            if isinstance(cur, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)):
                continue
            if isinstance(cur, ssl.SSLError):
                reason = (cur.reason or "").upper()
                if reason in _BROKER_REFUSED_US:
                    return errors.SslAuthenticationError(
                        f"TLS with {where}: the broker refused our side of the handshake ({reason}). "
                        f"It requires a client certificate it trusts (mutual TLS): "
                        f"{self._client_cert_advice()}")
                if reason in _NOT_TLS:
                    return errors.SslAuthenticationError(
                        f"TLS with {where}: the listener does not speak TLS ({reason}). Connect to "
                        "the cluster's TLS listener, or set security_protocol to PLAINTEXT / "
                        "SASL_PLAINTEXT if this one is meant to be used without TLS.")
                if reason in _PROTOCOL_MISMATCH:
                    return errors.SslAuthenticationError(
                        f"TLS with {where}: no TLS version or cipher both sides accept ({reason}). "
                        "Check ssl_ciphers / ssl_context against the broker's ssl.enabled.protocols "
                        "and ssl.cipher.suites (TLS 1.2 is the minimum).")
                if reason == "CERTIFICATE_VERIFY_FAILED":
                    return errors.SslAuthenticationError(
                        f"TLS with {where}: the broker's certificate could not be verified ({cur}). "
                        f"{self._ca_advice()}")
        return None

    def _verify_failure(self, err: ssl.SSLCertVerificationError) -> str:
        text = err.verify_message or str(err)
        lowered = text.lower()
        if "mismatch" in lowered:
            return (f"the broker's certificate does not name the host we connected to ({text}). "
                    "Connect by a host name the certificate lists in its subjectAltName (the "
                    "bootstrap servers and the brokers' advertised.listeners must use it), or get a "
                    "certificate for this name; ssl_check_hostname=False turns the check off "
                    "(not recommended: anyone on the path could then pose as the broker).")
        if "expired" in lowered:
            return (f"the broker's certificate has expired ({text}); the cluster's operator must "
                    "renew it.")
        if "revoked" in lowered:
            return f"the broker's certificate is revoked ({text}, per ssl_crlfile)."
        return f"the broker's certificate is not trusted ({text}). {self._ca_advice()}"

    def _ca_advice(self) -> str:
        config = self._config
        if config.ssl_context is not None:
            return "Load the CA that signed the brokers' certificates into ssl_context."
        if config.ssl_cafile:
            return (f"ssl_cafile ({config.ssl_cafile}) does not hold the CA that signed the brokers' "
                    "certificates: point it at that CA's PEM file.")
        return ("No ssl_cafile is set, so only the system's CAs are trusted: set ssl_cafile to the PEM "
                "file of the CA that signed the brokers' certificates.")

    def _client_cert_advice(self) -> str:
        config = self._config
        if config.ssl_certfile:
            return (f"the certificate in ssl_certfile ({config.ssl_certfile}) is not accepted by the "
                    "broker's trust store; have it signed by a CA the brokers trust.")
        return "set ssl_certfile and ssl_keyfile (PEM; ssl_password if the key is encrypted)."

    # -- helpers -------------------------------------------------------------------------------------

    @staticmethod
    def _address(broker: Any) -> str:
        if broker is None:
            return "the broker"
        return f"{broker.host}:{broker.port}"

    def _where(self, node_id: Any, broker: Any) -> str:
        name = f"bootstrap server {self._address(broker)}" if str(node_id).startswith("bootstrap") \
            else f"broker {node_id} ({self._address(broker)})"
        return name


def _broker_message(err: BaseException) -> str:
    """The broker's own text of a SaslAuthenticate error (kafka-python prefixes two class names)."""
    text = str(err.args[0]) if err.args else ""
    prefix = "SaslAuthenticationFailedError: "
    while text.startswith(prefix):
        text = text[len(prefix):]
    return text.strip() or "authentication failed"


def _short(exc: BaseException) -> str:
    """The failure as kafka-python reported it (its own message; the cause when it has none)."""
    text = str(exc)
    if not text and exc.__cause__ is not None:
        text = str(exc.__cause__)
    name = type(exc).__name__
    return (text if text.startswith(name) else f"{name}: {text or 'no details'}")[:300]
