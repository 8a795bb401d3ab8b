"""ApiVersions (key 18): v0-4.

Behaviour:
- Lists every API this mock answers - exactly the declarations in ``handlers/__init__.py``, SaslHandshake
  and SaslAuthenticate only on a SASL listener (``state.settings["sasl"]``) - with the
  versions of :meth:`Api.advertised <txnproducer.testing.handlers.api.Api.advertised>`: Kafka 4.1.0's
  range intersected with what kafka-python can decode, capped below TV2 (Produce v11, AddPartitionsToTxn,
  EndTxn and TxnOffsetCommit v4) and raised with 2PC (InitProducerId v6). APIs the mock does not handle are
  not listed, unlike a real broker's 73 keys.
- An ApiVersions request of a version above v4 never reaches this handler: the server answers it with a
  v0 UNSUPPORTED_VERSION response carrying the same list (``server.py``), as Kafka does.

Version notes:
- v3+: supported features (group.version, kraft.version, metadata.version 7-27, transaction.version 0-2)
  and finalized features (transaction.version only when it is above 0), with ``state.features_epoch``.
- v3: KIP-1022 - features whose minimum version is 0 are left out of the supported features; v4 lists
  them all.

Simplifications: the feature levels are Kafka 4.1.0's, fixed (metadata.version 27 finalized); only
transaction.version follows ``MockCluster(transaction_version=...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka.protocol.metadata import ApiVersionsResponse

from txnproducer._internal.protocol import error_codes as ec

from .. import api_messages
from .api import Api, RequestContext

if TYPE_CHECKING:  # pragma: no cover
    from ..cluster_state import ClusterState

KEY = 18
METADATA_VERSION_LEVEL = 27

#: (transaction_version, enable_2pc, sasl) -> [(api_key, min_version, max_version)] of every handled API
AdvertisedVersions = Callable[[int, bool, bool], list[tuple[int, int, int]]]


def _answer(state: ClusterState, ctx: RequestContext, advertised: AdvertisedVersions) -> Any:
    """The ApiVersions response for ``ctx.api_version``, listing ``advertised(...)``."""
    tv = state.transaction_version
    values: dict[str, Any] = {
        "error_code": ec.NONE,
        "api_keys": [
            {"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in state.capped_versions(
                ctx.broker_id, advertised(tv, bool(state.settings.get("enable_2pc", False)),
                                          bool(state.settings.get("sasl", False))))
        ],
        "throttle_time_ms": 0,
    }
    if ctx.api_version >= 3:
        supported = [
            ("group.version", 0, 1),
            ("kraft.version", 0, 1),
            ("metadata.version", 7, METADATA_VERSION_LEVEL),
            ("transaction.version", 0, 2),
        ]
        if ctx.api_version < 4:  # KIP-1022: v3 omits features whose minimum is 0
            supported = [f for f in supported if f[1] > 0]
        finalized = [("group.version", 1), ("kraft.version", 1), ("metadata.version", METADATA_VERSION_LEVEL)]
        if tv > 0:
            finalized.insert(1, ("transaction.version", tv))
        values.update(
            supported_features=[{"name": n, "min_version": lo, "max_version": hi} for n, lo, hi in supported],
            finalized_features_epoch=state.features_epoch,
            finalized_features=[
                {"name": n, "max_version_level": lvl, "min_version_level": lvl} for n, lvl in finalized
            ],
            zk_migration_ready=False,
        )
    return api_messages.build(ApiVersionsResponse, ctx.api_version, values)


def declare(advertised: AdvertisedVersions) -> Api:
    """ApiVersions' declaration, answering with ``advertised`` - the version table of the handler list.

    The one handler that needs the list it is part of: ``handlers/__init__.py`` passes the table in, so
    this module does not import the list (no import circle).
    """

    def handle(state: ClusterState, ctx: RequestContext, request: Any) -> Any:
        return _answer(state, ctx, advertised)

    return Api(KEY, "ApiVersions", 0, 4, handle)
