"""Which version of each group request the member sends, capped by the coordinator's ApiVersions.

Why a table: the member speaks the versions the Java 4.x consumer sends to a Kafka 4.1 broker
(JoinGroup v9 carries KIP-814's ``skip_assignment`` for a static leader that comes back; OffsetFetch
v9 the require_stable flag and batched groups), falling back to whatever older version a broker
offers. The oldest versions it can still use are the first with the fields it cannot do without.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from txnproducer import errors
from txnproducer._internal.protocol import error_codes as ec

__all__ = ["PREFERRED", "choose_version"]

#: api key -> (lowest usable, preferred)
PREFERRED: dict[int, tuple[int, int]] = {
    FindCoordinatorRequest.API_KEY: (1, 6),  # v1: key type (GROUP)
    JoinGroupRequest.API_KEY: (1, 9),  # v1: rebalance timeout; v4: member id required; v5: static
    SyncGroupRequest.API_KEY: (0, 5),
    HeartbeatRequest.API_KEY: (0, 4),
    LeaveGroupRequest.API_KEY: (0, 5),
    OffsetFetchRequest.API_KEY: (1, 9),  # v7: require_stable (KIP-447); Kafka 4.1 stops at v9
    MetadataRequest.API_KEY: (1, 12),
}


def choose_version(request_cls: Any, broker_max: int | None) -> int:
    """The preferred version of ``request_cls`` capped by the broker's highest (None: unknown);
    UnsupportedVersionError when the broker's highest is below what the member can use."""
    api_key = int(request_cls.API_KEY)
    lowest, preferred = PREFERRED[api_key]
    version = min(preferred, int(request_cls.max_version))
    if broker_max is None:
        return version
    if broker_max < lowest:
        raise errors.UnsupportedVersionError(
            f"the group coordinator speaks {request_cls.__name__.removesuffix('Request')} only up to "
            f"v{broker_max}; a consumer group member needs v{lowest} or newer: upgrade the broker",
            error_code=ec.UNSUPPORTED_VERSION)
    return min(version, broker_max)
