"""OutputRecord: what a consume-transform-produce transform emits.

Why a value object rather than ``send()`` arguments: a transform is user code that runs before
the processor decides the transaction; returning immutable records keeps it free of producer
calls (it cannot send outside the transaction, or after a revocation aborted it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

__all__ = ["HeadersArg", "OutputRecord"]

HeadersArg = Sequence[tuple[str, Any]] | Mapping[str, Any] | None


@attrs.frozen
class OutputRecord:
    """One record for the transform to emit; sent with ``TransactionalProducer.send``.

    ``value``/``key`` go through the producer's serializers (bytes and str work without one).
    ``partition=None`` lets the producer's partitioner choose.
    """

    topic: str
    value: Any
    key: Any = None
    partition: int | None = None
    headers: HeadersArg = None
    timestamp_ms: int | None = None
