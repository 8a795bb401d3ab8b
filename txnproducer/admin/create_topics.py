"""CreateTopics (key 19): v2-7 - create a topic with its partitions and configs, unless it exists.

Why the tools need it: the Spark sink's state topic must exist, compacted, before any task reads it (a
reader of a missing topic could make a broker with ``auto.create.topics.enable`` create it uncompacted),
and the demo and the benchmarks create their topics on clusters that often disable auto-creation.

Any broker takes the request (KRaft brokers forward it to the controller); NOT_CONTROLLER is asked again
after ``retry_backoff_ms``. TOPIC_ALREADY_EXISTS is success: another process created it meanwhile, and the
caller checks its layout. Authorization (Kafka 4.1's ``handleCreateTopicsRequest``): Create on the
cluster or the topic (TOPIC_AUTHORIZATION_FAILED, an :class:`AdminAuthorizationError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka.protocol.admin import CreateTopicsRequest

from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, BrokerTooOldError, UnexpectedBrokerError

__all__ = ["create_topic"]

_MIN_VERSION = 2  # throttle time and the error message; Kafka 1.0+
_RETRY = frozenset({ec.NOT_CONTROLLER, ec.REQUEST_TIMED_OUT})


def create_topic(conn: AdminConnection, name: str, partitions: int, deadline: Deadline, *,
                 replication_factor: int = -1, configs: Mapping[str, str] | None = None) -> bool:
    """Create topic ``name``; True when this call created it, False when it existed already.
    ``replication_factor`` -1: the brokers' ``default.replication.factor``."""
    entries = [CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(name=k, value=v)
               for k, v in sorted((configs or {}).items())]
    timeout_ms = max(1, int(deadline.remaining() * 1000))

    def build(version: int) -> Any:
        if version < _MIN_VERSION:
            raise BrokerTooOldError(
                f"creating topic {name!r} needs CreateTopics v{_MIN_VERSION} (Kafka 1.0+)")
        topic = CreatableTopic(name=name, num_partitions=partitions, replication_factor=replication_factor,
                               assignments=[], configs=entries)
        return CreateTopicsRequest(version=version, topics=[topic], timeout_ms=timeout_ms,
                                   validate_only=False)

    last = ""
    while True:
        node = conn.any_node(deadline)
        answer = conn.send(node, CreateTopicsRequest, build, deadline, f"creating topic {name!r}{last}")
        result = next(t for t in answer.topics if t.name == name)
        code = int(result.error_code)
        if code == ec.NONE:
            return True
        if code == ec.TOPIC_ALREADY_EXISTS:
            return False
        if code in (ec.TOPIC_AUTHORIZATION_FAILED, ec.CLUSTER_AUTHORIZATION_FAILED):
            raise AdminAuthorizationError(
                f"not authorized to create topic {name!r} ({ec.error_name(code)}): grant Create on Topic"
                f" {name!r} or on the cluster", error_code=code, acl=f"Create on Topic {name!r}")
        if code not in _RETRY:
            message = getattr(result, "error_message", None) or ec.error_name(code)
            raise UnexpectedBrokerError(f"creating topic {name!r}: {message}", error_code=code)
        last = f" (last answer: {ec.error_name(code)})"
        conn.backoff(deadline, f"creating topic {name!r}{last}")


CreatableTopic = CreateTopicsRequest.CreatableTopic
