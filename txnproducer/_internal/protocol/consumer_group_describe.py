"""ConsumerGroupDescribe (key 69): v0-1, KIP-848's describe of consumer-protocol groups.

Why our own classes: kafka-python (3.0) has none; the MockCluster answers it and tests and tools read a
group's members, epochs and assignments through it (``schemas/ConsumerGroupDescribe*.json``, loaded by
kafka-python's generic message classes).

Per group: state (``empty``, ``assigning``, ``reconciling``, ``stable``, ``dead`` - lower case, unlike
DescribeGroups), the group epoch and the target assignment epoch, the server-side assignor; per member its
epoch, subscription (names and regex), current and target assignment by topic id *and* name. A group of the
classic protocol answers GROUP_ID_NOT_FOUND ("... is not a consumer group").

Versions (Kafka 4.1.0 advertises v0-1): v1 adds each member's ``member_type`` (0 a classic-protocol member of
a consumer group - online migration -, 1 a consumer-protocol member; -1 unknown).
"""

from __future__ import annotations

from typing import Any

from .schemas import message_class

__all__ = [
    "API_KEY",
    "CLASSIC_MEMBER",
    "CONSUMER_MEMBER",
    "MAX_VERSION",
    "MIN_VERSION",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
]

API_KEY = 69
MIN_VERSION = 0
MAX_VERSION = 1
#: ``member_type`` (v1+) of a classic-protocol member (JoinGroup/SyncGroup) of a consumer group
CLASSIC_MEMBER = 0
#: ``member_type`` (v1+) of a member that speaks ConsumerGroupHeartbeat
CONSUMER_MEMBER = 1


#: ``ConsumerGroupDescribeRequest[v](group_ids=[...], include_authorized_operations=False)``.
ConsumerGroupDescribeRequest: Any = message_class("ConsumerGroupDescribeRequest", __name__)
#: Each group's state, epochs, assignor and members.
ConsumerGroupDescribeResponse: Any = message_class("ConsumerGroupDescribeResponse", __name__)
