"""The producer's machinery; nothing here is public API and any of it may change without notice.

What the room holds, by concern (each a package whose docstring says more):

* ``protocol/`` - Kafka protocol knowledge with no I/O and no state: the error-code catalogue,
  primitive types, the Produce codec, record batches, framing. Shared with the MockCluster.
* ``network/`` - connections, metadata, what each broker supports.
* ``batching/`` - the record accumulator and producer batches.
* ``txn/`` - the transaction manager and one handler per coordinator request.
* ``sender.py`` - the Sender thread that moves batches and requests between the three above.
* ``partitioner.py`` - which partition a record goes to (murmur2 of the key; KIP-794 without one).
* ``log.py``, ``metrics.py``, ``config_checks.py`` - leaves every room may use.
* ``call_warnings.py`` - calls that work but are almost certainly a mistake (a timeout in
  milliseconds, a bare group id): a WARNING once per producer.
* ``config_names.py``, ``librdkafka_names.py`` - the spellings of settings: Python, Java, and
  confluent-kafka's (librdkafka's), which are refused naming the setting to use instead.
* ``listeners.py`` - one-shot callbacks fired where a Condition is notified, for callers that
  must not block (``txnproducer.aio``); a leaf the network, batching and the Sender use.

What it may import: ``txnproducer.errors``, ``txnproducer.config`` and ``txnproducer.prepared``
(the public value types) and itself - never ``producer``, ``eos``, ``spark`` or ``testing``,
which are built on top of it. ``tests/unit/test_layout.py`` checks each room's rule.
"""
