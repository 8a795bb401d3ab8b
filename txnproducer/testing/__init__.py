"""In-process Kafka mock cluster for tests: real TCP brokers with transactions and fault injection.

See :class:`MockCluster`. ``RequestLogEntry`` is what ``MockCluster.request_log`` holds; :class:`Acl` and
:class:`OAuthToken` are what ``MockCluster(acls=..., oauth_tokens=...)`` take.

What the room holds, from the outside in:

- ``cluster.py`` (:class:`MockCluster`, the public facade), ``standalone.py`` (run one as a process);
- the broker's network side: ``server.py`` (TCP, framing, fault hooks, dispatch), ``faults.py`` (the
  fault rules), ``error_responses.py`` (an error code as a response), ``request_log.py`` (what crossed the
  wire), ``api_messages.py`` (kafka-python's message classes by API key);
- ``handlers/``: one module per Kafka API (``end_txn.py`` answers EndTxn) and the one list wiring them;
- ``security/``: TLS listeners (certificates), SASL authentication per connection, ACLs and the
  authorizer the handlers ask;
- the domain the handlers act on: ``cluster_state.py`` (brokers, topics, coordinator placement),
  ``partition_log.py`` (batches, producer state, LSO, aborted index), the transaction coordinator
  (``txn_coordinator.py``, ``txn_metadata.py``) and the group coordinator (``group_coordinator.py``,
  ``group_membership.py``, ``classic_group.py``, ``group_offsets.py``);
- ``wire_client.py``: a bare protocol client for tests that need to say exactly what goes on the wire.

Dependencies run one way: cluster and server import the handler list, handlers import the domain, the
domain never imports a handler (coordinators reach the cluster state through small Protocols).

What it may import: the standard library, kafka-python, attrs, structlog, ``trustme`` (lazily, for TLS:
the ``testing`` extra), ``txnproducer._internal.protocol`` and ``txnproducer._internal.log`` - never the
producer or another part of ``txnproducer``, so the mock stays an independent peer of the client it tests.
"""

from .cluster import MockCluster
from .request_log import RequestLogEntry
from .security import Acl, OAuthToken

__all__ = ["Acl", "MockCluster", "OAuthToken", "RequestLogEntry"]
