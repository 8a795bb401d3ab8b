"""Finding partition leaders for the admin tools (``admin/metadata.py`` ``leaders_of``): a partition
without a leader is asked about again until the deadline, and is then named, whichever step the deadline
interrupts."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.metadata import MetadataResponse

from txnproducer.admin import LeaderNotAvailableError, TopicPartition
from txnproducer.admin.connection import Deadline
from txnproducer.admin.metadata import leaders_of
from txnproducer.errors import TimeoutError

TP = TopicPartition("orders", 0)
VERSION = 12


def answer(leader: int) -> Any:
    r = MetadataResponse[VERSION]
    return r(
        throttle_time_ms=0,
        brokers=[r.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092, rack=None)],
        cluster_id="c",
        controller_id=1,
        topics=[
            r.MetadataResponseTopic(
                error_code=0, name="orders", topic_id=None, is_internal=False,
                partitions=[r.MetadataResponseTopic.MetadataResponsePartition(
                    error_code=5 if leader < 0 else 0, partition_index=0, leader_id=leader,
                    leader_epoch=0, replica_nodes=[1], isr_nodes=[1] if leader >= 0 else [],
                    offline_replicas=[])],
            )
        ],
    )


class FakeConnection:
    """Answers Metadata with ``answers`` in turn; an exception in the list is raised instead (a request
    that the deadline interrupted)."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.asked = 0

    def any_node(self, deadline: Deadline) -> int:
        return 1

    def know_broker(self, broker_id: int, host: str, port: int) -> None:
        pass

    def send(self, node: int, request_cls: Any, build: Any, deadline: Deadline, what: str) -> Any:
        build(VERSION)
        item = self.answers[self.asked]
        self.asked += 1
        if isinstance(item, Exception):
            raise item
        return item

    def send_any(self, request_cls: Any, build: Any, deadline: Deadline, what: str) -> Any:
        return self.send(self.any_node(deadline), request_cls, build, deadline, what)

    def backoff(self, deadline: Deadline, what: str) -> None:
        pass


def test_a_partition_gets_its_leader_on_a_later_answer() -> None:
    conn = FakeConnection([answer(-1), answer(-1), answer(1)])
    _, leaders = leaders_of(conn, [TP], Deadline(1500))  # type: ignore[arg-type]
    assert leaders == {TP: 1} and conn.asked == 3


def test_a_deadline_that_interrupts_the_next_metadata_request_still_names_the_leaderless_partition() -> None:
    # seen under load: the deadline came while the second Metadata request was in flight, and the
    # user was told "reading cluster metadata: not done" instead of which partition had no leader
    interrupted = TimeoutError("reading cluster metadata: not done within 1500 ms (default.api.timeout.ms)")
    conn = FakeConnection([answer(-1), interrupted])
    with pytest.raises(LeaderNotAvailableError, match=r"orders-0 had no leader for 1500 ms"):
        leaders_of(conn, [TP], Deadline(1500))  # type: ignore[arg-type]


def test_a_cluster_that_never_answers_is_a_timeout_not_a_missing_leader() -> None:
    conn = FakeConnection([TimeoutError("reading cluster metadata: not done within 1500 ms")])
    with pytest.raises(TimeoutError, match="reading cluster metadata"):
        leaders_of(conn, [TP], Deadline(1500))  # type: ignore[arg-type]
