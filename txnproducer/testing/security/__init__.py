"""The MockCluster's security: TLS listeners, SASL authentication, ACLs - as franz-go's kfake offers them.

What the room holds:

- ``listener.py``: :class:`ListenerSecurity`, the brokers' listener (PLAINTEXT, SSL, SASL_PLAINTEXT or
  SASL_SSL) built from the MockCluster's options; the server asks it to accept each connection;
- ``tls.py``: the certificates (a throw-away CA from ``trustme``, the brokers' certificate, client
  certificates for mutual TLS) and the principal of a client certificate;
- ``connection_auth.py``: one connection's authentication state - which requests it may send before it
  authenticated, SaslHandshake / SaslAuthenticate, KIP-368 session lifetime and re-authentication;
- ``sasl.py``: the server side of PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER, one object per attempt, and
  Kafka's failure messages; ``scram.py``: the SCRAM exchange itself (RFC 5802/7677);
- ``acl.py``: :class:`Acl` and the :class:`Authorizer` the handlers ask (Kafka's StandardAuthorizer rules).

The Kafka-protocol side lives with the other APIs: ``handlers/sasl_handshake.py`` and
``handlers/sasl_authenticate.py`` drive ``connection_auth``; every handler asks the authorizer through its
request context (``RequestContext.allows``); ``server.py`` wraps sockets and gates requests.

What it may import: the standard library, attrs, ``trustme`` (only inside ``tls.py``, only when TLS is
asked for: the ``testing`` extra), ``txnproducer._internal.protocol`` and ``txnproducer._internal.log``.
Nothing here imports a handler, the server or the cluster: they import this room.
"""

from .acl import Acl
from .sasl import OAuthToken

__all__ = ["Acl", "OAuthToken"]
