"""Data loss: offsets a query needed that Kafka no longer has, and ``failOnDataLoss``.

What counts (and what does not: marker and abort gaps never do) is listed in
:mod:`txnproducer.spark.source.planning`. Found on the driver (partitions gone, new ones starting
late, offsets going back) or on an executor (a range below the log start), each case goes to one
:class:`DataLossReport`: with ``failOnDataLoss=true`` (Spark's default) the query fails with
:class:`SourceDataLossError` naming topic, partition and offsets; with false the case is logged as
a WARNING (``txn.spark_source_data_loss``) and the query goes on with what Kafka still has - the
choice Spark's Kafka source offers, with its words.
"""

from __future__ import annotations

from ..._internal.log import get_logger
from ...errors import TxnProducerError

__all__ = ["DataLossReport", "SourceDataLossError"]

_log = get_logger("txnproducer.spark")
_FAIL_HINT = (" Set the source option failOnDataLoss to false to go on without them (a warning is logged"
              " instead), or restart the query from new offsets.")


class SourceDataLossError(TxnProducerError):
    """The ``txnkafka`` source needed records Kafka no longer has (deleted by retention or
    DeleteRecords, a topic deleted or re-created) and ``failOnDataLoss`` is true; the message names
    topic, partition and offsets. Gaps left by transaction markers and aborted transactions are
    never reported."""


class DataLossReport:
    """Raise or log a data-loss case, as ``failOnDataLoss`` says (module docstring)."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def __call__(self, message: str) -> None:
        if self.fail:
            raise SourceDataLossError(f"txnkafka source: {message}.{_FAIL_HINT}")
        _log.warning("txn.spark_source_data_loss", detail=message, fail_on_data_loss=False)
