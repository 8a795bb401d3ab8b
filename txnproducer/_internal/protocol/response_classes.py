"""kafka-python's response class for a request, made safe across threads.

Why: kafka-python 3.x makes a message's version class (``SyncGroupResponse[5]``) on its first use, without a
lock, and every class it makes registers itself as *the* response class of its API key in
``ResponseClassRegistry`` - which ``request.header.get_response_class()`` reads - through a weak proxy. When
two threads make the same version at once (two MockCluster connections answering their first SyncGroup v5,
two producers of a pool framing their first request of an API), each makes a class; the one the class's
cache does not keep is freed by the next garbage collection, and if it registered last, the registry's
proxy dies with it. Every later lookup of that API key in the process then raised ReferenceError
("weakly-referenced object no longer exists"): a CI run lost four SyncGroup tests to it.

So: a request's response class is found through strong references (the request's own module names it,
as kafka-python's modules and ours pair ``XRequest`` with ``XResponse``), never through the registry's
proxy, and every version of a class is made once, under one lock (:func:`complete_versions`), after
which ``cls[v]`` anywhere only looks it up. The MockCluster completes every registered class when it
starts, so that its connection threads and the kafka-python clients of the same process never race.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from kafka.protocol.api_header import ResponseClassRegistry

__all__ = ["complete_registered_versions", "complete_versions", "response_class"]

_LOCK = threading.Lock()
_COMPLETE: set[type] = set()  # primary classes whose every version exists (read without the lock)
_BY_REQUEST: dict[type, Any] = {}  # primary request class -> primary response class


def complete_versions(primary: Any) -> None:
    """Make every version class of kafka-python message class ``primary`` now, once, under the lock."""
    if primary in _COMPLETE:
        return
    with _LOCK:
        if primary in _COMPLETE:
            return
        if getattr(primary, "_class_version", None) is None and getattr(primary, "_valid_versions", None):
            for version in range(primary.min_version, primary.max_version + 1):
                primary[version]
        _COMPLETE.add(primary)


def complete_registered_versions() -> None:
    """:func:`complete_versions` for every response class kafka-python has registered so far (the ones a
    registry proxy still reaches)."""
    for api_key in sorted(_registry()):
        primary = _registered_primary(api_key)
        if primary is not None:
            complete_versions(primary)


def response_class(request: Any) -> Any:
    """The response class (versioned) of kafka-python message ``request``, at its ``API_VERSION``."""
    request_type = type(request)
    if not hasattr(request_type, "_VERSIONS"):  # not a versioned kafka-python message: its header knows
        return request.header.get_response_class()
    primary_request = request_type if request_type._class_version is None else request_type[None]
    primary = _BY_REQUEST.get(primary_request)
    if primary is None:
        primary = _response_primary(primary_request)
        _BY_REQUEST[primary_request] = primary
    complete_versions(primary)
    return primary[request.API_VERSION]


def _response_primary(primary_request: Any) -> Any:
    name = primary_request.__name__
    module = sys.modules.get(primary_request.__module__)
    if name.endswith("Request") and module is not None:
        found = getattr(module, name[: -len("Request")] + "Response", None)
        if found is not None and getattr(found, "API_KEY", None) == primary_request.API_KEY:
            return found
    found = _registered_primary(primary_request.API_KEY)  # a pair named otherwise: the registry's
    if found is None:
        raise LookupError(f"no response class known for {name} (API key {primary_request.API_KEY})")
    return found


def _registered_primary(api_key: int) -> Any:
    """The primary class behind the registry's proxy for ``api_key``; None when unknown, dead, or not a
    versioned (new-style) class."""
    proxy = _registry().get(api_key)
    if proxy is None:
        return None
    try:
        if getattr(proxy, "_valid_versions", None) is None:
            return None
        return proxy[None]  # the primary class itself: a strong reference
    except (ReferenceError, TypeError):
        return None


def _registry() -> dict[int, Any]:
    """kafka-python's registry (a private attribute in 3.0.x: read defensively, empty if it moves)."""
    registry = getattr(ResponseClassRegistry, "_response_class_registry", None)
    return registry if isinstance(registry, dict) else {}
