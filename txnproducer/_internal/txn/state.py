"""The transactional producer's states and the one table of legal transitions.

Why a separate module: every state change the transaction manager makes - from an application
thread or from the Sender thread - goes through :func:`is_transition_valid`, so the rules live in
exactly one place and can be tested on their own. The table follows the Java client's
``TransactionManager.State`` (KIP-98), with ``PREPARED_TRANSACTION`` for two-phase commit (KIP-939):
entered by ``prepare_transaction()`` or by ``init_transactions(keep_prepared_txn=True)`` finding a
prepared transaction; only commit/abort/complete leave it.

:func:`illegal_call_message` turns "this call is not allowed now" into a sentence that names the
state *and* the call that would be valid, because the person reading it is an application
developer who wants to know what to do next.
"""

from __future__ import annotations

import enum


class State(enum.Enum):
    """Where the producer is in its transactional life cycle (client-side view)."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"
    PREPARED_TRANSACTION = "PREPARED_TRANSACTION"

    # Members are singletons, so identity is equality: hash them by identity, in C. Enum's own
    # __hash__ is a Python function (hash of the name), called by every lookup of a state in the
    # transition table and the state sets - several per transaction.
    __hash__ = object.__hash__


_S = State

#: The states in which a transaction is open: begun, and not yet committed, aborted or ended by a
#: fatal error.
TRANSACTION_OPEN = frozenset({_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION,
                              _S.ABORTABLE_ERROR, _S.PREPARED_TRANSACTION})

#: The states in which a transaction is ending: its EndTxn waits for (or follows) its last batches.
COMPLETING = frozenset({_S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION})

# target state -> the states it may be entered from. FATAL_ERROR is reachable from everywhere
# (it is the exit); nothing leaves FATAL_ERROR and nothing returns to UNINITIALIZED.
LEGAL_SOURCES: dict[State, frozenset[State]] = {
    # INITIALIZING -> UNINITIALIZED: InitProducerId refused for authorization; as in the Java
    # client, init_transactions() may then be called again once the ACLs allow it.
    _S.UNINITIALIZED: frozenset({_S.INITIALIZING}),
    # ABORTING -> INITIALIZING: a TV1 abort that needs a client-side epoch bump (KIP-360) goes
    # through INITIALIZING while the InitProducerId(pid, epoch) is outstanding.
    # COMMITTING -> INITIALIZING: under TV1 a completed *prepared* transaction is followed by an
    # epoch bump, so that its recorded (producer id, epoch) can never commit a later transaction.
    _S.INITIALIZING: frozenset({_S.UNINITIALIZED, _S.ABORTING_TRANSACTION, _S.COMMITTING_TRANSACTION}),
    _S.READY: frozenset({_S.INITIALIZING, _S.COMMITTING_TRANSACTION, _S.ABORTING_TRANSACTION}),
    _S.IN_TRANSACTION: frozenset({_S.READY}),
    _S.COMMITTING_TRANSACTION: frozenset({_S.IN_TRANSACTION, _S.PREPARED_TRANSACTION}),
    _S.ABORTING_TRANSACTION: frozenset({_S.IN_TRANSACTION, _S.ABORTABLE_ERROR, _S.PREPARED_TRANSACTION}),
    # ABORTING -> ABORTABLE_ERROR only when the EndTxn(abort) itself failed with an abortable
    # error, so that abort_transaction() can be called again; batch failures during an abort
    # are expected and do not change the state.
    _S.ABORTABLE_ERROR: frozenset(
        {_S.IN_TRANSACTION, _S.COMMITTING_TRANSACTION, _S.ABORTABLE_ERROR, _S.ABORTING_TRANSACTION}
    ),
    _S.FATAL_ERROR: frozenset(State),
    # INITIALIZING -> PREPARED: init_transactions(keep_prepared_txn=True) found a prepared transaction
    _S.PREPARED_TRANSACTION: frozenset({_S.IN_TRANSACTION, _S.INITIALIZING}),
}


def is_transition_valid(source: State, target: State) -> bool:
    """True if the table allows ``source -> target``."""
    return source in LEGAL_SOURCES[target]


# Application calls and the states in which they are legal. Used for the error message and by the
# tests; the transaction manager enforces them through the transitions above.
CALL_ALLOWED_IN: dict[str, frozenset[State]] = {
    "init_transactions": frozenset({_S.UNINITIALIZED}),
    "begin_transaction": frozenset({_S.READY}),
    "send": frozenset({_S.IN_TRANSACTION}),
    "send_offsets_to_transaction": frozenset({_S.IN_TRANSACTION}),
    "commit_transaction": frozenset({_S.IN_TRANSACTION, _S.PREPARED_TRANSACTION}),
    "abort_transaction": frozenset({_S.IN_TRANSACTION, _S.ABORTABLE_ERROR, _S.PREPARED_TRANSACTION}),
    "prepare_transaction": frozenset({_S.IN_TRANSACTION}),
    "complete_transaction": frozenset({_S.UNINITIALIZED, _S.PREPARED_TRANSACTION}),
}


def _hint(call: str, state: State) -> str:
    """What the application should do instead of ``call`` while in ``state``."""
    if state is _S.UNINITIALIZED:
        return "call init_transactions() first"
    if state is _S.INITIALIZING:
        return "init_transactions() has not completed yet: call init_transactions() again to wait for it"
    if state is _S.READY:
        if call == "complete_transaction":
            return (
                "no prepared transaction is open: complete_transaction(state) works before"
                " init_transactions() or after init_transactions(keep_prepared_txn=True) found one"
            )
        if call == "init_transactions":
            return "init_transactions() already completed: call begin_transaction() to start a transaction"
        return "no transaction is open: call begin_transaction() first"
    if state is _S.IN_TRANSACTION:
        if call == "init_transactions":
            return "the producer is already initialized: call commit_transaction() or abort_transaction()"
        if call == "begin_transaction":
            return ("a transaction is already open (one at a time per producer): call commit_transaction() "
                    "or abort_transaction() first - if another thread or task opened it, wait for it to end, "
                    "or use a TransactionalProducerPool / AsyncTransactionalProducerPool for transactions at "
                    "the same time")
        return "a transaction is already open: call commit_transaction() or abort_transaction() first"
    if state is _S.COMMITTING_TRANSACTION:
        return "a commit is in progress: call commit_transaction() again to wait for it to complete"
    if state is _S.ABORTING_TRANSACTION:
        return "an abort is in progress: call abort_transaction() again to wait for it to complete"
    if state is _S.ABORTABLE_ERROR:
        return "the transaction failed and cannot commit: call abort_transaction(), then begin a new one"
    if state is _S.PREPARED_TRANSACTION:
        return (
            "a prepared transaction is open: call commit_transaction(), abort_transaction() or"
            " complete_transaction(state)"
        )
    return "the producer hit a fatal error: close it and create a new one"


def illegal_call_message(call: str, state: State, transactional_id: str | None = None) -> str:
    """The message of the IllegalStateError raised when ``call()`` is made in ``state``.

    Example: ``commit_transaction() called in state READY: no transaction is open: call
    begin_transaction() first``.
    """
    who = f" (transactional_id {transactional_id!r})" if transactional_id else ""
    return f"{call}() called in state {state.name}{who}: {_hint(call, state)}"


def invalid_transition_message(source: State, target: State, transactional_id: str | None) -> str:
    """Message for an internal transition the table forbids (a bug or a race, never user input)."""
    who = f"transactional_id {transactional_id!r}: " if transactional_id else ""
    return f"{who}invalid transition attempted from state {source.name} to state {target.name}"
