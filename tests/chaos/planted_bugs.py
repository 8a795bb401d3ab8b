"""Bugs planted in the library on purpose, to show that the chaos checker catches them.

Why: "0 anomalies" from a checker that never flags anything proves nothing. Each bug here is a small,
realistic mistake in the producer's machinery, planted with ``pytest.MonkeyPatch`` (undone afterwards):

* ``wrong_epoch`` - after EndTxn v5 the producer keeps its old epoch instead of adopting the one the
  coordinator returned (``TransactionManager.transaction_ended``);
* ``end_txn_early`` - EndTxn is sent while a Produce of the transaction is still incomplete
  (``TransactionManager.next_request``, and ``request_outlook``, the Sender's look
  before it, told that no batch is incomplete);
* ``drop_retry`` - a batch that should be retried after a retriable error is completed as if acknowledged
  instead of re-enqueued (``ProduceOutcomes.retry_or_fail``).

``tests/chaos/test_planted_bugs.py`` runs a short chaos run per bug and asserts the checker flags it; a
full run with a planted bug: ``CHAOS_PLANT=<name> CHAOS_SEED=... pytest tests/chaos/test_chaos.py``
(the test then fails, printing what the checker flagged).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

from txnproducer._internal import produce_errors
from txnproducer._internal.produce_outcomes import ProduceOutcomes
from txnproducer._internal.txn.manager import TransactionManager

__all__ = ["FIRED", "PLANTED", "PlantedBug"]

#: how often each planted bug actually did its damage in this process (a run whose faults never gave
#: the bug its chance proves nothing either way)
FIRED: dict[str, int] = {}


def _fired(name: str) -> None:
    FIRED[name] = FIRED.get(name, 0) + 1


@attrs.frozen
class PlantedBug:
    name: str
    description: str
    plant: Callable[[pytest.MonkeyPatch], None]
    kinds: tuple[str, ...]  # fault kinds under which a short run shows the bug


def _keep_old_epoch(mp: pytest.MonkeyPatch) -> None:
    original = TransactionManager.transaction_ended

    def transaction_ended(self: TransactionManager, producer_id: int, epoch: int, *rest: Any) -> Any:
        _fired("wrong_epoch")
        # as if EndTxn had returned no producer id/epoch: the old ones stay
        return original(self, -1, -1, *rest)

    mp.setattr(TransactionManager, "transaction_ended", transaction_ended)


def _end_txn_early(mp: pytest.MonkeyPatch) -> None:
    original = TransactionManager.next_request

    def next_request(self: TransactionManager, has_incomplete_batches: Any) -> Any:
        if has_incomplete_batches:
            _fired("end_txn_early")
        return original(self, False)  # EndTxn no longer waits for the transaction's batches

    original_outlook = TransactionManager.request_outlook

    def request_outlook(self: TransactionManager, has_incomplete_batches: bool) -> bool | None:
        return original_outlook(self, False)  # nor does the Sender's look (may_have_request asks it too)

    mp.setattr(TransactionManager, "next_request", next_request)
    mp.setattr(TransactionManager, "request_outlook", request_outlook)


def _drop_retry(mp: pytest.MonkeyPatch) -> None:
    original = ProduceOutcomes.retry_or_fail

    def retry_or_fail(self: ProduceOutcomes, batch: Any, code: int, message: str | None, record_errors: Any,
                      *args: Any, **kwargs: Any) -> None:
        if batch.final_state is None and code in produce_errors.RETRIABLE:
            _fired("drop_retry")
            self.complete_all([(batch, -1, -1)])  # "acknowledged" without an offset; never sent again
            return
        # the rest of the real signature passes through (it grew leader_moved= after this was
        # written, and the planted bug then broke the Sender's callback instead of the retry)
        original(self, batch, code, message, record_errors, *args, **kwargs)

    mp.setattr(ProduceOutcomes, "retry_or_fail", retry_or_fail)


PLANTED: dict[str, PlantedBug] = {bug.name: bug for bug in (
    PlantedBug("wrong_epoch", "keep the old epoch after EndTxn v5", _keep_old_epoch, ()),
    PlantedBug("end_txn_early", "send EndTxn before the last Produce completed", _end_txn_early,
               ("delay", "drop_connection")),
    PlantedBug("drop_retry", "complete a batch as acknowledged instead of retrying it", _drop_retry,
               ("retriable_error", "drop_all_connections")),
)}
