"""Every type a public call takes or returns is importable from ``txnproducer`` (``txnproducer.aio``
for the asyncio ones): a user who reads ``-> RecordFuture`` in a signature or the docs can name it
without reaching into ``txnproducer._internal``."""

from __future__ import annotations

import typing

import txnproducer
import txnproducer.aio
from txnproducer import TransactionalProducer
from txnproducer.aio import AsyncTransactionalProducer


def test_the_types_in_the_producers_signatures_are_public() -> None:
    hints = typing.get_type_hints(TransactionalProducer.send)
    assert hints["return"] is txnproducer.RecordFuture
    prepared = typing.get_type_hints(TransactionalProducer.prepare_transaction)["return"]
    assert prepared is txnproducer.PreparedTxnState
    assert txnproducer.RecordFuture.__name__ == "RecordFuture"
    assert set(txnproducer.TransactionState.__members__) >= {"READY", "IN_TRANSACTION", "FATAL_ERROR"}
    awaited = typing.get_type_hints(AsyncTransactionalProducer._send)["return"]
    assert awaited is txnproducer.aio.AsyncRecordFuture


def test_what_users_construct_or_catch_is_exported() -> None:
    for name in ("TransactionalProducer", "TransactionalProducerPool", "TransactionalConsumer",
                 "ProducerConfig", "ConsumerConfig", "RecordFuture", "RecordMetadata", "TransactionState",
                 "TopicPartition", "OffsetAndMetadata", "ConsumerGroupMetadata", "PreparedTxnState"):
        assert name in txnproducer.__all__ and getattr(txnproducer, name) is not None, name
    for name in ("AsyncTransactionalProducer", "AsyncTransactionalProducerPool", "AsyncRecordFuture",
                 "aiokafka_group_metadata"):
        assert name in txnproducer.aio.__all__ and getattr(txnproducer.aio, name) is not None, name


def test_a_producers_state_is_a_public_transaction_state() -> None:
    producer = TransactionalProducer(bootstrap_servers="127.0.0.1:1", transactional_id="tx-public-api")
    try:
        assert producer.state is txnproducer.TransactionState.UNINITIALIZED
    finally:
        producer.close(0)
