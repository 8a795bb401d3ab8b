"""The ``txnkafka`` source: Kafka to PySpark, batch and Structured Streaming, with no JVM connector.

What the room holds: the batch reader (``reader``) and the stream reader (``stream``) Spark calls, the
options (``options``: Spark's Kafka source's names and meanings), partition offsets in Spark's
JSON (``offsets``), the driver's questions to Kafka (``offset_reader``), offset ranges, their split
and the stream's admission control (``planning``), data loss and ``failOnDataLoss``
(``data_loss``), and on the executors: one range's read (``range_reader``) with a consumer the
Python worker keeps (``consumers``), and its records as Arrow batches (``rows``).

What it may import: ``txnproducer.consumer`` and ``consumer_config`` (the executors read with
:class:`~txnproducer.TransactionalConsumer` by assign + seek), the admin tools' connection, Metadata
and ListOffsets (``admin.connection``, ``admin.metadata``, ``admin.list_offsets``,
``admin.settings``, ``admin.results``, ``admin.errors``: the driver's offset lookups), ``errors``,
``config``, ``_internal.log``, the shared ``spark.kafka_options``, kafka-python's structs, pyarrow and
PySpark (``reader``, ``stream``, ``rows``) - nothing of the sink.
"""
