"""The network: connections to brokers, cluster metadata, what each broker supports, and security.

One stack: every request of the library - Produce and Fetch, bootstrap and Metadata, the coordinators',
the group member's, the admin tools' - goes over these connections. kafka-python is the protocol's
dictionary (message classes, errors, structs), never a connection layer.

What the room holds: :class:`~.client.NetworkClient` (the one surface: send, poll, leaders, versions, and
the waits application threads may use), :class:`~.connection.DirectConnection` (a connection: the request
pipeline; :mod:`~.connection_setup` how it becomes ready), :mod:`~.direct_connections` (them by broker,
reconnect backoff, idle close, the poll and its wake-up), :class:`~.future.Future` (a request's outcome),
:mod:`~.addresses` (bootstrap servers, ``client_dns_lookup``), :class:`~.cluster_metadata.ClusterMetadata`
(brokers, leaders, topic ids), :mod:`~.metadata` (the Metadata request), :mod:`~.refresh` (when Metadata
and the features' ApiVersions are asked again), :class:`~.api_versions.BrokerFeatures` (what ApiVersions
told us), and security: :mod:`~.channel_security` (the context and mechanism, once), :mod:`~.tls_channel`
(TLS over memory BIOs), :mod:`~.sasl_authenticator` (SaslHandshake/SaslAuthenticate, KIP-368),
:mod:`~.sasl_mechanisms`, :mod:`~.scram_client` and :mod:`~.sasl_gssapi` (the tokens),
:mod:`~.connection_errors` and :mod:`~.auth_failures` (what a failed connection means), :mod:`~.failure_log`
(a WARNING, rate-limited, for each broker that cannot be reached), :mod:`~.tls_context` (the TLS context,
built once), :mod:`~.oauth_tokens` (the OAUTHBEARER token cache) and :mod:`~.redaction` (no credentials in
kafka-python's DEBUG lines, for an application's own kafka-python clients).

What it may import: ``txnproducer.errors``, ``txnproducer.config``, ``txnproducer.oauth``,
``_internal.protocol``, ``_internal.log`` and ``_internal.listeners`` - never the accumulator, the
Sender or the transaction manager: the network knows nothing of transactions.
"""
