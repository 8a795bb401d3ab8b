"""The WriteTxnMarkers request an operator's abort sends (``admin/write_txn_markers.py``): its version
and fields per broker version, and what each answer means."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest, WriteTxnMarkersResponse

from txnproducer._internal.protocol import error_codes as ec
from txnproducer.admin import (
    AdminAuthorizationError,
    NothingToAbortError,
    TopicPartition,
    UnexpectedBrokerError,
)
from txnproducer.admin.connection import Deadline
from txnproducer.admin.write_txn_markers import write_abort_marker

TP = TopicPartition("orders", 3)


class FakeConnection:
    """Builds the request for ``version`` as AdminConnection.send does and answers ``codes``."""

    def __init__(self, version: int, codes: list[int]) -> None:
        self.version = version
        self.codes = codes
        self.sent: list[Any] = []

    def send(self, node: int, request_cls: Any, build: Any, deadline: Deadline, what: str) -> Any:
        request = build(self.version)
        self.sent.append(request)
        r = WriteTxnMarkersResponse
        return r[self.version](
            markers=[
                r.WritableTxnMarkerResult(
                    producer_id=7,
                    topics=[
                        r.WritableTxnMarkerResult.WritableTxnMarkerTopicResult(
                            name="orders",
                            partitions=[
                                r.WritableTxnMarkerResult.WritableTxnMarkerTopicResult.WritableTxnMarkerPartitionResult(
                                    partition_index=3, error_code=c
                                )
                                for c in self.codes
                            ],
                        )
                    ],
                )
            ]
        )


def abort(conn: FakeConnection, coordinator_epoch: int = 4) -> int:
    return write_abort_marker(conn, 1, TP, 7, 2, coordinator_epoch, Deadline(1000))  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [1, 2])
def test_an_abort_marker_for_the_named_partition(version: int) -> None:
    conn = FakeConnection(version, [ec.NONE])
    assert abort(conn) == ec.NONE
    (request,) = conn.sent
    assert isinstance(request, WriteTxnMarkersRequest) and version == request.API_VERSION
    (marker,) = request.markers
    assert (
        marker.producer_id,
        marker.producer_epoch,
        marker.transaction_result,
        marker.coordinator_epoch,
    ) == (7, 2, False, 4)
    assert [(t.name, t.partition_indexes) for t in marker.topics] == [("orders", [3])]
    # KIP-1228 (v2): the epoch the partition holds passes only the legacy check, so the marker says TV 0
    assert marker.transaction_version == 0
    encoded = request.encode()  # and the version's wire format has (v2) or lacks (v1) the field
    assert len(encoded) == len(WriteTxnMarkersRequest[1](markers=request.markers).encode()) + (version == 2)


def test_a_coordinator_epoch_of_minus_one_is_sent_as_zero() -> None:
    conn = FakeConnection(1, [ec.NONE])
    abort(
        conn, coordinator_epoch=-1
    )  # DescribeProducers: no marker yet (kafka-transactions.sh does the same)
    assert conn.sent[0].markers[0].coordinator_epoch == 0


@pytest.mark.parametrize(
    ("code", "error", "text"),
    [
        (
            ec.CLUSTER_AUTHORIZATION_FAILED,
            AdminAuthorizationError,
            "grant Alter or ClusterAction on the Cluster",
        ),
        (ec.INVALID_PRODUCER_EPOCH, NothingToAbortError, "at an epoch above 2 (INVALID_PRODUCER_EPOCH)"),
        (ec.PRODUCER_FENCED, NothingToAbortError, "(PRODUCER_FENCED)"),
        (ec.TRANSACTION_COORDINATOR_FENCED, NothingToAbortError, "coordinator epoch 4 is older"),
        (ec.UNKNOWN_SERVER_ERROR, UnexpectedBrokerError, "answered UNKNOWN_SERVER_ERROR"),
    ],
)
def test_each_refusal_is_a_typed_error(code: int, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        abort(FakeConnection(1, [code]))


@pytest.mark.parametrize("code", [ec.NOT_LEADER_OR_FOLLOWER, ec.UNKNOWN_TOPIC_OR_PARTITION])
def test_a_moved_leader_is_returned_for_the_caller_to_follow(code: int) -> None:
    assert abort(FakeConnection(1, [code])) == code


def test_an_answer_for_other_partitions_is_refused() -> None:
    with pytest.raises(UnexpectedBrokerError, match="2 results for one partition"):
        abort(FakeConnection(1, [ec.NONE, ec.NONE]))
