"""The admin tools' errors: what happened, what to do, which ACL or broker version is needed.

Why a module of their own (a leaf: it imports only ``txnproducer.errors`` and the error-code catalogue):
every request module of the room raises them and the CLI turns each into its one-line message and
exit code; none of them may import the others for that. They derive from
:class:`~txnproducer.errors.TxnProducerError` (every public error of the library does) and follow its
vocabulary: :class:`LeaderNotAvailableError` is a :class:`~txnproducer.errors.RetriableError` (the tool
retried within its timeout; the caller may try again later), everything else needs the caller to change
something first - an ACL, the broker, the arguments.

Timeouts are :class:`txnproducer.errors.TimeoutError`, refused TLS or SASL connections
:class:`txnproducer.errors.AuthenticationError`, bad settings :class:`txnproducer.errors.ConfigError`,
as for the producer.
"""

from __future__ import annotations

from txnproducer._internal.protocol import error_codes as ec
from txnproducer.errors import RetriableError, TxnProducerError

__all__ = [
    "AdminAuthorizationError",
    "AdminError",
    "BrokerTooOldError",
    "LeaderNotAvailableError",
    "LiveTransactionError",
    "NothingToAbortError",
    "TransactionalIdNotFoundError",
    "UnexpectedBrokerError",
    "UnknownPartitionError",
]


class AdminError(TxnProducerError):
    """Base class of the admin tools' errors; the message is one line saying what to do."""


class AdminAuthorizationError(AdminError):
    """The broker's authorizer refused a request. ``acl`` names what Kafka 4.1's broker checks for it
    (``"Describe on TransactionalId 'app-1'"``, ``"Alter or ClusterAction on the Cluster"``)."""

    def __init__(self, message: str, *, error_code: int, acl: str) -> None:
        super().__init__(message, error_code=error_code)
        self.acl = acl


class ClusterUnreachableError(AdminError):
    """No bootstrap server took a connection - each refused it, could not be reached or did not
    resolve - on every attempt for several seconds: nothing listens at ``bootstrap_servers``. Raised
    early instead of after the whole ``default.api.timeout.ms``; the message names the servers."""


class BrokerTooOldError(AdminError):
    """A broker does not speak the request (or the request version) a call or a filter needs; the message
    names the broker, the version it speaks, the one needed and the Kafka release that brought it."""

    error_code = ec.UNSUPPORTED_VERSION


class TransactionalIdNotFoundError(AdminError):
    """The coordinator does not know the transactional id (never used, or expired after
    ``transactional.id.expiration.ms``)."""

    error_code = ec.TRANSACTIONAL_ID_NOT_FOUND


class UnknownPartitionError(AdminError):
    """The topic or the partition does not exist (or the principal may not see that it does)."""

    error_code = ec.UNKNOWN_TOPIC_OR_PARTITION


class LeaderNotAvailableError(AdminError, RetriableError):
    """A partition had no leader until the call's timeout ran out (every replica down, or an election
    under way): nothing can be asked of or written to it. Retry once the partition is online."""

    error_code = ec.LEADER_NOT_AVAILABLE


class NothingToAbortError(AdminError):
    """``abort`` found no open transaction matching what was named: nothing was written."""


class LiveTransactionError(AdminError):
    """``abort`` was asked to write markers for a transaction its coordinator still tracks (it is live,
    not hanging): nothing was written. Abort it through its coordinator instead (by transactional id)."""


class UnexpectedBrokerError(AdminError):
    """A broker answered an error code the request does not expect; the message names it."""
