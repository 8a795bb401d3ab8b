"""The consumer group protocol (KIP-848, ``group_protocol="consumer"``), spoken by our own member.

What the room holds: :class:`~.member.ConsumerGroupMember` (the same interface as the classic
``GroupMember``: subscribe - to names or a :class:`~..hooks.SubscriptionPattern` -, poll running the
reconciliation's hooks on the polling thread, group metadata with the member epoch, committed offsets,
close) and what it is made of: the member's facts and state machine (``state``), its IO thread's turn
(``heartbeat_loop``), the one request it speaks (``consumer_group_heartbeat``), the topic names of its
assignment (``topic_names``: Metadata by topic id), its settings (``settings``) and the typed errors of
the protocol's codes (``failures``). It shares the room's IO thread (``io_thread``), coordinator link
(``coordinator``), waits and committed-offset lookups (``waits``, ``committed``) with the classic
member.

What it may import: what the group room may (``txnproducer.errors``, ``_internal.protocol``,
``_internal.network``, ``_internal.log``) and the room's shared modules - never the classic protocol's
member and rounds (``classic/``).
"""

from .member import ConsumerGroupMember
from .settings import ConsumerGroupSettings

__all__ = ["ConsumerGroupMember", "ConsumerGroupSettings"]
