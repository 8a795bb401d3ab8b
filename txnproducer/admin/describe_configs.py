"""DescribeConfigs (key 32): v1-4 - one topic's configuration values (``cleanup.policy``, ...).

Why the tools need it: the Spark sink refuses a state topic that is not compacted (its decisions would
expire with the retention time), whoever created it. Any broker answers for a topic. Authorization (Kafka
4.1's ``handleDescribeConfigsRequest``): DescribeConfigs on the topic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka.protocol.admin import DescribeConfigsRequest

from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, UnexpectedBrokerError

__all__ = ["topic_configs"]

_TOPIC = 2  # ConfigResource.Type.TOPIC


def topic_configs(conn: AdminConnection, topic: str, names: Sequence[str],
                  deadline: Deadline) -> dict[str, str | None]:
    """The values of the configs ``names`` of ``topic`` (None: set to no value)."""

    def build(version: int) -> Any:
        resource = DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=_TOPIC, resource_name=topic, configuration_keys=list(names))
        values: dict[str, Any] = {"resources": [resource]}
        if version >= 1:
            values["include_synonyms"] = False
        if version >= 3:
            values["include_documentation"] = False
        return DescribeConfigsRequest(version=version, **values)

    node = conn.any_node(deadline)
    what = f"reading the configs of topic {topic!r}"
    answer = conn.send(node, DescribeConfigsRequest, build, deadline, what)
    result = answer.results[0]
    code = int(result.error_code)
    if code == ec.TOPIC_AUTHORIZATION_FAILED:
        raise AdminAuthorizationError(
            f"not authorized to read the configs of topic {topic!r} (TOPIC_AUTHORIZATION_FAILED): grant"
            f" DescribeConfigs on Topic {topic!r}", error_code=code,
            acl=f"DescribeConfigs on Topic {topic!r}")
    if code != ec.NONE:
        message = getattr(result, "error_message", None) or ec.error_name(code)
        raise UnexpectedBrokerError(f"reading the configs of topic {topic!r}: {message}", error_code=code)
    return {str(c.name): None if c.value is None else str(c.value) for c in result.configs}
