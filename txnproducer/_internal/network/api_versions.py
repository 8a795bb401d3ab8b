"""What a broker's ApiVersions answer told us: API version ranges and finalized features.

Why apart from the client: choosing request versions and the transaction version (KIP-890: TV2
needs the finalized ``transaction.version`` >= 2 *and* Produce v12 / EndTxn v5) is a pure function
of the answer, testable without a network; the Java client keeps the same split
(``NodeApiVersions`` beside ``NetworkClient``).
"""

from __future__ import annotations

from typing import Any

import attrs

from txnproducer._internal.protocol.produce_versions import PRODUCE_API_KEY

__all__ = ["PRODUCE_MAX_WITH_NAMES", "BrokerFeatures", "features_from"]

# Produce v13 names topics by id (KIP-516); v12 is the newest version with names.
_PRODUCE_MAX = 13
PRODUCE_MAX_WITH_NAMES = 12


@attrs.frozen
class BrokerFeatures:
    """What one broker's ApiVersions answer told us."""

    transaction_version: int  # finalized ``transaction.version`` (0 when not finalized)
    api_versions: dict[int, tuple[int, int]]  # api key -> (min, max)
    # the finalized features' epoch: a lagging broker answers with an older one (KIP-584)
    features_epoch: int = -1

    def max_version(self, api_key: int) -> int | None:
        entry = self.api_versions.get(api_key)
        return None if entry is None else entry[1]

    @property
    def effective_transaction_version(self) -> int:
        """2 when the broker finalized TV2 and serves the requests it needs, else 1."""
        produce = self.max_version(PRODUCE_API_KEY) or 0
        end_txn = self.max_version(26) or 0
        if self.transaction_version >= 2 and produce >= 12 and end_txn >= 5:
            return 2
        return 1

    def produce_version(self, transaction_version: int, node_max: int | None = None) -> int:
        """Highest Produce version allowed for the TV (TV1 must stay <= 11, KIP-890), capped by
        the destination broker's own maximum (``node_max``) when known, else this broker's."""
        cap = _PRODUCE_MAX if transaction_version >= 2 else 11
        broker = node_max if node_max is not None else self.max_version(PRODUCE_API_KEY)
        return min(cap, broker) if broker is not None else cap


def features_from(response: Any) -> BrokerFeatures:
    """The features and version ranges of an ApiVersions answer (v3+ carries the features)."""
    versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    tv = 0
    for feature in getattr(response, "finalized_features", None) or ():
        if feature.name == "transaction.version":
            tv = int(feature.max_version_level)
    epoch = getattr(response, "finalized_features_epoch", -1)
    return BrokerFeatures(transaction_version=tv, api_versions=versions,
                          features_epoch=-1 if epoch is None else int(epoch))
