"""Transactions: the client side of KIP-98/KIP-447/KIP-890, as the Java client's TransactionManager.

What the room holds: the state machine (``state``: states and the one table of legal
transitions; ``manager``: :class:`~.manager.TransactionManager`, which application threads and the
Sender call), one module per coordinator request named after it (``find_coordinator``,
``init_producer_id``, ``add_partitions_to_txn``, ``add_offsets_to_txn``, ``txn_offset_commit``,
``end_txn``) on a shared base (``handler``: the priority, the retry rules, the errors every
coordinator request treats alike, and ``TxnContext``, the interface handlers see of the manager),
the queue of those requests (``request_queue``), the request versions per transaction version
(``versions``), per-partition sequences (``sequences``), the producer's identity
(``producer_id``), what a blocked call waits on (``result``), consumer offsets as passed in
(``offsets``), how failures become KIP-1050 error classes (``error_policy``) and the interface through
which a watcher (tracing) is told every state change (``observer``).

What it may import: ``txnproducer.errors``, ``txnproducer.prepared``, ``_internal.protocol``,
``_internal.metrics`` and ``_internal.log``. Handlers never import the manager (they see it as a
``TxnContext``); nothing here imports the network, the accumulator or the Sender.
"""
