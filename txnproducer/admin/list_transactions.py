"""ListTransactions (key 66): v0-2 - the transactional ids one broker coordinates, filtered there.

Every broker coordinates the ids of the ``__transaction_state`` partitions it leads, so a listing asks
each broker in the cluster (the Java Admin's ``AllBrokersStrategy``) and joins the answers.

Filters, applied by the broker: states and producer ids (v0, KIP-664); ``duration_ms`` - only
transactions running longer than that (v1, Kafka 3.8, KIP-994); ``pattern`` - a regular expression
the whole transactional id must match (v2, Kafka 4.1, KIP-1152). A broker that does not speak the
version a filter needs would answer a lower version without the filter - more transactions than asked
for - so that is refused here, naming the broker and the version (:class:`BrokerTooOldError`), never
sent. Unknown state names come back in ``unknown_state_filters``: refused too (a typo would list
nothing and look like "no such transactions").

Errors (the Java Admin's ``ListTransactionsHandler``): COORDINATOR_LOAD_IN_PROGRESS and
COORDINATOR_NOT_AVAILABLE are asked again until the deadline; INVALID_REGULAR_EXPRESSION names the
pattern. Authorization (Kafka 4.1's ``handleListTransactionsRequest``): none for the request itself;
the answer lists only the ids the principal may Describe - a principal without Describe on any id sees
an empty list, not an error. :func:`prefix_pattern` is how ``--prefix`` becomes a v2 pattern.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from kafka.protocol.admin.transactions import ListTransactionsRequest

from txnproducer._internal.protocol import error_codes as ec
from txnproducer.errors import ConfigError

from .connection import AdminConnection, Deadline
from .errors import BrokerTooOldError, UnexpectedBrokerError
from .results import STATES, TransactionListing

__all__ = ["list_on_broker", "prefix_pattern"]

_RETRY = frozenset({ec.COORDINATOR_LOAD_IN_PROGRESS, ec.COORDINATOR_NOT_AVAILABLE})
DURATION_VERSION, PATTERN_VERSION = 1, 2


def prefix_pattern(prefix: str) -> str:
    """A regular expression matching every id that starts with ``prefix``, read the same by Java's
    ``Pattern``, RE2/J and Python's ``re``: every ASCII character that is not a letter or a digit is
    escaped with a backslash (legal before any non-letter in all three)."""
    escaped = "".join("\\" + ch if ch.isascii() and not ch.isalnum() else ch for ch in prefix)
    return escaped + ".*"


def check_states(states: Collection[str]) -> None:
    """ConfigError for a state name no Kafka broker knows (the broker would list nothing)."""
    unknown = sorted(set(states) - set(STATES))
    if unknown:
        raise ConfigError(f"unknown transaction state(s) {', '.join(unknown)}: use {', '.join(STATES)}")


def list_on_broker(
    conn: AdminConnection,
    node: int,
    deadline: Deadline,
    *,
    states: Collection[str] = (),
    producer_ids: Collection[int] = (),
    duration_ms: int | None = None,
    pattern: str | None = None,
    prefix: str | None = None,
) -> tuple[list[TransactionListing], str | None]:
    """The transactions broker ``node`` coordinates, filtered by the broker (module docstring), and a
    note when a filter was applied here instead. ``prefix`` (a pipeline's transactional id prefix) is
    sent as a v2 pattern; a broker below v2 lists everything and the prefix is applied to its answer
    (exact either way: nothing outside the prefix is returned), which the note says."""
    if pattern is not None and prefix is not None:
        raise ConfigError("give a transactional id pattern or a prefix, not both")
    needed = PATTERN_VERSION if pattern is not None else DURATION_VERSION if duration_ms is not None else 0
    used: list[int] = []

    def build(version: int) -> Any:
        if version < needed:
            raise _too_old(node, version, needed)
        used.append(version)
        values: dict[str, Any] = {
            "state_filters": sorted(states),
            "producer_id_filters": sorted(producer_ids),
        }
        if version >= DURATION_VERSION:
            values["duration_filter"] = -1 if duration_ms is None else duration_ms
        if version >= PATTERN_VERSION:
            values["transactional_id_pattern"] = pattern if prefix is None else prefix_pattern(prefix)
        return ListTransactionsRequest(version=version, **values)

    what = f"listing the transactions of broker {node}"
    while True:
        answer = conn.send(node, ListTransactionsRequest, build, deadline, what)
        code = int(answer.error_code)
        if code in _RETRY:
            what = f"listing the transactions of broker {node} (last answer: {ec.error_name(code)})"
            conn.backoff(deadline, what)
            continue
        if code == ec.INVALID_REGULAR_EXPRESSION:
            raise ConfigError(
                f"broker {node} refused the transactional id pattern {pattern!r} as an invalid"
                " regular expression (INVALID_REGULAR_EXPRESSION)"
            )
        if code != ec.NONE:
            raise UnexpectedBrokerError(
                f"ListTransactions on broker {node} answered {ec.error_name(code)}", error_code=code
            )
        if answer.unknown_state_filters:
            raise ConfigError(
                f"broker {node} does not know the transaction state(s)"
                f" {', '.join(answer.unknown_state_filters)}"
            )
        listed = [
            TransactionListing(str(t.transactional_id), node, int(t.producer_id), str(t.transaction_state))
            for t in answer.transaction_states
        ]
        note = None
        if prefix is not None:
            if used[-1] < PATTERN_VERSION:
                note = (
                    f"broker {node} speaks ListTransactions v{used[-1]} (a pattern needs v2, Kafka 4.1+):"
                    f" it listed all of its transactions and the prefix {prefix!r} was applied here"
                )
            listed = [t for t in listed if t.transactional_id.startswith(prefix)]
        return listed, note


def _too_old(node: int, version: int, needed: int) -> BrokerTooOldError:
    what = {
        DURATION_VERSION: "the duration filter (--duration-filter) needs ListTransactions v1"
        " (Kafka 3.8+, KIP-994)",
        PATTERN_VERSION: "the transactional id pattern (--transactional-id-pattern) needs"
        " ListTransactions v2 (Kafka 4.1+, KIP-1152)",
    }[needed]
    return BrokerTooOldError(
        f"{what}; broker {node} speaks up to v{version}: upgrade it, or list without that filter"
    )
