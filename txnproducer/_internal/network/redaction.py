"""Keep credentials out of kafka-python's DEBUG logs.

kafka-python 3.0.12 logs every request it sends at DEBUG, on two loggers: the request's repr
(``SaslAuthenticateRequest(auth_bytes=b'alice\\x00alice\\x00<password>')`` for PLAIN; the bearer
token for OAUTHBEARER; the SCRAM proof) and the raw bytes on the wire. A user chasing a
connection problem turns DEBUG on first, so without this the password ends up in their log files.

Why a ``logging.Filter`` on those two loggers, rather than patching kafka-python's classes: it
changes no behaviour, touches nothing private, runs before every handler (including ones the
application adds later), and costs nothing unless DEBUG is enabled (the level check comes first).
It rewrites the record's arguments: a SASL request or response becomes ``<SaslAuthenticateRequest:
redacted>``, and raw wire bytes become ``<N bytes>`` (they may be a SASL exchange, and they hold
record payloads too). The filter is process-wide, so it also covers the application's own
kafka-python clients; that is deliberate (docs/guide/security.md).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

__all__ = ["install_secret_filter"]

LOGGERS = ("kafka.protocol.parser", "kafka.net.connection")
# SaslAuthenticateRequest/Response (v1 handshake) and SaslBytesRequest/Response (v0, unframed)
_SASL_TYPES = ("SaslAuthenticate", "SaslBytes")
_lock = threading.Lock()


class _Shown:
    """Stands in for a redacted argument; ``%s`` and ``%r`` both print the text, unquoted."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def _redact(arg: Any) -> Any:
    if isinstance(arg, (bytes, bytearray, memoryview)):
        return _Shown(f"<{len(arg)} bytes>")
    name = type(arg).__name__
    if name.startswith(_SASL_TYPES):
        return _Shown(f"<{name}: redacted>")
    return arg


class SecretFilter(logging.Filter):
    """Rewrites the arguments of kafka-python's request/response/wire DEBUG lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args:
            record.args = tuple(_redact(a) for a in args)
        elif isinstance(args, dict):
            record.args = {k: _redact(v) for k, v in args.items()}
        return True


def install_secret_filter() -> None:
    """Add the filter to kafka-python's loggers once per process (idempotent, thread-safe)."""
    with _lock:
        for name in LOGGERS:
            logger = logging.getLogger(name)
            if not any(isinstance(f, SecretFilter) for f in logger.filters):
                logger.addFilter(SecretFilter())
