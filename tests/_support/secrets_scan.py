"""Capture everything a secrets scan must read: every logger at DEBUG, reprs, metrics, error chains.

Shared by the mock and broker tiers' "no secret leaves" tests: each runs its secured scenarios inside
:func:`debug_everywhere` and then searches the captured lines, plus what :func:`everything_about` and
:func:`describe_chain` collected, for every secret it used.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["DebugCapture", "debug_everywhere", "describe_chain", "everything_about"]


class DebugCapture(logging.Handler):
    """Every record that reaches the root logger, formatted with its logger name and level."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def debug_everywhere() -> Iterator[DebugCapture]:
    """DEBUG for the root logger and every logger that exists (kafka-python's, ours, the mock's)."""
    handler = DebugCapture()
    root = logging.getLogger()
    saved = {name: lg.level for name, lg in logging.root.manager.loggerDict.items()
             if isinstance(lg, logging.Logger)}
    saved_root = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for name in saved:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(saved_root)
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def everything_about(p: Any, seen: list[str]) -> None:
    """A producer's repr, its config's repr and its metrics."""
    seen.extend([repr(p), repr(p.config), str(p.metrics())])


def describe_chain(exc: BaseException, seen: list[str]) -> None:
    """str and repr of an exception and of every cause or context behind it."""
    cur: BaseException | None = exc
    while cur is not None:
        seen.extend([str(cur), repr(cur)])
        cur = cur.__cause__ or cur.__context__
