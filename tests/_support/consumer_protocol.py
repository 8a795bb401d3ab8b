"""A KIP-848 member spoken by hand over the wire, for tests of MockCluster's consumer group coordinator.

Why not a client library: a test of the coordinator must say exactly what each ConsumerGroupHeartbeat
carries - an epoch that is too old, owned partitions a member should have given up, a null field - which a
real consumer hides. :class:`Member` keeps what a member must (its id, epoch, assignment) and sends what the
test says, over a :class:`~txnproducer.testing.wire_client.WireClient` to the group's coordinator.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from txnproducer._internal.protocol.consumer_group_describe import ConsumerGroupDescribeRequest
from txnproducer._internal.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient

__all__ = ["Member", "coordinator_client", "describe", "new_member_id"]

_TP = ConsumerGroupHeartbeatRequest.TopicPartitions


def new_member_id() -> str:
    """A member id as the Java client makes them (a UUID, 22 URL-safe base64 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def coordinator_client(cluster: MockCluster, group: str, client_id: str = "kip848-test") -> WireClient:
    """A connection to the broker that coordinates ``group``."""
    host, port = cluster.broker_address(1)
    with WireClient(host, port) as bootstrap:
        found = bootstrap.send(FindCoordinatorRequest[6](key_type=0, coordinator_keys=[group])).coordinators[
            0
        ]
    assert found.error_code == 0, found
    return WireClient(found.host, found.port, client_id=client_id)


def describe(cluster: MockCluster, group: str) -> Any:
    """ConsumerGroupDescribe v1 of ``group``: the described group."""
    with coordinator_client(cluster, group) as client:
        answer = client.send(
            ConsumerGroupDescribeRequest[1](group_ids=[group], include_authorized_operations=False)
        )
    return answer.groups[0]


class Member:
    """One consumer-protocol member of ``group`` on ``cluster`` (see the module docstring).

    ``assigned`` is what the coordinator last said the member may use ({topic name: [partitions]});
    :meth:`beat` sends ``owned`` as given, else what the member holds (:attr:`owned`, updated by the test).
    """

    def __init__(
        self,
        cluster: MockCluster,
        group: str,
        member_id: str | None = None,
        *,
        version: int = 1,
        instance_id: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.group = group
        self.member_id = member_id or new_member_id()
        self.version = version
        self.instance_id = instance_id
        self.epoch = 0
        self.assigned: dict[str, list[int]] = {}
        self.owned: dict[str, list[int]] = {}
        self.client = coordinator_client(cluster, group, client_id=f"client-{self.member_id[:6]}")

    def close(self) -> None:
        self.client.close()

    # -- requests ----------------------------------------------------------------------------------
    def send(self, **fields: Any) -> Any:
        """A heartbeat with exactly ``fields`` (the rest: this member's id and epoch, "unchanged" nulls)."""
        values: dict[str, Any] = {
            "group_id": self.group,
            "member_id": self.member_id,
            "member_epoch": self.epoch,
            "instance_id": self.instance_id,
            "rack_id": None,
            "rebalance_timeout_ms": -1,
            "subscribed_topic_names": None,
            "server_assignor": None,
            "topic_partitions": None,
        }
        if self.version >= 1:
            values["subscribed_topic_regex"] = None
        values.update(fields)
        answer = self.client.send(ConsumerGroupHeartbeatRequest[self.version](**values))
        if answer.error_code == 0:
            if answer.member_id:
                self.member_id = answer.member_id
            self.epoch = answer.member_epoch
            if answer.assignment is not None:
                self.assigned = self._by_name(answer.assignment.topic_partitions)
        return answer

    def join(
        self,
        topics: list[str] | None = None,
        *,
        regex: str | None = None,
        assignor: str | None = None,
        rebalance_timeout_ms: int = 30_000,
    ) -> Any:
        self.epoch = 0
        fields: dict[str, Any] = {
            "member_epoch": 0,
            "subscribed_topic_names": topics,
            "server_assignor": assignor,
            "rebalance_timeout_ms": rebalance_timeout_ms,
            "topic_partitions": [],
        }
        if regex is not None:
            fields["subscribed_topic_regex"] = regex
        return self.send(**fields)

    def beat(self, owned: dict[str, list[int]] | None = None, **fields: Any) -> Any:
        """A heartbeat listing ``owned`` (default: :attr:`owned`) and the ``fields`` given."""
        held = self.owned if owned is None else owned
        return self.send(topic_partitions=self._by_id(held), **fields)

    def ack(self) -> Any:
        """Own exactly what was assigned, and say so: the acknowledgment of a revocation."""
        self.owned = {t: list(ps) for t, ps in self.assigned.items()}
        return self.beat()

    def leave(self, *, static: bool = False) -> Any:
        return self.send(member_epoch=-2 if static else -1)

    # -- topic ids ---------------------------------------------------------------------------------
    def _ids(self) -> dict[str, uuid.UUID]:
        with self.cluster.state.lock:
            return {name: topic.topic_id for name, topic in self.cluster.state.topics.items()}

    def _by_id(self, partitions: dict[str, list[int]]) -> list[Any]:
        ids = self._ids()
        return [_TP(topic_id=ids[t], partitions=ps) for t, ps in partitions.items() if ps]

    def _by_name(self, topic_partitions: list[Any]) -> dict[str, list[int]]:
        names = {v: k for k, v in self._ids().items()}
        return {names[t.topic_id]: sorted(t.partitions) for t in topic_partitions}
