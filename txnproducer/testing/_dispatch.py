"""Request-handler registry shared by the MockCluster's modules.

Each module that answers an API (broker data path, transaction coordinator, group coordinator)
registers its handlers here with :func:`handles`; the connection code looks them up by API key.
Keeping the registry separate lets those modules be written and tested independently: none of
them imports another's handlers.

A handler is called with the cluster state lock held (``state.lock``, an ``RLock``) and returns
the response object for the request's version. A handler that must wait (JoinGroup, a delayed
marker) waits on ``state.cond`` (a ``Condition`` on that lock), which releases the lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:  # pragma: no cover
    from .cluster_state import ClusterState


@attrs.frozen
class RequestContext:
    """What a handler knows about the request besides its body."""

    broker_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    connection_id: int


Handler = Callable[["ClusterState", RequestContext, Any], Any]

_HANDLERS: dict[int, Handler] = {}


def handles(*api_keys: int) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of ``api_keys``."""

    def register(fn: Handler) -> Handler:
        for key in api_keys:
            if key in _HANDLERS and _HANDLERS[key] is not fn:
                raise RuntimeError(f"api key {key} already has a handler: {_HANDLERS[key]!r}")
            _HANDLERS[int(key)] = fn
        return fn

    return register


def lookup(api_key: int) -> Handler | None:
    """The handler registered for ``api_key``, or None (the connection answers/closes as Kafka does)."""
    return _HANDLERS.get(api_key)


def registered_api_keys() -> frozenset[int]:
    return frozenset(_HANDLERS)
