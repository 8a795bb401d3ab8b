"""The identity a broker knows a producer by: producer id and epoch.

Why a value object of its own: the transaction manager replaces it as a whole (InitProducerId,
a KIP-360 bump, every TV2 EndTxn), the Sender compares a batch's stamp against it, and EndTxn
retries must repeat the exact pair they were built with; an immutable pair cannot be half-updated.
"""

from __future__ import annotations

import attrs

__all__ = ["NONE_PRODUCER_ID_AND_EPOCH", "NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "ProducerIdAndEpoch"]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@attrs.frozen
class ProducerIdAndEpoch:
    """The identity the broker knows this producer by; epoch -1 / id -1 mean 'none yet'."""

    producer_id: int
    epoch: int

    @property
    def is_valid(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    def __str__(self) -> str:
        return f"(producer_id={self.producer_id}, epoch={self.epoch})"


NONE_PRODUCER_ID_AND_EPOCH = ProducerIdAndEpoch(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
