"""How :class:`~txnproducer.eos.TransactionalProcessor`'s loop tells what failed: the user's code (a
transform that raised, or an output it cannot have meant), a simulated crash (tests), and the errors
after which the loop stops instead of aborting and going on.

Why a module of its own: the loop's retry policy reads as one list, apart from the loop's mechanics.
"""

from __future__ import annotations

from txnproducer import errors

__all__ = ["BAD_OUTPUT", "NEEDS_AN_OPERATOR", "STOPS_THE_LOOP", "Crashed", "UserCodeError"]


class UserCodeError(Exception):
    """Carries an exception of the user's transform (or of an output it produced) out of the loop."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


class Crashed(Exception):
    """Raised at a crash point by :meth:`TransactionalProcessor.simulate_crash` (tests only)."""


#: abortable errors after which the loop stops: the aborted transaction's input is rewound, but the next
#: attempt cannot succeed until the ACLs change
NEEDS_AN_OPERATOR: tuple[type[errors.AbortableError], ...] = (
    errors.GroupAuthorizationError,
    errors.TopicAuthorizationError,
)
#: the errors :meth:`~txnproducer.eos.TransactionalProcessor.run` raises after closing
STOPS_THE_LOOP: tuple[type[errors.TxnProducerError], ...] = (errors.FatalError, *NEEDS_AN_OPERATOR)

#: what a bad output makes ``producer.send()`` raise: the user's mistake, not the cluster's
BAD_OUTPUT: tuple[type[errors.TxnProducerError], ...] = (
    errors.ConfigError, errors.SerializationError, errors.RecordTooLargeError, errors.TransformOutputError)
