"""How a connection's setup ended, as exceptions both kinds of connection raise (a leaf: no imports of ours).

Why a leaf module: the Sender's own connections (``connection.py``) and kafka-python's
(``secured.py``) fail in the same ways, and the classifier (``auth_failures.py``) reads both; defining
the exceptions here keeps the three from importing each other.
"""

from __future__ import annotations

import kafka.errors as kerrors

__all__ = ["ClosedBeforeReady", "TlsHandshakeFailed"]


class TlsHandshakeFailed(kerrors.KafkaConnectionError):  # type: ignore[misc]
    """The connection failed before or during the TLS handshake (the cause is chained)."""


class ClosedBeforeReady(kerrors.KafkaConnectionError):  # type: ignore[misc]
    """The broker closed the connection after the TLS handshake (if any) but before it was ready: before
    answering ApiVersions or during the SASL exchange, with no error and no alert."""

