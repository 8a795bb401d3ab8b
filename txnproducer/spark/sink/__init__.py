"""The ``txnkafka`` sink: exactly-once writes from PySpark batch and streaming queries to Kafka.

What the room holds: the writers Spark calls (``writer``), one task attempt on an executor
(``task``), the driver's decisions (``committer``) and phase two's Kafka calls (``completion``),
the state topic (``state_topic``) and its records (``decision``), the bounded transactional id pool
(``id_pool``), the sink's options (``options``), Arrow batches to records (``records``), the
migration from an older version's commit log (``legacy``, ``commit_log``), OpenTelemetry
(``tracing``) and the fault hook its tests kill processes with (``_faults``). The protocol and its
guarantee: :mod:`txnproducer.spark.sink.writer`.

What it may import: the public producer API (``txnproducer.producer``, ``config``, ``errors``,
``prepared``), ``_internal.log``, ``_internal.network.redaction``, ``txnproducer.otel``, the shared
``spark.kafka_options``, kafka-python, pyarrow and PySpark (only ``writer`` and ``task``) - never the
producer's internals, and nothing of the source.
"""
