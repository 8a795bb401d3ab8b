"""ListTransactions as the admin tools send it (``admin/list_transactions.py``): a filter a broker's
version cannot carry is refused, never dropped; ``--prefix`` as a pattern every regex flavour reads alike."""

from __future__ import annotations

import re
from typing import Any

import pytest
from kafka.protocol.admin.transactions import ListTransactionsResponse

from txnproducer._internal.protocol import error_codes as ec
from txnproducer.admin import BrokerTooOldError
from txnproducer.admin.connection import Deadline
from txnproducer.admin.list_transactions import list_on_broker, prefix_pattern
from txnproducer.errors import ConfigError


class FakeConnection:
    def __init__(self, version: int, ids: list[str], **answer: Any) -> None:
        self.version, self.ids, self.answer = version, ids, answer
        self.sent: list[Any] = []

    def send(self, node: int, request_cls: Any, build: Any, deadline: Deadline, what: str) -> Any:
        self.sent.append(build(self.version))
        r = ListTransactionsResponse
        values = {
            "throttle_time_ms": 0,
            "error_code": ec.NONE,
            "unknown_state_filters": [],
            "transaction_states": [
                r.TransactionState(transactional_id=t, producer_id=1, transaction_state="Ongoing")
                for t in self.ids
            ],
        }
        values.update(self.answer)
        return r[self.version](**values)


def listing(conn: FakeConnection, **filters: Any) -> tuple[list[str], str | None]:
    found, note = list_on_broker(conn, 2, Deadline(1000), **filters)  # type: ignore[arg-type]
    return [t.transactional_id for t in found], note


@pytest.mark.parametrize(
    ("filters", "version", "needed"),
    [
        ({"duration_ms": 10}, 0, "v1 (Kafka 3.8+, KIP-994)"),
        ({"pattern": "a.*"}, 1, "v2 (Kafka 4.1+, KIP-1152)"),
        ({"pattern": "a.*", "duration_ms": 10}, 0, "v2 (Kafka 4.1+, KIP-1152)"),
    ],
)
def test_a_filter_the_broker_cannot_apply_is_refused_before_sending(
    filters: dict[str, Any], version: int, needed: str
) -> None:
    conn = FakeConnection(version, ["a-1"])
    with pytest.raises(
        BrokerTooOldError,
        match=re.escape(f"needs ListTransactions {needed}; broker 2 speaks up to v{version}"),
    ):
        listing(conn, **filters)
    assert conn.sent == []


def test_filters_go_to_the_broker() -> None:
    conn = FakeConnection(2, ["a-1"])
    assert listing(conn, states=["Ongoing"], producer_ids=[9], duration_ms=10, pattern="a-.*") == (
        ["a-1"],
        None,
    )
    (request,) = conn.sent
    assert (
        request.state_filters,
        request.producer_id_filters,
        request.duration_filter,
        request.transactional_id_pattern,
    ) == (["Ongoing"], [9], 10, "a-.*")


def test_a_prefix_is_a_pattern_on_v2_and_applied_here_below() -> None:
    conn = FakeConnection(2, ["a.b-1"])
    assert listing(conn, prefix="a.b-") == (["a.b-1"], None)
    assert conn.sent[0].transactional_id_pattern == r"a\.b\-.*"
    old = FakeConnection(1, ["a.b-1", "axb-2", "other"])
    ids, note = listing(old, prefix="a.b-")
    assert ids == ["a.b-1"] and note is not None and "broker 2 speaks ListTransactions v1" in note
    assert old.sent[0].duration_filter == -1


@pytest.mark.parametrize("prefix", ["txnkafka-1a2b3c", "a.b+c", "x[1]*(y)|z", "q1-", "über$^"])
def test_the_prefix_pattern_matches_exactly_the_ids_that_start_with_it(prefix: str) -> None:
    pattern = re.compile(prefix_pattern(prefix))
    assert pattern.fullmatch(prefix + "-0-3") and pattern.fullmatch(prefix)
    assert not pattern.fullmatch("x" + prefix) and not pattern.fullmatch(prefix[:-1])


def test_unknown_states_and_bad_patterns_are_errors() -> None:
    with pytest.raises(ConfigError, match="broker 2 does not know the transaction state"):
        listing(FakeConnection(2, [], unknown_state_filters=["Frozen"]), states=["Ongoing"])
    with pytest.raises(ConfigError, match="INVALID_REGULAR_EXPRESSION"):
        listing(FakeConnection(2, [], error_code=ec.INVALID_REGULAR_EXPRESSION), pattern="(")
