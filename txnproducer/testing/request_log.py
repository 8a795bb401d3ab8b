"""What crossed the wire: one entry per request a MockCluster broker handled (or dropped).

Tests assert on the log instead of sleeping: ``wait_for(predicate, timeout)`` blocks on a Condition
until a matching entry is appended (or one already exists), with a bound. ``extract_fields`` and
``response_error_codes`` pick from a request and its response what an entry records.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from txnproducer._internal.protocol import error_codes as ec

from . import api_messages
from .partition_log import HEADER, HEADER_SIZE


@attrs.frozen
class RequestLogEntry:
    """One request as a broker saw it.

    ``fields`` holds the request fields tests usually care about (transactional_id, producer_id,
    producer_epoch, group_id, committed, partitions=[(topic, p)], and for Produce
    batches=[(topic, p, producer_id, producer_epoch, base_sequence, record_count, transactional)];
    for Fetch forgotten=[(topic, p)] when it forgets some, for ListOffsets timestamps=[(topic, p,
    timestamp)], for OffsetForLeaderEpoch leader_epochs=[(topic, p, leader epoch asked about)];
    from Produce v13 on, requests name topics by id, and ``topic`` is the id's string).
    ``error_codes`` are the non-zero error codes of the response; ``injected`` marks a response made by
    ``inject_error``; ``dropped`` a request whose connection was closed instead of answered (also a request
    a SASL listener refused before authentication). ``principal`` is who sent it (``User:ANONYMOUS`` until
    the connection authenticated). SASL tokens are never recorded; SaslHandshake records its ``mechanism``.
    """

    seq: int
    api: str
    api_key: int
    version: int
    broker_id: int
    connection_id: int
    fields: dict[str, Any]
    error_codes: tuple[int, ...] = ()
    injected: bool = False
    dropped: bool = False
    principal: str = "User:ANONYMOUS"


class RequestLog:
    """Append-only, thread-safe list of :class:`RequestLogEntry` with a waitable condition.

    A broker logs a request just before writing its response, so a client that holds a response
    always finds the request's entry here (no waiting needed for requests the test itself sent).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._entries: list[RequestLogEntry] = []

    def entries(self) -> list[RequestLogEntry]:
        with self._cond:
            return list(self._entries)

    def append(self, **kwargs: Any) -> RequestLogEntry:
        with self._cond:
            entry = RequestLogEntry(seq=len(self._entries), **kwargs)
            self._entries.append(entry)
            self._cond.notify_all()
            return entry

    def next_seq(self) -> int:
        """The ``seq`` the next entry will get (pass as ``since`` to wait only for later requests)."""
        with self._cond:
            return len(self._entries)

    def wait_for(
        self, predicate: Callable[[RequestLogEntry], bool], timeout: float = 5.0, since: int = 0
    ) -> RequestLogEntry:
        """The first entry with ``seq >= since`` matching ``predicate``; waits up to ``timeout`` s for it."""
        deadline = time.monotonic() + timeout
        checked = since
        with self._cond:
            while True:
                while checked < len(self._entries):
                    entry = self._entries[checked]
                    checked += 1
                    if predicate(entry):
                        return entry
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no matching request logged within {timeout}s")
                self._cond.wait(remaining)


def _partitions(request: Any, api_key: int) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    if api_key == 0:
        for topic in request.topic_data:
            for part in topic.partition_data:
                out.append((topic.name, part.index))
    elif api_key == 24:
        topics = getattr(request, "v3_and_below_topics", None)
        if topics is None and getattr(request, "transactions", None):
            topics = [t for txn in request.transactions for t in txn.topics]
        for topic in topics or []:
            out.extend((topic.name, p) for p in topic.partitions)
    elif api_key in (8, 28):
        for topic in request.topics:
            out.extend((topic.name, p.partition_index) for p in topic.partitions)
    elif api_key == 27:
        for marker in request.markers:
            for topic in marker.topics:
                out.extend((topic.name, p) for p in topic.partition_indexes)
    elif api_key == 1:
        for topic in request.topics:
            name = getattr(topic, "topic", None) or str(getattr(topic, "topic_id", ""))
            out.extend((name, p.partition) for p in topic.partitions)
    elif api_key == 2:
        for topic in request.topics:
            out.extend((topic.name, p.partition_index) for p in topic.partitions)
    elif api_key == 23:
        for topic in request.topics:
            out.extend((topic.topic, p.partition) for p in topic.partitions)
    return out


def _per_partition(request: Any, api_key: int) -> dict[str, Any]:
    """What a read path's request asks per partition: Fetch's forgotten partitions (a consumer's fetch
    session, KIP-227), ListOffsets' timestamps (-2 earliest, -1 latest), OffsetForLeaderEpoch's epochs."""
    if api_key == 1:
        forgotten: list[tuple[str, int]] = []
        for topic in getattr(request, "forgotten_topics_data", None) or []:
            name = getattr(topic, "topic", None) or str(getattr(topic, "topic_id", ""))
            forgotten.extend((name, index) for index in topic.partitions)
        return {"forgotten": forgotten} if forgotten else {}
    if api_key == 2:
        return {"timestamps": [(t.name, p.partition_index, p.timestamp) for t in request.topics
                               for p in t.partitions]}
    if api_key == 23:
        return {"leader_epochs": [(t.topic, p.partition, p.leader_epoch) for t in request.topics
                                  for p in t.partitions]}
    return {}


def extract_fields(api_key: int, request: Any) -> dict[str, Any]:
    """The key request fields recorded in :class:`RequestLogEntry.fields` (best effort, never raises)."""
    fields: dict[str, Any] = {}
    try:
        for name in (
            "transactional_id",
            "producer_id",
            "producer_epoch",
            "group_id",
            "committed",
            "generation_id",
            "member_id",
            "key_type",
            "key",
            "coordinator_keys",
            "acks",
            "isolation_level",
            "transaction_timeout_ms",
            "mechanism",
            "session_id",
            "session_epoch",
        ):
            value = getattr(request, name, None)
            if value is not None:
                fields[name] = value
        if api_key == 24:
            if getattr(request, "v3_and_below_transactional_id", None) is not None:
                fields["transactional_id"] = request.v3_and_below_transactional_id
                fields["producer_id"] = request.v3_and_below_producer_id
                fields["producer_epoch"] = request.v3_and_below_producer_epoch
            elif getattr(request, "transactions", None):
                txn = request.transactions[0]
                fields["transactional_id"] = txn.transactional_id
                fields["producer_id"] = txn.producer_id
                fields["producer_epoch"] = txn.producer_epoch
        if api_key == 27 and request.markers:
            marker = request.markers[0]
            fields.update(producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
                          committed=bool(marker.transaction_result),
                          coordinator_epoch=marker.coordinator_epoch)
        parts = _partitions(request, api_key)
        if parts:
            fields["partitions"] = parts
        fields.update(_per_partition(request, api_key))
        if api_key == 0:
            fields["batches"] = _produce_batches(request)
        if api_key == 3:
            topics = request.topics
            fields["topics"] = None if topics is None else [t.name for t in topics]
    except Exception:  # pragma: no cover - logging must never break request handling
        pass
    return fields


def _produce_batches(request: Any) -> list[tuple[str, int, int, int, int, int, bool]]:
    out = []
    for topic in request.topic_data:
        name = getattr(topic, "name", None) or str(getattr(topic, "topic_id", ""))  # v13: by id
        for part in topic.partition_data:
            data = part.records
            if not data:
                continue
            pos = 0
            while pos + HEADER_SIZE <= len(data):
                (_, length, _, _, _, attrs_, _, _, _, pid, epoch, seq, count) = HEADER.unpack_from(data, pos)
                out.append((name, part.index, pid, epoch, seq, count, bool(attrs_ & 0x10)))
                pos += 12 + length
    return out


def api_label(api_key: int) -> str:
    return api_messages.api_name(api_key)


def response_error_codes(response: Any) -> tuple[int, ...]:
    """Every non-zero ``*error_code`` anywhere in a response (for the request log)."""
    found: list[int] = []

    def walk(obj: Any) -> None:
        struct_ = getattr(obj, "_struct", None)
        if struct_ is None:
            return
        for name in struct_.fields:
            value = getattr(obj, name, None)
            if value is None:
                continue
            if name.endswith("error_code"):
                if isinstance(value, int) and value != ec.NONE:
                    found.append(value)
            elif isinstance(value, list):
                for item in value:
                    walk(item)
            elif hasattr(value, "_struct"):
                walk(value)

    with contextlib.suppress(Exception):  # never break the connection over logging
        walk(response)
    return tuple(found)
