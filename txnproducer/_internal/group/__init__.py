"""Consumer group membership, both group protocols spoken by our own members, for a consumer whose
fetching is its own.

What the room holds: two members behind one interface (``hooks.Membership``: subscribe, poll, group
metadata for KIP-447 fencing, committed offsets, close) - the classic protocol's
:class:`~.classic.member.GroupMember` in ``classic/`` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup;
eager, the leader assigns) and the consumer protocol's ``ConsumerGroupMember`` in ``kip848/`` (KIP-848:
ConsumerGroupHeartbeat, the broker assigns, partitions move one at a time) - and, here, what they share:
the coordinator link (``coordinator``, ``find_coordinator``), the member's IO thread (``io_thread``), the
polling thread's waits (``waits``), the committed offsets (``committed``, ``offset_fetch``), the hooks
the owner implements and the subscription pattern (``hooks``, ``subscription``), the membership state
both threads read (``state``: the coordinator for both, the classic generation beside it), the
settings (``settings``: the group id and instance id rules of both, the classic member's
``GroupSettings``), the typed errors (``failures``) and the version table (``versions``).

What it may import: ``txnproducer.errors``, ``txnproducer.config``, ``_internal.protocol`` (the
consumer protocol's payloads, error codes), ``_internal.network`` (connections, TLS, SASL) and
``_internal.log`` - never the producer, the transaction manager, the fetch path or ``eos``: a
member knows nothing of transactions; its owner does, through the hooks.
"""

from .classic.member import DEFAULT_CLOSE_TIMEOUT_S, GroupMember
from .hooks import RebalanceHooks, SubscriptionPattern
from .kip848 import ConsumerGroupMember, ConsumerGroupSettings
from .offset_fetch import CommittedOffset
from .settings import ASSIGNOR_NAMES, GroupSettings, connection_config

__all__ = [
    "ASSIGNOR_NAMES",
    "DEFAULT_CLOSE_TIMEOUT_S",
    "CommittedOffset",
    "ConsumerGroupMember",
    "ConsumerGroupSettings",
    "GroupMember",
    "GroupSettings",
    "RebalanceHooks",
    "SubscriptionPattern",
    "connection_config",
]
