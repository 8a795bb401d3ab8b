"""Which version of each coordinator request this client sends, per transaction version.

Why a table: TV1 and TV2 (KIP-890) differ in request versions (EndTxn v4 vs v5, TxnOffsetCommit v3
vs v5, ...), and each choice is capped at send time by the broker's ApiVersions. TV1 matches the
pre-KIP-890 exchange recorded against Kafka 4.1 (``tv1_commit_flow.json``), TV2 the KIP-890 part
2 one (``tv2_commit_flow.json``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

__all__ = ["PREFERRED_VERSIONS", "TV2_REQUIRED_VERSIONS", "choose_version"]

PREFERRED_VERSIONS: dict[int, dict[int, int]] = {
    1: {
        FindCoordinatorRequest.API_KEY: 6,
        InitProducerIdRequest.API_KEY: 4,
        AddPartitionsToTxnRequest.API_KEY: 3,
        AddOffsetsToTxnRequest.API_KEY: 3,
        TxnOffsetCommitRequest.API_KEY: 3,
        EndTxnRequest.API_KEY: 4,
    },
    2: {
        FindCoordinatorRequest.API_KEY: 6,
        InitProducerIdRequest.API_KEY: 5,
        AddPartitionsToTxnRequest.API_KEY: 3,  # v4+ is broker-to-broker only
        AddOffsetsToTxnRequest.API_KEY: 4,
        TxnOffsetCommitRequest.API_KEY: 5,
        EndTxnRequest.API_KEY: 5,
    },
}
# TV2 semantics need these versions; a broker offering less is driven with TV1.
TV2_REQUIRED_VERSIONS: dict[int, int] = {EndTxnRequest.API_KEY: 5, TxnOffsetCommitRequest.API_KEY: 5}


def choose_version(request_cls: Any, tv: int, max_versions: Callable[[int], int | None] | None) -> int:
    """``PREFERRED_VERSIONS[tv]`` capped by the broker's max (``max_versions``) and the class's range."""
    api_key = int(request_cls.API_KEY)
    version = PREFERRED_VERSIONS[2 if tv >= 2 else 1][api_key]
    if max_versions is not None:
        broker_max = max_versions(api_key)
        if broker_max is not None:
            version = min(version, broker_max)
    return max(int(request_cls.min_version), min(version, int(request_cls.max_version)))
