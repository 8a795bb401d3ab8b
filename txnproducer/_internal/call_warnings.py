"""Calls that work but are almost certainly a mistake: said once per producer, at WARNING.

Why warnings and not errors: each of these has a legitimate use, so refusing the call would break
code that is right; staying silent would let a wrong one cost hours. Two so far:

* a call ``timeout`` (seconds) of 1000 or more that is longer than every bound of the producer
  (``max_block_ms``, ``delivery_timeout_ms``, ``transaction_timeout_ms``): almost certainly
  milliseconds - ``commit_transaction(timeout=5000)`` waits up to 83 minutes. Legitimate when
  computed from a large setting (``operation_timeout_ms / 1000``). Waiting longer never needs it: a
  call that timed out goes on, and calling it again waits for the same outcome.
* ``send_offsets_to_transaction`` with a bare group id: it commits, but a zombie consumer of the
  group is not fenced (KIP-447); the Java client deprecated that overload. A DeprecationWarning at
  the caller's line as well, for test suites.

May import: nothing of txnproducer (the producer hands it its logger and settings).
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["IMPLAUSIBLE_TIMEOUT_S", "CallWarnings"]

#: a call's timeout (seconds) from this size on, and longer than all of a producer's own bounds, is logged
IMPLAUSIBLE_TIMEOUT_S = 1000.0


class CallWarnings:
    """One producer's once-only warnings (see the module docstring)."""

    def __init__(self, logger: Any, longest_bound_ms: int) -> None:
        self._log = logger
        self._longest_bound_s = longest_bound_ms / 1000
        self._said: set[str] = set()

    def timeout(self, timeout: float) -> None:
        """``timeout`` (seconds) was passed to a call: warn if it can only be milliseconds."""
        if timeout < IMPLAUSIBLE_TIMEOUT_S or timeout <= self._longest_bound_s or not self._first("timeout"):
            return
        self._log.warning("txn.implausible_timeout", timeout_s=timeout, minutes=round(timeout / 60),
                          longest_bound_s=self._longest_bound_s, meant_s=timeout / 1000,
                          hint="call timeouts are seconds; settings (*_ms) are milliseconds")

    def bare_group_id(self, group_id: str, stacklevel: int) -> None:
        """Offsets were sent for a bare group id (``stacklevel``: where the application's call is)."""
        if not self._first("bare_group_id"):
            return
        warnings.warn(
            f"send_offsets_to_transaction() was given only the group id {group_id!r}: a zombie consumer of "
            "that group (one the group has rebalanced away from) is not fenced, so its offsets can overwrite "
            "its successor's. Pass the consumer (or its group_metadata()) instead; the bare group id is "
            "deprecated, as in the Java client", DeprecationWarning, stacklevel=stacklevel + 1)
        self._log.warning("txn.offsets_without_group_metadata", group_id=group_id)

    def _first(self, what: str) -> bool:
        if what in self._said:
            return False
        self._said.add(what)
        return True
