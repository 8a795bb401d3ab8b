"""The transition table and the illegal-call messages of the transactional state machine."""

from __future__ import annotations

import re

import pytest

from txnproducer._internal.txn.state import (
    CALL_ALLOWED_IN,
    LEGAL_SOURCES,
    State,
    illegal_call_message,
    invalid_transition_message,
    is_transition_valid,
)

ALL = list(State)

# The happy paths an application drives, as (source, target) steps.
LIFECYCLE = [
    (State.UNINITIALIZED, State.INITIALIZING),
    (State.INITIALIZING, State.READY),
    (State.READY, State.IN_TRANSACTION),
    (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION),
    (State.COMMITTING_TRANSACTION, State.READY),
    (State.IN_TRANSACTION, State.ABORTING_TRANSACTION),
    (State.ABORTING_TRANSACTION, State.READY),
    (State.IN_TRANSACTION, State.ABORTABLE_ERROR),
    (State.COMMITTING_TRANSACTION, State.ABORTABLE_ERROR),
    (State.ABORTABLE_ERROR, State.ABORTING_TRANSACTION),
    # TV1 KIP-360: the abort completes into INITIALIZING while the epoch is bumped
    (State.ABORTING_TRANSACTION, State.INITIALIZING),
]


@pytest.mark.parametrize(("source", "target"), LIFECYCLE)
def test_lifecycle_transitions_are_legal(source: State, target: State) -> None:
    assert is_transition_valid(source, target)


@pytest.mark.parametrize("source", ALL)
def test_fatal_error_is_reachable_from_every_state(source: State) -> None:
    assert is_transition_valid(source, State.FATAL_ERROR)


@pytest.mark.parametrize("target", [s for s in ALL if s is not State.FATAL_ERROR])
def test_nothing_leaves_fatal_error(target: State) -> None:
    assert not is_transition_valid(State.FATAL_ERROR, target)


@pytest.mark.parametrize("source", ALL)
def test_uninitialized_is_reentered_only_from_a_refused_init(source: State) -> None:
    # InitProducerId refused for authorization: init_transactions() may be called again (Java)
    assert is_transition_valid(source, State.UNINITIALIZED) == (source is State.INITIALIZING)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (State.READY, State.COMMITTING_TRANSACTION),  # commit without begin
        (State.READY, State.ABORTING_TRANSACTION),
        (State.ABORTABLE_ERROR, State.COMMITTING_TRANSACTION),  # an abortable txn cannot commit
        (State.IN_TRANSACTION, State.IN_TRANSACTION),  # nested begin
        (State.UNINITIALIZED, State.IN_TRANSACTION),  # begin before init
        (State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION),
        (State.ABORTING_TRANSACTION, State.COMMITTING_TRANSACTION),
        (State.READY, State.INITIALIZING),  # init twice
        (State.UNINITIALIZED, State.PREPARED_TRANSACTION),
    ],
)
def test_misuse_transitions_are_illegal(source: State, target: State) -> None:
    assert not is_transition_valid(source, target)


def test_table_covers_every_state() -> None:
    assert set(LEGAL_SOURCES) == set(State)


ILLEGAL_CALLS = [
    (call, state) for call, allowed in CALL_ALLOWED_IN.items() for state in State if state not in allowed
]


@pytest.mark.parametrize(("call", "state"), ILLEGAL_CALLS)
def test_illegal_call_message_names_state_and_a_valid_call(call: str, state: State) -> None:
    message = illegal_call_message(call, state, "tx-1")
    assert message.startswith(f"{call}() called in state {state.name}")
    assert "'tx-1'" in message
    # it always tells the reader what to do next: a call to make, or to close the producer
    suggested = re.findall(r"([a-z_]+)\(\)", message.split(":", 1)[1])
    assert suggested or "close" in message
    for name in suggested:
        assert name in CALL_ALLOWED_IN


def test_commit_in_ready_says_begin_first() -> None:
    message = illegal_call_message("commit_transaction", State.READY)
    assert message == (
        "commit_transaction() called in state READY: no transaction is open: call begin_transaction() first"
    )


def test_abortable_error_state_points_to_abort() -> None:
    assert "call abort_transaction()" in illegal_call_message("commit_transaction", State.ABORTABLE_ERROR)


def test_invalid_transition_message_names_both_states() -> None:
    message = invalid_transition_message(State.READY, State.COMMITTING_TRANSACTION, "tx-1")
    assert "READY" in message and "COMMITTING_TRANSACTION" in message and "tx-1" in message
