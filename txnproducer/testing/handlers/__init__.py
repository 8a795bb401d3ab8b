"""The MockCluster's request handlers: one module per Kafka API, and the one list that wires them.

What the room holds: a module per handled API, named after it (``end_txn.py`` answers EndTxn), whose
docstring opens with the key and versions ("EndTxn (key 26): v0-5 ...") followed by its behaviour,
version notes and simplifications of the real broker, and which ends with its declaration
(``API = Api(...)``, see ``api.py``); ``_common.py`` for the checks several of them share. This file
lists every declaration in :data:`HANDLERS` - the only place that says which APIs a broker answers - and
derives from it the lookup by key (:func:`lookup`, used by the server) and the ApiVersions answer
(:func:`advertised_versions`). SaslHandshake and SaslAuthenticate are declared ``needs_sasl``: answered and
advertised only on a SASL listener. Each handler makes the authorization checks Kafka's ``KafkaApis`` makes
for its API through ``ctx.allows`` (``api.py``), which allows everything when the cluster has no authorizer.

What it may import: the domain modules of ``txnproducer.testing`` (cluster state, coordinators, partition
logs, ``api_messages``, ``security/``), kafka-python, the standard library, attrs,
``txnproducer._internal.protocol`` and ``txnproducer._internal.log``. The domain never imports a handler;
the server and the cluster import this list.
"""

from __future__ import annotations

from .. import api_messages
from . import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_topics,
    describe_configs,
    describe_groups,
    describe_producers,
    describe_transactions,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    sync_group,
    txn_offset_commit,
    write_txn_markers,
)
from .api import Api, Handler, RequestContext

__all__ = ["HANDLERS", "SUPPORTED_VERSIONS", "Api", "RequestContext", "advertised_versions", "lookup"]


def advertised_versions(
    transaction_version: int, enable_2pc: bool = False, sasl: bool = False
) -> list[tuple[int, int, int]]:
    """(api_key, min, max) for every API this mock answers, as ApiVersions reports them (by key)."""
    out = []
    for api in HANDLERS:
        cls = api_messages.request_class(api.key)
        if cls is None:
            continue
        versions = api.advertised(cls.valid_versions, transaction_version, enable_2pc, sasl)
        if versions is not None:
            out.append((api.key, *versions))
    return out


#: Every API a broker answers, by key. An API not listed here closes the connection, as Kafka does.
HANDLERS: tuple[Api, ...] = (
    produce.API,  # 0
    fetch.API,  # 1
    list_offsets.API,  # 2
    metadata.API,  # 3
    offset_commit.API,  # 8
    offset_fetch.API,  # 9
    find_coordinator.API,  # 10
    join_group.API,  # 11
    heartbeat.API,  # 12
    leave_group.API,  # 13
    sync_group.API,  # 14
    describe_groups.API,  # 15
    list_groups.API,  # 16
    sasl_handshake.API,  # 17
    api_versions.declare(advertised_versions),  # 18
    create_topics.API,  # 19
    init_producer_id.API,  # 22
    offset_for_leader_epoch.API,  # 23
    add_partitions_to_txn.API,  # 24
    add_offsets_to_txn.API,  # 25
    end_txn.API,  # 26
    write_txn_markers.API,  # 27
    txn_offset_commit.API,  # 28
    describe_configs.API,  # 32
    sasl_authenticate.API,  # 36
    describe_producers.API,  # 61
    describe_transactions.API,  # 65
    list_transactions.API,  # 66
    consumer_group_heartbeat.API,  # 68
    consumer_group_describe.API,  # 69
)

_BY_KEY: dict[int, Api] = {api.key: api for api in HANDLERS}
if len(_BY_KEY) != len(HANDLERS) or list(_BY_KEY) != sorted(_BY_KEY):
    raise RuntimeError("HANDLERS must list each API key once, in key order")

#: Each handled API's declared (Kafka 4.1.0) version range, before the schema intersection and the
#: TV1 / 2PC caps of :func:`advertised_versions`.
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = {
    api.key: (api.min_version, api.max_version) for api in HANDLERS
}


def lookup(api_key: int, sasl: bool = False) -> Handler | None:
    """The handler of ``api_key``, or None (the connection is closed, as Kafka does for an unknown key).

    ``sasl``: whether the listener speaks SASL; without it the SASL APIs have no handler.
    """
    api = _BY_KEY.get(api_key)
    if api is None or (api.needs_sasl and not sasl):
        return None
    return api.handler
