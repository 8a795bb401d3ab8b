"""The network: connections to brokers, cluster metadata, and what each broker supports.

What the room holds: :class:`~.client.NetworkClient` (the Sender's one surface over kafka-python's
connections and metadata, and the only object application threads may poke: wake the Sender, wait
for a topic), :class:`~.connection.DirectConnection` (the Sender's own plaintext connection),
:class:`~.selector.QuietMissSelector` (one poll for both kinds of socket) and
:class:`~.api_versions.BrokerFeatures` (what ApiVersions told us).

What it may import: ``txnproducer.errors``, ``txnproducer.config``, ``_internal.protocol`` and
``_internal.log`` - never the accumulator, the Sender or the transaction manager: the network
knows nothing of transactions.
"""
