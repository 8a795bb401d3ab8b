"""SaslHandshake (key 17): v0-1, answered only on a SASL listener (``MockCluster(sasl_mechanisms=...)``).

Behaviour (``ConnectionAuth.handshake`` keeps the state; Kafka's ``SaslServerAuthenticator``):
- an enabled mechanism: NONE with the enabled mechanisms; the connection now expects SaslAuthenticate;
- any other: UNSUPPORTED_SASL_MECHANISM with the enabled mechanisms, then the connection is closed;
- on an authenticated connection whose session has a lifetime (``sasl_session_lifetime_ms`` or an
  expiring OAUTHBEARER token): the start of a KIP-368 re-authentication - another mechanism than the
  session's is answered NONE and the connection closed at its next token, as Kafka does; without a lifetime
  ILLEGAL_SASL_STATE, and the connection stays (KafkaApis' answer).

Version notes:
- v0: the tokens that follow are unframed (bare SASL bytes, no SaslAuthenticate header); the server reads
  them as such (``server.py``) and logs each as a "SaslBytes" entry; a failure closes the connection with no
  answer.
- v1: the tokens come in SaslAuthenticate requests.

Simplification: not advertised, and not answered (the connection is closed), on a listener without SASL,
where Kafka answers ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.sasl import SaslHandshakeResponse

from ..cluster_state import ClusterState
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    assert ctx.auth is not None, "SaslHandshake is answered only on a connection the server accepted"
    code, mechanisms = ctx.auth.handshake(request.mechanism, ctx.api_version)
    return SaslHandshakeResponse[ctx.api_version](error_code=code, mechanisms=mechanisms)


API = Api(17, "SaslHandshake", 0, 1, handle, needs_sasl=True)
