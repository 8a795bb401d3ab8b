"""The network: connections to brokers, cluster metadata, what each broker supports, and security.

What the room holds: :class:`~.client.NetworkClient` (the Sender's one surface over kafka-python's
connections and metadata, and the only object application threads may poke: wake the Sender, wait
for a topic), :class:`~.connection.DirectConnection` (the Sender's own connection: the request
pipeline; :mod:`~.connection_setup` how it becomes ready) and :mod:`~.direct_connections` (them by
broker, and the poll), :class:`~.selector.QuietMissSelector` (one poll for both kinds of socket),
:class:`~.api_versions.BrokerFeatures` (what ApiVersions told us), and the secured-cluster pieces:
on our connections :mod:`~.channel_security` (the context and mechanism, once), :mod:`~.tls_channel`
(TLS over memory BIOs), :mod:`~.sasl_authenticator` (SaslHandshake/SaslAuthenticate, KIP-368),
:mod:`~.sasl_mechanisms` and :mod:`~.scram_client` (the tokens); on kafka-python's :mod:`~.secured`
(its connection manager, made to report TLS/SASL failures); for both :mod:`~.connection_errors` and
:mod:`~.auth_failures` (what a failed connection means), :mod:`~.failure_log` (a WARNING, rate-limited,
for each broker that cannot be reached), :mod:`~.tls_context` (the TLS context,
built once), :mod:`~.oauth_tokens` (the OAUTHBEARER token cache) and :mod:`~.redaction` (no
credentials in kafka-python's DEBUG lines).

What it may import: ``txnproducer.errors``, ``txnproducer.config``, ``txnproducer.oauth``,
``_internal.protocol``, ``_internal.log`` and ``_internal.listeners`` - never the accumulator, the
Sender or the transaction manager: the network knows nothing of transactions.
"""
