"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), spoken by our own member.

What the room holds: :class:`~.member.GroupMember` - eager rebalances in which every member gives up
its partitions, rejoins, and the leader assigns (``assignors``: Kafka's ``range`` and ``roundrobin``) -
and what it is made of: one module per Kafka request (``join_group``, ``sync_group``, ``heartbeat``,
``leave_group``, ``topic_metadata`` for the leader's partition counts), the rebalance round that chains
them on the IO thread (``rebalance``) and the heartbeat thread's step (``heartbeat_loop``). It shares
the group room's IO thread, coordinator link, waits, committed-offset lookups, membership state,
settings and typed errors with the consumer protocol's member (``kip848/``).

What it may import: what the group room may, and the room's shared modules - never ``kip848``.
"""
