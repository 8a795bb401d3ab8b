"""What the sink writes to its state topic: decisions of the driver, announcements of the tasks.

Why these two records, and why in Kafka: a cluster's executors share nothing with the driver but
the Kafka cluster, and the decision "this batch commits these prepared transactions" must outlive
the driver. So both go to a compacted topic (:mod:`txnproducer.spark.sink.state_topic`), written with
acks=all before anything depends on them:

* :class:`Decision` (partition 0, key ``<prefix>``): the driver's verdict on one micro-batch (or
  batch job). ``decided`` is written *before* any transaction of the batch is completed - it is
  the commit point, and names every prepared transaction to commit; ``done`` once every one of
  them was completed and every other attempt's id fenced. Only the latest record of a prefix
  matters (a driver finishes a decision before it takes the next), so compaction may drop the
  rest.
* :class:`Announcement` (partition 1, key ``<prefix>/<partition>/<slot>``): a task attempt is
  about to register a transactional id. The driver fences every announced id that did not win,
  once the batch is decided, so that no attempt it did not commit keeps a transaction open.

:func:`attempt_superseded` is the rule a task attempt applies to the latest decision before and
after it registers its id (see :mod:`txnproducer.spark.sink.task` for why twice).
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from ...prepared import PreparedTxnState

__all__ = ["DECIDED", "DONE", "Announcement", "Decision", "attempt_superseded"]

DECIDED, DONE = "decided", "done"
COMMIT, ABORT = "commit", "abort"
_VERSION = 1


def _states(raw: Any) -> tuple[PreparedTxnState, ...]:
    return tuple(PreparedTxnState.from_json(json.dumps(s)) for s in raw or ())


@attrs.frozen
class Decision:
    """The driver's verdict on ``batch`` (a micro-batch id; -1 for a batch job) of ``query`` (the
    streaming query's id, which changes when its checkpoint is reset; a batch job's random id):
    ``outcome`` commit or abort, ``stage`` decided or done. ``states``: the
    prepared transactions the verdict applies to. ``announce_from`` / ``announce_to``: the range
    of announcement offsets this decision's clean-up covers (``announce_to`` is -1 until done).
    ``offset``: where the record sits in the state topic (-1 before it is written)."""

    prefix: str
    batch: int
    outcome: str
    stage: str
    states: tuple[PreparedTxnState, ...] = ()
    query: str = ""
    announce_from: int = 0
    announce_to: int = -1
    offset: int = -1

    @property
    def committed(self) -> bool:
        return self.outcome == COMMIT

    @property
    def done(self) -> bool:
        return self.stage == DONE

    def finished(self, announce_to: int) -> Decision:
        """The ``done`` record that follows this ``decided`` one."""
        return attrs.evolve(self, stage=DONE, announce_to=announce_to, offset=-1)

    def to_json(self) -> bytes:
        return json.dumps({
            "v": _VERSION, "prefix": self.prefix, "batch": self.batch, "query": self.query,
            "outcome": self.outcome, "stage": self.stage,
            "states": [json.loads(s.to_json()) for s in self.states],
            "announce_from": self.announce_from, "announce_to": self.announce_to,
        }, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes, offset: int) -> Decision:
        """Parse a record value; ValueError on anything this version cannot read."""
        try:
            body = json.loads(data)
            if body.get("v") != _VERSION:
                raise ValueError(f"unknown state record version {body.get('v')!r}")
            outcome, stage = str(body["outcome"]), str(body["stage"])
            if outcome not in (COMMIT, ABORT) or stage not in (DECIDED, DONE):
                raise ValueError(f"bad outcome/stage {outcome!r}/{stage!r}")
            return cls(str(body["prefix"]), int(body["batch"]), outcome, stage, _states(body.get("states")),
                       str(body.get("query", "")), int(body.get("announce_from", 0)),
                       int(body.get("announce_to", -1)), offset)
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a txnkafka decision record: {data[:200]!r} ({exc})") from None


@attrs.frozen
class Announcement:
    """A task attempt of ``batch`` of ``query`` (see :class:`Decision`) for Spark partition
    ``partition`` is about to register ``transactional_id`` (slot ``slot`` of the partition's
    ids)."""

    prefix: str
    batch: int
    query: str
    partition: int
    slot: int
    attempt: int
    transactional_id: str

    @property
    def key(self) -> bytes:
        return f"{self.prefix}/{self.partition}/{self.slot}".encode()

    def to_json(self) -> bytes:
        return json.dumps(attrs.asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Announcement:
        try:
            body = json.loads(data)
            return cls(str(body["prefix"]), int(body["batch"]), str(body["query"]), int(body["partition"]),
                       int(body["slot"]), int(body["attempt"]), str(body["transactional_id"]))
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a txnkafka announcement: {data[:200]!r} ({exc})") from None


def attempt_superseded(latest: Decision | None, batch: int, query: str, *, registered: bool = False,
                       at_start: Decision | None = None) -> bool:
    """Must a task attempt of ``batch`` of ``query`` write nothing, given the ``latest`` decision of
    its prefix? ``registered``: this look comes after the attempt registered its transactional
    id, and ``at_start`` is what the attempt's first look found.

    * A decision about another query (a reset checkpoint, an earlier batch job) settles nothing;
      one without a query id (carried over from an older version's commit log) applies to any.
    * A batch job's attempt (``batch`` -1): any decision about its job settles it.
    * A micro-batch's attempt: a commit of this batch or of a later one settles it (Spark replays
      a micro-batch whose commit it did not record: the replay must not write it twice; a later
      batch exists only once this one was decided). An abort of this batch settles it only if it
      was written after the attempt started: an abort seen at the start belongs to an earlier run
      of the query, and this attempt is Spark's replay of the aborted batch.
    """
    if latest is None or latest.query not in ("", query):
        return False
    if batch < 0:
        return True
    if latest.batch > batch or (latest.batch == batch and latest.committed):
        return True
    new = registered and (at_start is None or latest.offset != at_start.offset)
    return new and latest.batch == batch
