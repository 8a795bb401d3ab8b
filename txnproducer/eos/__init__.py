"""Exactly-once consume-transform-produce: :class:`TransactionalProcessor` and :class:`OutputRecord`.

What the room holds: the processor loop (``processor``), the records a transform emits
(``output_record``), the transform applied to a poll (``transform``), the settings it forces on the
consumer and producer (``settings``), what the open transaction has consumed (``progress``), its spans
when traced (``tracing``), and work-arounds for kafka-python consumer-group behaviour the loop depends
on (``kafka_compat``).

What it may import: the public producer API (``txnproducer.producer``, ``config``, ``errors``),
``txnproducer.otel``, ``_internal.log`` and kafka-python's consumer - never the producer's internals:
the loop is a user of the producer like any application.
"""

from txnproducer.eos.output_record import OutputRecord
from txnproducer.eos.processor import CrashPoint, TransactionalProcessor

__all__ = ["CrashPoint", "OutputRecord", "TransactionalProcessor"]
