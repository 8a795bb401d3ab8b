"""The read side: fetching records for a read_committed consumer and decoding them.

What the room holds: the value types a consumer hands out (:mod:`.records`: ``ConsumerRecord`` and
the columns of :class:`~.records.PartitionBatch`), the magic-v2 batch decoder with the Java
consumer's read_committed filtering (:mod:`.decoder`: the pure-Python reference, and the compiled
one from ``_internal/accel/_decode.c`` when it is built), each partition's position and leader
epoch (:mod:`.positions`), incremental fetch sessions (:mod:`.session`, KIP-227), fetched data
waiting to be handed out (:mod:`.completed_fetch`), offset resets and KIP-320 position validation
(:mod:`.offsets`) and the fetcher that sends Fetch requests and reads their answers (:mod:`.fetcher`).
The public facade is ``txnproducer/consumer.py``.

What it may import: ``txnproducer.errors``, ``txnproducer.consumer_config``, ``_internal.protocol``,
``_internal.network``, ``_internal.accel``, ``_internal.log`` - never the producer's rooms
(batching, txn, sender) nor ``eos``: the read side knows nothing of writing.
"""
