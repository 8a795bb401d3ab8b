"""What every part of the producer's telemetry shares: error types, broker addresses, and the guard.

Why a guard on every hook: the hooks run inside the producer (under the transaction manager's lock, on
the Sender thread, in ``send()``). Telemetry must never be the reason a transaction fails or the Sender
stops, so each hook catches what it raises, logs it once (``txn.telemetry_failed``) and goes on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol.error_codes import error_name

__all__ = ["broker_address", "error_type", "first_error_code", "guarded"]

_log = get_logger("txnproducer.otel")
_F = TypeVar("_F", bound=Callable[..., Any])
_reported: set[str] = set()


def guarded(fn: _F) -> _F:
    """``fn`` that logs (once per function) and swallows any exception instead of raising it."""
    name = fn.__qualname__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception:
            if name not in _reported:
                _reported.add(name)
                _log.warning("txn.telemetry_failed", hook=name, exc_info=True)
            return None

    return cast(_F, wrapper)


def error_type(exc: BaseException) -> str:
    """``error.type`` for ``exc``: Kafka's name of its error code when it came from a broker answer
    (``PRODUCER_FENCED``, the conventions' example ``KAFKA_STORAGE_ERROR``), else its class's
    qualified name (``txnproducer.errors.DeliveryTimeoutError``)."""
    code = getattr(exc, "error_code", None)
    if isinstance(code, int) and code > 0:
        return error_name(code)
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def first_error_code(answer: Any) -> int:
    """The first non-zero ``*error_code`` anywhere in a decoded answer (0: none). Coordinator answers
    put theirs at the top (EndTxn, InitProducerId) or per partition (TxnOffsetCommit, AddPartitionsToTxn)."""
    try:
        data = answer.to_dict() if hasattr(answer, "to_dict") else vars(answer)
    except Exception:
        return int(getattr(answer, "error_code", 0) or 0)
    return _walk(data, 0)


def _walk(node: Any, depth: int) -> int:
    if depth > 6:
        return 0
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(key, str) and key.endswith("error_code") and isinstance(value, int) and value:
                return value
        for value in node.values():
            if isinstance(value, (Mapping, list, tuple)):
                found = _walk(value, depth + 1)
                if found:
                    return found
    elif isinstance(node, (list, tuple)):
        for value in node:
            found = _walk(value, depth + 1)
            if found:
                return found
    return 0


def broker_address(cluster: Any, node: Any) -> tuple[str, int] | None:
    """(host, port) of broker ``node`` from the client's cluster metadata, or None if unknown."""
    if node is None or cluster is None:
        return None
    try:
        meta = cluster.broker_metadata(node)
    except Exception:
        return None
    if meta is None:
        return None
    host = getattr(meta, "host", None)
    port = getattr(meta, "port", None)
    if not isinstance(host, str) or not isinstance(port, int):
        return None
    return host, port
