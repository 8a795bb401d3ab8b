"""What a handler module declares (:class:`Api`) and what a handler is called with (:class:`RequestContext`).

Why a module of its own: every handler module and the server need these two types, and the handler list
in ``handlers/__init__.py`` imports every handler module; with the types here, no handler module imports
that list (no import circle) and the list stays the one place that says which APIs are answered.

A handler module ends with one declaration, e.g. ``API = Api(26, "EndTxn", 0, 5, handle, tv1_max_version=4)``:
the API key, its name, the version range Apache Kafka 4.1.0 advertises for it (the conformance recording
``api_versions.json``), the lower maximum Kafka advertises while ``transaction.version`` < 2 (KIP-890) or
the higher one with two-phase commit enabled (KIP-939), and the handler. ApiVersions answers from these
declarations (:meth:`Api.advertised`).

A request's context also says who sent it (``principal``) and carries the cluster's authorizer, so a
handler asks ``ctx.allows(Operation.WRITE, ResourceType.TOPIC, name)`` as Kafka's ``KafkaApis`` asks its
``AuthHelper``; without an authorizer every check allows, as on a Kafka broker without one. The SASL
handlers reach their connection's authentication state through ``ctx.auth``.

A handler is called with the cluster state lock held (``state.lock``, an ``RLock``) and returns the
response object for the request's version (None: no answer, Produce with acks=0). A handler that must
wait (JoinGroup, a long-polling Fetch) waits on ``state.cond`` (a ``Condition`` on that lock), which
releases the lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ..security.acl import ANONYMOUS, CLUSTER_NAME, Authorizer, Operation, ResourceType

if TYPE_CHECKING:  # pragma: no cover
    from ..cluster_state import ClusterState
    from ..security.connection_auth import ConnectionAuth


@attrs.frozen
class RequestContext:
    """What a handler knows about the request besides its body."""

    broker_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    connection_id: int
    #: who sent the request: ``User:<name>`` after SASL or from a TLS client certificate, else ANONYMOUS
    principal: str = ANONYMOUS
    #: the cluster's ACLs; None: no authorizer, everything is allowed
    authorizer: Authorizer | None = None
    #: the connection's authentication state (None on fakes that run handlers without a server)
    auth: ConnectionAuth | None = None

    def allows(self, operation: Operation, resource_type: ResourceType, name: str = CLUSTER_NAME) -> bool:
        """Whether the principal may do ``operation`` on the resource (Kafka's ``AuthHelper.authorize``)."""
        return self.authorizer is None or self.authorizer.authorize(
            self.principal, operation, resource_type, name)

    def allows_some(self, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether the principal may do ``operation`` on some resource of the type (Kafka's
        ``authorizeByResourceType``)."""
        return self.authorizer is None or self.authorizer.authorize_by_resource_type(
            self.principal, operation, resource_type)


Handler = Callable[["ClusterState", RequestContext, Any], Any]


@attrs.frozen
class Api:
    """One handled API: key, name, the versions Kafka 4.1.0 advertises for it, and its handler."""

    key: int
    name: str
    min_version: int
    max_version: int
    handler: Handler
    #: the highest version advertised while transaction.version < 2 (KIP-890 versions need TV2)
    tv1_max_version: int | None = None
    #: the highest version advertised when two-phase commit is enabled (KIP-939)
    two_pc_max_version: int | None = None
    #: answered (and advertised) only on a SASL listener (SaslHandshake, SaslAuthenticate)
    needs_sasl: bool = False

    def advertised(
        self, schema_versions: tuple[int, int], transaction_version: int, enable_2pc: bool, sasl: bool = False
    ) -> tuple[int, int] | None:
        """(min, max) as ApiVersions reports them, or None when no version is left.

        The declared range (raised to ``two_pc_max_version`` with 2PC enabled) intersected with
        ``schema_versions`` (what kafka-python can decode), then capped at ``tv1_max_version`` below TV2.
        None for a SASL API on a listener without SASL.
        """
        if self.needs_sasl and not sasl:
            return None
        lo, hi = self.min_version, self.max_version
        if enable_2pc and self.two_pc_max_version is not None:
            hi = self.two_pc_max_version
        lo, hi = max(lo, schema_versions[0]), min(hi, schema_versions[1])
        if transaction_version < 2 and self.tv1_max_version is not None:
            hi = min(hi, self.tv1_max_version)
        return (lo, hi) if lo <= hi else None
