"""Consumer group membership, both group protocols spoken by our own members, for a consumer whose
fetching is its own.

What the room holds: two members behind one interface (``hooks.Membership``: subscribe, poll, group
metadata for KIP-447 fencing, committed offsets, close) - the classic protocol's
:class:`~.member.GroupMember` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; eager, the leader
assigns) here, the consumer protocol's ``ConsumerGroupMember`` (KIP-848: ConsumerGroupHeartbeat, the
broker assigns, partitions move one at a time) in ``kip848/`` - and what they share: the coordinator
link (``coordinator``, ``find_coordinator``), the member's IO thread (``io_thread``), the polling
thread's waits (``waits``), the committed offsets (``committed``, ``offset_fetch``), the hooks the
owner implements and the subscription pattern (``hooks``), the typed errors (``failures``). The
classic member is made of the shared membership state (``state``), one module per Kafka request
(``join_group``, ``sync_group``, ``heartbeat``, ``leave_group``, ``topic_metadata``), the rebalance
round (``rebalance``), the heartbeat step (``heartbeat_loop``), the assignors (``assignors``), the
settings (``settings``) and the version table (``versions``).

What it may import: ``txnproducer.errors``, ``txnproducer.config``, ``_internal.protocol`` (the
consumer protocol's payloads, error codes), ``_internal.network`` (connections, TLS, SASL) and
``_internal.log`` - never the producer, the transaction manager, the fetch path or ``eos``: a
member knows nothing of transactions; its owner does, through the hooks.
"""

from .hooks import RebalanceHooks, SubscriptionPattern
from .kip848 import ConsumerGroupMember, ConsumerGroupSettings
from .member import DEFAULT_CLOSE_TIMEOUT_S, GroupMember
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
