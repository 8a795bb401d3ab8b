"""TransitionObserver: what the transaction manager tells a watcher about every state change.

Why a hook at all: the state machine is the one place that knows when a transaction begins, starts
committing or aborting, becomes uncommittable, ends or is fenced - exactly what an operator's trace
of a transaction is made of (:mod:`txnproducer.otel`). The manager calls the observer from
``_transition`` (the only place the state changes), with its lock held, after the state changed; with
no observer (the default) this costs one attribute test per transition, and none per record.

An observer must not block and must not raise (the manager does not guard the call: a failing
observer would break the producer). It may read the manager's plain attributes.
"""

from __future__ import annotations

from typing import Protocol

from txnproducer._internal.txn.state import State

__all__ = ["TransitionObserver"]


class TransitionObserver(Protocol):
    """Told every state change: ``source`` -> ``target``, and the error that caused it (error states)."""

    def transition(self, source: State, target: State, error: BaseException | None) -> None: ...
