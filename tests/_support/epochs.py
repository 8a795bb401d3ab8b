"""Bring a transactional id's producer epoch near the end of its range on a real broker.

Reaching epoch exhaustion for real takes ~32,000 transactions; a test cannot wait for that, and a
real broker has no back door (MockCluster's is ``set_producer_epoch``). Each InitProducerId with
producer id -1 - what a new instance's ``init_transactions()`` sends - bumps an idle transactional id's
epoch by one, so :func:`fast_forward_epoch` sends that many of them, pipelined on one connection to
the transaction coordinator (the broker still handles them one at a time, in order: about 2,000 a
second on this machine). Use it only on a broker the test owns: an id driven into KAFKA-20090 stays
broken for good.
"""

from __future__ import annotations

import time

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest

from txnproducer.testing.wire_client import WireClient

__all__ = ["fast_forward_epoch", "transaction_coordinator"]

WINDOW = 64  # requests in flight on the connection


RETRIABLE = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
ATTEMPTS = 100  # 0.1 s apart: a fresh node creates and loads __transaction_state first


def transaction_coordinator(bootstrap: str, transactional_id: str) -> tuple[str, int]:
    """(host, port) of ``transactional_id``'s transaction coordinator (FindCoordinator v4), asked again
    while a fresh node answers COORDINATOR_NOT_AVAILABLE."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with WireClient(host, int(port), client_id="epoch-fast-forward", timeout=30.0) as client:
        for _ in range(ATTEMPTS):
            found = client.send(FindCoordinatorRequest[4](key_type=1,
                                                          coordinator_keys=[transactional_id])).coordinators[0]
            if found.error_code not in RETRIABLE:
                break
            time.sleep(0.1)  # a node starting up announces nothing to wait on
    if found.error_code:
        raise RuntimeError(f"FindCoordinator({transactional_id!r}) answered error {found.error_code}")
    return str(found.host), int(found.port)


def fast_forward_epoch(bootstrap: str, transactional_id: str, epoch: int,
                       transaction_timeout_ms: int = 60_000) -> int:
    """Send InitProducerId(producer id -1) for ``transactional_id`` until its epoch is ``epoch``
    (at most 32766: the coordinator rotates the producer id past it); returns the producer id.
    The id must be idle (no open transaction) and its epoch at most ``epoch``."""
    if not 0 <= epoch <= 32766:
        raise ValueError(f"epoch must be in [0, 32766], got {epoch}")
    host, port = transaction_coordinator(bootstrap, transactional_id)
    with WireClient(host, port, client_id="epoch-fast-forward", timeout=30.0) as client:

        def request() -> InitProducerIdRequest:
            return InitProducerIdRequest[5](transactional_id=transactional_id,
                                            transaction_timeout_ms=transaction_timeout_ms,
                                            producer_id=-1, producer_epoch=-1)

        for _ in range(ATTEMPTS):
            first = client.send(request())
            if first.error_code not in RETRIABLE:
                break
            time.sleep(0.1)
        if first.error_code:
            raise RuntimeError(f"InitProducerId({transactional_id!r}) answered error {first.error_code}")
        producer_id, current = int(first.producer_id), int(first.producer_epoch)
        if current > epoch:
            raise ValueError(f"{transactional_id!r} is at epoch {current} already, past {epoch}")
        remaining = epoch - current
        pending: list[int] = []
        while remaining or pending:
            while remaining and len(pending) < WINDOW:
                pending.append(client.send_nowait(request()))
                remaining -= 1
            answer = client.receive(pending.pop(0))
            if answer.error_code or int(answer.producer_id) != producer_id:
                raise RuntimeError(f"InitProducerId({transactional_id!r}) answered error {answer.error_code}"
                                   f" / producer id {answer.producer_id} during the fast-forward")
            current = int(answer.producer_epoch)
    if current != epoch:
        raise RuntimeError(f"{transactional_id!r} reached epoch {current}, not {epoch}")
    return producer_id
