"""The identity a broker knows a producer by: producer id and epoch.

Why a value object of its own: the transaction manager replaces it as a whole (InitProducerId,
a KIP-360 bump, every TV2 EndTxn), the Sender compares a batch's stamp against it, and EndTxn
retries must repeat the exact pair they were built with; an immutable pair cannot be half-updated.
"""

from __future__ import annotations

import attrs

__all__ = [
    "LAST_EPOCH",
    "NONE_PRODUCER_ID_AND_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "ProducerIdAndEpoch",
]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
#: Short.MAX_VALUE: no transaction may begin at this epoch. Under TV2 every transaction end bumps the
#: epoch, and a transaction that ends at 32767 has no epoch left to end with: Kafka 4.0/4.1 then leave
#: it Ongoing for good (KAFKA-20090). The coordinator only hands it out as the answer to a retry after
#: its own abort (transaction timeout) at 32766; the producer then gets a new producer id first.
LAST_EPOCH = 32767


@attrs.frozen
class ProducerIdAndEpoch:
    """The identity the broker knows this producer by; epoch -1 / id -1 mean 'none yet'."""

    producer_id: int
    epoch: int

    @property
    def is_valid(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def is_exhausted(self) -> bool:
        """No transaction can end at this epoch (see :data:`LAST_EPOCH`): get a new producer id."""
        return self.epoch >= LAST_EPOCH

    def __str__(self) -> str:
        return f"(producer_id={self.producer_id}, epoch={self.epoch})"


NONE_PRODUCER_ID_AND_EPOCH = ProducerIdAndEpoch(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
