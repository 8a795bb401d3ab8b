"""Consumer group membership: the classic group protocol (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetFetch) spoken by our own member, for a consumer whose fetching is its own.

What the room holds: :class:`~.member.GroupMember` (the interface a consumer uses: subscribe, poll,
group metadata for KIP-447 fencing, committed offsets, close) and what it is made of - the shared
membership state (``state``), the member's IO thread (``io_thread``), the coordinator link
(``coordinator``), one module per Kafka request (``find_coordinator``, ``join_group``,
``sync_group``, ``heartbeat``, ``leave_group``, ``offset_fetch``, ``topic_metadata``), the rebalance
round (``rebalance``), the heartbeat step (``heartbeat_loop``), the assignors (``assignors``), the
settings (``settings``), the hooks the owner implements (``hooks``), the version table
(``versions``) and the typed errors (``failures``).

What it may import: ``txnproducer.errors``, ``txnproducer.config``, ``_internal.protocol`` (the
consumer protocol's payloads, error codes), ``_internal.network`` (connections, TLS, SASL) and
``_internal.log`` - never the producer, the transaction manager, the fetch path or ``eos``: a
member knows nothing of transactions; its owner does, through the hooks.
"""

from .hooks import RebalanceHooks
from .member import DEFAULT_CLOSE_TIMEOUT_S, GroupMember
from .offset_fetch import CommittedOffset
from .settings import ASSIGNOR_NAMES, GroupSettings, connection_config

__all__ = [
    "ASSIGNOR_NAMES",
    "DEFAULT_CLOSE_TIMEOUT_S",
    "CommittedOffset",
    "GroupMember",
    "GroupSettings",
    "RebalanceHooks",
    "connection_config",
]
