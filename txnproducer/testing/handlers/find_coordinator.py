"""FindCoordinator (key 10): v0-6.

Behaviour:
- Key type 0 (group) or 1 (transaction): the coordinator broker is ``state.coordinator_for`` - a stable
  hash of the key over the brokers, moved to the next alive broker when the chosen one is down, or where
  ``MockCluster.move_coordinator`` put it. If that broker is down the answer is COORDINATOR_NOT_AVAILABLE
  with node -1.
- Any other key type: INVALID_REQUEST with "Unsupported key type N".

Authorization (KafkaApis.getCoordinator), per key and first: Describe on the group
(GROUP_AUTHORIZATION_FAILED) or on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), with node -1;
v1-3 carry the error's message, as Kafka's error response does.

Version notes:
- v0: no key type (always group).
- v1-3: one key per request; on success ``error_message`` is the string "NONE", as Kafka answers.
- v4+: a list of keys (``coordinator_keys``) answered one entry each; success has an empty message.

Simplifications: no coordinator is ever loading (no COORDINATOR_LOAD_IN_PROGRESS unless injected); key
type 2 (share groups) is not supported.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import FindCoordinatorResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from ..cluster_state import GROUP_KEY, TRANSACTION_KEY, ClusterState
from ..security.acl import Operation, ResourceType
from .api import Api, RequestContext

#: key type -> (the resource Describe is checked on, the error when it is refused)
_DESCRIBE = {
    GROUP_KEY: (ResourceType.GROUP, ec.GROUP_AUTHORIZATION_FAILED),
    TRANSACTION_KEY: (ResourceType.TRANSACTIONAL_ID, ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
}


def _coordinator_entry(state: ClusterState, ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    if key_type in _DESCRIBE and not ctx.allows(Operation.DESCRIBE, _DESCRIBE[key_type][0], key):
        code = _DESCRIBE[key_type][1]
        # v1-3: Kafka's error response carries the error's message; v4+ leaves it at its default
        message = ec.describe(code).description if ctx.api_version < 4 else ""
        return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code,
                "error_message": message}
    if key_type not in (GROUP_KEY, TRANSACTION_KEY):
        return {
            "key": key,
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": ec.INVALID_REQUEST,
            "error_message": f"Unsupported key type {key_type}",
        }
    node = state.coordinator_for(key_type, key)
    broker = state.brokers.get(node)
    if broker is None or not broker.alive:
        return {
            "key": key,
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": ec.COORDINATOR_NOT_AVAILABLE,
            "error_message": None,
        }
    return {
        "key": key,
        "node_id": node,
        "host": broker.host,
        "port": broker.port,
        "error_code": ec.NONE,
        "error_message": "",
    }


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    v = ctx.api_version
    key_type = request.key_type if v >= 1 else GROUP_KEY
    if v >= 4:
        return api_messages.build(
            FindCoordinatorResponse,
            v,
            {
                "throttle_time_ms": 0,
                "coordinators": [
                    _coordinator_entry(state, ctx, key_type, k) for k in request.coordinator_keys
                ],
            },
        )
    entry = _coordinator_entry(state, ctx, key_type, request.key)
    message = entry["error_message"]
    if entry["error_code"] == ec.NONE:
        message = "NONE"  # what Kafka answers on success for v1-v3
    return api_messages.build(
        FindCoordinatorResponse,
        v,
        {
            "throttle_time_ms": 0,
            "error_code": entry["error_code"],
            "error_message": message,
            "node_id": entry["node_id"],
            "host": entry["host"],
            "port": entry["port"],
        },
    )


API = Api(10, "FindCoordinator", 0, 6, handle)
