"""A request's response class when kafka-python's response registry lost one to a thread race.

kafka-python makes a message's version class on first use, without a lock, and registers each class it
makes as its API key's response class through a weak proxy. Two threads making the same version at once
leave the registry holding a proxy to the class the cache did not keep; once the garbage collector frees
it, ``request.header.get_response_class()`` raises ReferenceError for that API key for the rest of the
process (a CI run: four SyncGroup tests of one worker). These tests leave the registry in that state -
what the race leaves - and put it back afterwards.
"""

from __future__ import annotations

import gc
import threading
import types
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer.group import SyncGroupRequest, SyncGroupResponse

from txnproducer._internal.protocol.framing import RequestFramer
from txnproducer._internal.protocol.response_classes import complete_versions, response_class
from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient

_SYNC_GROUP = 14


@pytest.fixture
def registry_lost_sync_group() -> Iterator[None]:
    """The registry's SyncGroup entry a proxy to a class that is gone (as the race leaves it)."""
    registry = ResponseClassRegistry._response_class_registry
    saved = registry[_SYNC_GROUP]
    gone = type("SyncGroupResponse_v5", (), {"API_KEY": _SYNC_GROUP})
    ResponseClassRegistry.register_response_class(weakref.proxy(gone))
    del gone
    gc.collect()
    try:
        yield
    finally:
        registry[_SYNC_GROUP] = saved


def _sync_group(version: int) -> Any:
    return SyncGroupRequest[version](group_id="g", generation_id=1, member_id="m", assignments=[])


@pytest.mark.usefixtures("registry_lost_sync_group")
def test_the_producers_framing_finds_the_response_class_the_registry_lost() -> None:
    request = _sync_group(5)
    request.with_header(correlation_id=1, client_id="c")
    with pytest.raises(ReferenceError):  # kafka-python's own lookup, what the framing used to call
        request.header.get_response_class()
    _data, found, flexible = RequestFramer("c").frame(_sync_group(5), 7)
    assert found is SyncGroupResponse[5] and flexible is True


@pytest.mark.usefixtures("registry_lost_sync_group")
def test_the_wire_client_reads_the_answer_the_registry_lost() -> None:
    with MockCluster(num_brokers=1) as cluster:
        host, port = cluster.broker_address(cluster.broker_ids[0])
        with WireClient(host, port, client_id="wire") as client:
            answer = client.send(_sync_group(5))
    assert type(answer) is SyncGroupResponse and answer.error_code == 25  # UNKNOWN_MEMBER_ID, decoded


def test_every_version_is_made_once_and_every_thread_gets_it() -> None:
    # a primary class of its own (a request: it registers nothing), none of its versions made yet
    fresh = types.new_class("SyncGroupRequest", (ApiMessage,), {})
    assert fresh._VERSIONS == {}
    complete_versions(fresh)
    made = dict(fresh._VERSIONS)
    assert sorted(made) == list(range(fresh.min_version, fresh.max_version + 1))
    versions = sorted(made)
    seen: list[list[Any]] = []
    threads = [threading.Thread(target=lambda: seen.append([fresh[v] for v in versions])) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = [made[v] for v in versions]
    assert len(seen) == 8 and all(all(a is b for a, b in zip(got, expected, strict=True)) for got in seen)
    assert made == fresh._VERSIONS  # nothing made again


def test_a_request_finds_its_own_response_class() -> None:
    assert response_class(_sync_group(3)) is SyncGroupResponse[3]
    assert response_class(SyncGroupRequest(group_id="g", generation_id=1, member_id="m", assignments=[],
                                           version=4)) is SyncGroupResponse[4]
