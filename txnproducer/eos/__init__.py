"""Exactly-once consume-transform-produce: :class:`TransactionalProcessor`, :class:`OutputRecord` and
:class:`OutputBatch`.

What the room holds: the processor loop (``processor``), the records a transform emits and the
shapes a transform may return (``output_record``), the transform applied to a poll (``transform``), the
settings it forces on the consumer and producer and the group instance id it derives (``settings``),
what the open transaction has consumed (``progress``), how the loop tells what failed (``failures``),
and its spans when traced (``tracing``).

What it may import: the public API (``txnproducer.producer``, ``consumer``, ``config``,
``consumer_config``, ``errors``), ``txnproducer.otel`` and ``_internal.log`` - never the clients'
internals: the loop is a user of the producer and the consumer like any application.
"""

from txnproducer.eos.output_record import OutputBatch, OutputRecord
from txnproducer.eos.processor import CrashPoint, TransactionalProcessor
from txnproducer.errors import TransformOutputError

__all__ = ["CrashPoint", "OutputBatch", "OutputRecord", "TransactionalProcessor", "TransformOutputError"]
