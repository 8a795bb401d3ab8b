"""SaslAuthenticate (key 36): v0-2, answered only on a SASL listener (``MockCluster(sasl_mechanisms=...)``).

Behaviour (``ConnectionAuth.authenticate`` keeps the state, ``security/sasl.py`` runs the mechanism):
- a step of the exchange: NONE with the server's challenge (SCRAM's server-first, OAUTHBEARER's error JSON);
- the last step: NONE with the final challenge (SCRAM's server signature, empty for PLAIN/OAUTHBEARER);
  the connection's principal is now ``User:<name>``;
- a failure: SASL_AUTHENTICATION_FAILED with Kafka's message for the mechanism ("Authentication failed:
  Invalid username or password" for PLAIN, Kafka's generic message for SCRAM, the JSON status and what was
  wrong for OAUTHBEARER), then the connection is closed;
- on an authenticated connection outside a re-authentication: ILLEGAL_SASL_STATE, "SaslAuthenticate request
  received after successful authentication" (KafkaApis' answer; the connection stays).
The request log records no token bytes (nor does any log line of the mock).

Version notes:
- v1+: ``session_lifetime_ms`` on success (KIP-368): ``sasl_session_lifetime_ms``, or less when the
  OAUTHBEARER token expires sooner; 0 when sessions do not expire. v0 has no such field (the session still
  expires on the broker, as Kafka's does).
- v2: flexible version, same fields.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.sasl import SaslAuthenticateResponse

from .. import api_messages
from ..cluster_state import ClusterState
from .api import Api, RequestContext


def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
    assert ctx.auth is not None, "SaslAuthenticate is answered only on a connection the server accepted"
    result = ctx.auth.authenticate(bytes(request.auth_bytes or b""), state.now_ms())
    return api_messages.build(
        SaslAuthenticateResponse,
        ctx.api_version,
        {
            "error_code": result.error_code,
            "error_message": result.error_message,
            "auth_bytes": result.auth_bytes,
            "session_lifetime_ms": result.session_lifetime_ms,
        },
    )


API = Api(36, "SaslAuthenticate", 0, 2, handle, needs_sasl=True)
