"""Loggers for library code: structlog events that stay quiet unless the application asks.

Why not plain ``structlog.get_logger()``: structlog's default configuration prints every event,
debug included, to stdout. A library must not write to an application's stdout, so unless the
application has configured structlog itself (then its pipeline applies unchanged), events go
through the standard ``logging`` module under the ``txnproducer`` logger hierarchy, where the
usual level and handler settings decide what is shown (by default: warnings and errors only).
Disabled levels are dropped before any rendering, so debug events on busy paths cost little.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog


def get_logger(name: str) -> Any:
    """A structlog logger for component ``name`` (a dotted name under ``txnproducer``)."""
    if structlog.is_configured():
        return structlog.get_logger(name)
    return structlog.wrap_logger(
        logging.getLogger(name),
        wrapper_class=structlog.stdlib.BoundLogger,
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(key_order=["event"], sort_keys=True),
        ],
    )
