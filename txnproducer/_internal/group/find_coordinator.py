"""FindCoordinator (key 10) with key type GROUP: where the group's coordinator is.

Versions: v6 preferred, v1 at least (``versions.py``); v4+ asks with ``coordinator_keys`` (a batch of
one), older versions with ``key``. Sent to the least-loaded broker. Answer (Java's
``FindCoordinatorResponseHandler``): NONE gives the coordinator; GROUP_AUTHORIZATION_FAILED is fatal
for the member (the principal may not even describe the group); anything else - COORDINATOR_NOT_AVAILABLE
while the group's partition has no leader, NOT_COORDINATOR, a load in progress - is retried after the
backoff.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from kafka.protocol.metadata import FindCoordinatorRequest

from txnproducer import errors
from txnproducer._internal.protocol import error_codes as ec

from .state import Coordinator
from .versions import choose_version

__all__ = ["GROUP_KEY_TYPE", "LookupOutcome", "build_request", "read_response"]

GROUP_KEY_TYPE = 0


@attrs.frozen
class LookupOutcome:
    coordinator: Coordinator | None = None
    fatal: BaseException | None = None
    retriable_code: int = ec.NONE


def build_request(group_id: str, max_version: Callable[[int], int | None]) -> Any:
    version = choose_version(FindCoordinatorRequest, max_version(FindCoordinatorRequest.API_KEY))
    if version >= 4:
        return FindCoordinatorRequest(version=version, key_type=GROUP_KEY_TYPE, coordinator_keys=[group_id])
    return FindCoordinatorRequest(version=version, key=group_id, key_type=GROUP_KEY_TYPE)


def read_response(group_id: str, response: Any) -> LookupOutcome:
    coordinators = getattr(response, "coordinators", None)
    data = coordinators[0] if coordinators else response
    code = int(data.error_code)
    if code == ec.NONE:
        return LookupOutcome(Coordinator(int(data.node_id), str(data.host), int(data.port)))
    if code == ec.GROUP_AUTHORIZATION_FAILED:
        return LookupOutcome(fatal=errors.GroupAuthorizationError(
            f"not authorized to use consumer group {group_id!r} (GROUP_AUTHORIZATION_FAILED on "
            "FindCoordinator): grant this principal DESCRIBE and READ on the group, then create the "
            "consumer again", error_code=code))
    return LookupOutcome(retriable_code=code)
