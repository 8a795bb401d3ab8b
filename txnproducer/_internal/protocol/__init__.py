"""Kafka protocol knowledge with no I/O and no state: error codes, primitive types, codecs.

What the room holds: the one catalogue of error codes (``error_codes``), the protocol's primitive
types (``primitives``), the hand-written Produce request encoder and response decoder
(``produce_request``, ``produce_response``, ``produce_versions``), magic-v2 record batch encoding
(``record_batch``), request/response framing (``framing``) and a request's response class
(``response_classes``: kafka-python's registry is not safe across threads), the consumer protocol's payloads
(``consumer_protocol``) and KIP-848's message classes (``consumer_group_heartbeat``,
``consumer_group_describe``, from the wire schemas in ``schemas/``). The client and the MockCluster
both import from here.

What it may import: the standard library, kafka-python's protocol classes and
``_internal.accel`` (a leaf: whether the compiled batch encoder and CRC-32C run) - never another
txnproducer module, so that everything else can depend on it without an import circle.
"""
