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


class _LevelGated:
    """A structlog bound logger behind its stdlib logger's level check (``isEnabledFor`` is
    cached by ``logging``, so a disabled event costs one call)."""

    __slots__ = ("_bound", "_std")

    def __init__(self, std: logging.Logger, bound: Any) -> None:
        self._std = std
        self._bound = bound

    def bind(self, **fields: Any) -> _LevelGated:
        return _LevelGated(self._std, self._bound.bind(**fields))

    def debug(self, event: str, **fields: Any) -> None:
        if self._std.isEnabledFor(logging.DEBUG):
            self._bound.debug(event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        if self._std.isEnabledFor(logging.INFO):
            self._bound.info(event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        if self._std.isEnabledFor(logging.WARNING):
            self._bound.warning(event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        if self._std.isEnabledFor(logging.ERROR):
            self._bound.error(event, **fields)

    def exception(self, event: str, **fields: Any) -> None:
        if self._std.isEnabledFor(logging.ERROR):
            self._bound.exception(event, **fields)
