"""Loggers for library code: structlog events that stay quiet unless the application asks.

Why not plain ``structlog.get_logger()``: structlog's default configuration prints every event,
debug included, to stdout. A library must not write to an application's stdout, so unless the
application has configured structlog itself (then its pipeline applies unchanged), events go
through the standard ``logging`` module under the ``txnproducer`` logger hierarchy, where the
usual level and handler settings decide what is shown (by default: warnings and errors only).
Disabled levels are dropped before structlog sees the event: a structlog bound logger runs its
whole processor chain (about 6 us) even for a level its stdlib logger ignores, and the Sender
and the transaction manager log debug events on every transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import structlog


def get_logger(name: str) -> Any:
    """A structlog logger for component ``name`` (a dotted name under ``txnproducer``)."""
    if structlog.is_configured():
        return structlog.get_logger(name)
    std = logging.getLogger(name)
    return _LevelGated(std, structlog.wrap_logger(
        std,
        wrapper_class=structlog.stdlib.BoundLogger,
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
        ],
    ))


def debug_enabled(logger: Any) -> bool:
    """Whether ``logger`` would render a debug event: lets a path run on every transaction skip
    building the event's fields, so that a disabled event costs this one check. A logger of an
    application that configured structlog itself is always asked (its pipeline decides)."""
    if type(logger) is _LevelGated:
        return logger._std.isEnabledFor(logging.DEBUG)
    return True


def _gated(level: int, name: str) -> Callable[..., None]:
    """A logger method that asks the stdlib logger's level before structlog renders anything."""

    def method(self: _LevelGated, event: str, **fields: Any) -> None:
        if self._std.isEnabledFor(level):
            getattr(self._bound, name)(event, **fields)

    method.__name__ = name
    return method


class _LevelGated:
    """A structlog bound logger behind its stdlib logger's level check (``isEnabledFor`` is
    cached by ``logging``, so a disabled event costs one call)."""

    __slots__ = ("_bound", "_std")

    def __init__(self, std: logging.Logger, bound: Any) -> None:
        self._std = std
        self._bound = bound

    def bind(self, **fields: Any) -> _LevelGated:
        return _LevelGated(self._std, self._bound.bind(**fields))

    debug = _gated(logging.DEBUG, "debug")
    info = _gated(logging.INFO, "info")
    warning = _gated(logging.WARNING, "warning")
    error = _gated(logging.ERROR, "error")
    exception = _gated(logging.ERROR, "exception")
