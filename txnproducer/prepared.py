"""PreparedTxnState: the hand-off token of a prepared (two-phase commit) transaction.

Why a value of its own: ``prepare_transaction()`` ends phase one in one process and the commit or
abort (phase two) may happen in another - a Spark driver completing what its executors prepared,
or a restarted application finishing what a crashed one left. What crosses that boundary must be
small, immutable and serializable (JSON for a durable commit log, pickle for a task result), and
must name exactly one transaction: the transactional id plus the producer id and epoch it ran
under. An empty transaction (nothing was sent) is represented by producer id/epoch -1; completing
it does nothing.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

__all__ = ["PreparedTxnState"]

_NO_ID = -1


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int, got {value!r}")
    return value


@attrs.frozen(slots=True)
class PreparedTxnState:
    """Which transaction was prepared: ``transactional_id``, ``producer_id`` and ``epoch``."""

    transactional_id: str = attrs.field(validator=attrs.validators.instance_of(str))
    producer_id: int = attrs.field(default=_NO_ID, converter=_int)
    epoch: int = attrs.field(default=_NO_ID, converter=_int)

    @property
    def is_empty(self) -> bool:
        """True when nothing reached the coordinator: there is no transaction to complete."""
        return self.producer_id < 0

    def to_json(self) -> str:
        """A compact JSON object (stable key order) for commit logs."""
        return json.dumps(
            {"transactional_id": self.transactional_id, "producer_id": self.producer_id, "epoch": self.epoch},
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> PreparedTxnState:
        """Parse :meth:`to_json` output; raises ValueError on anything else."""
        try:
            data = json.loads(text)
            return cls(str(data["transactional_id"]), data["producer_id"], data["epoch"])
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a PreparedTxnState JSON document: {text!r} ({exc})") from None

    def __str__(self) -> str:
        return f"{self.transactional_id}:{self.producer_id}:{self.epoch}"
