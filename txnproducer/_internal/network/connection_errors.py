"""How a connection's setup ended, as exceptions (a leaf: no imports of ours).

Why a leaf module: the connection (``connection.py``, ``connection_setup.py``) raises them and the
classifier (``auth_failures.py``) reads them; defining them here keeps the two from importing each other.
"""

from __future__ import annotations

import kafka.errors as kerrors

__all__ = ["BrokerSilent", "ClosedBeforeReady", "CoordinatorMoved", "NotReachable", "TlsAnswerToPlaintext",
           "TlsHandshakeFailed", "looks_like_tls"]

_TLS_ALERT, _TLS_HANDSHAKE = 0x15, 0x16


class NotReachable(kerrors.KafkaConnectionError):  # type: ignore[misc]
    """No TCP connection to the broker: its name did not resolve, or every address refused or could not
    be reached. Nothing listens there (yet): unlike a connection that broke, nothing was said to it."""


class TlsHandshakeFailed(kerrors.KafkaConnectionError):  # type: ignore[misc]
    """The connection failed before or during the TLS handshake (the cause is chained)."""


class ClosedBeforeReady(kerrors.KafkaConnectionError):  # type: ignore[misc]
    """The broker closed the connection after the TLS handshake (if any) but before it was ready: before
    answering ApiVersions or during the SASL exchange, with no error and no alert."""


class TlsAnswerToPlaintext(kerrors.KafkaConnectionError):  # type: ignore[misc]
    """A plaintext connection's first answer was a TLS record: the listener speaks TLS."""


class CoordinatorMoved(kerrors.KafkaConnectionError):  # type: ignore[misc]
    """A request to a coordinator was given up unanswered: another broker coordinates its key now (the
    cluster fenced the silent one, or moved the key). The request may still be handled and answered by
    the old broker later; that answer is dropped. Carries the new coordinator, as FindCoordinator named
    it, so that the request goes there at once (``grey_failures.py``)."""

    def __init__(self, message: str, *, key_type: int, key: str, node_id: int, host: str, port: int) -> None:
        super().__init__(message)
        self.key_type = key_type
        self.key = key
        self.node_id = node_id
        self.host = host
        self.port = port


class BrokerSilent(kerrors.KafkaConnectionError):  # type: ignore[misc]
    """A request any broker can answer (FindCoordinator, Metadata) was given up: its broker left it
    unanswered while others answer. Ask another broker (``grey_failures.py``)."""


def looks_like_tls(data: bytes | bytearray | memoryview) -> bool:
    """True when ``data`` starts like a TLS record (an alert or a handshake, TLS 1.0-1.3 framing).

    What a Kafka TLS listener answers to a plaintext request: Kafka 4.1 sends the alert
    ``15 03 03 00 02 02 50`` (fatal, internal_error) and closes. As a Kafka frame those bytes would be
    a size of 352,518,912: no answer of ours starts with them.
    """
    return len(data) >= 3 and data[0] in (_TLS_ALERT, _TLS_HANDSHAKE) and data[1] == 3 and data[2] <= 4
