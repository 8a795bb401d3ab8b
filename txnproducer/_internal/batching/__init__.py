"""Record batching: where ``send()`` puts records and the Sender takes batches from.

What the room holds: :class:`~.accumulator.RecordAccumulator` (per-partition batch queues, buffer
memory, linger, ordering and retry rules) and :mod:`.batch` (:class:`~.batch.ProducerBatch`, the
record futures and the public ``RecordMetadata``).

What it may import: ``txnproducer.errors``, ``_internal.protocol`` (record batch encoding),
``_internal.log``, ``_internal.listeners`` and ``_internal.accel`` (the compiled open-batch append,
when it runs). It reaches the transaction manager only through the ``TransactionGate`` protocol it
declares, never by importing it.
"""
