"""The chaos checker: what a read_committed reader saw, judged against what the producers were told.

Why a pure function over plain data: the same judgement must hold for a run against MockCluster and
one against a real cluster (kill -9, SIGSTOP), and each anomaly kind must be shown to be detected on
hand-made inputs (``tests/chaos/test_checker.py``) - a checker that cannot fail proves nothing.

Input: the :class:`~tests._support.txn_ledger.Ledger` of the producers, the records a read_committed
consumer read per topic and partition (anything with ``topic``, ``partition``, ``offset``, ``value``,
``headers``, as kafka-python's ``ConsumerRecord``), and optionally an exactly-once pipeline's input and
output topics. Output: a :class:`Report` with a count for every anomaly kind (zero included) and a few
examples of each, naming the transactions involved so the caller can print their request story.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import attrs

from tests._support.eos_pipeline import parse_origin
from tests._support.txn_ledger import Ledger, Outcome, RecordId, SentRecord, TxnEntry, iter_records

__all__ = ["KINDS", "Report", "check"]

Seen = Mapping[str, Mapping[int, Sequence[Any]]]  # topic -> partition -> records in offset order

KINDS: dict[str, str] = {
    "lost": "records of a committed transaction that no reader sees",
    "torn": "transactions of which some records are visible and some are not",
    "aborted_visible": "visible records of a transaction that was aborted",
    "duplicated": "extra copies of a visible record",
    "out_of_order": "records of one producer in one partition not in send order",
    "future_mismatch": "visible records whose future reported another place (or failed), records of a "
                       "committed transaction whose future failed, records in another partition than asked",
    "blocked": "calls and futures that took longer than their documented bound (plus slack)",
    "unknown_record": "visible records no producer's ledger accounts for",
    "zombie_committed": "transactions whose commit returned after a successor fenced their producer",
    "failed_while_calm": "errors seen after the faults had stopped",
    "unexpected_error": "errors the table of docs/guide/errors.md does not let a correct application see",
    "hanging": "partitions whose last stable offset stays below the high watermark at the end",
    "eos_lost": "pipeline inputs missing from its output",
    "eos_duplicated": "pipeline inputs more than once in its output",
    "eos_out_of_order": "pipeline outputs not in input order per partition",
    "eos_unknown": "pipeline outputs that match no visible input",
}


@attrs.define
class Report:
    """Counts per anomaly kind, examples, and the transactions to tell the story of."""

    counts: dict[str, int] = attrs.field(factory=lambda: dict.fromkeys(KINDS, 0))
    examples: dict[str, list[str]] = attrs.field(factory=lambda: defaultdict(list))
    involved: set[tuple[str, int]] = attrs.field(factory=set)  # (producer, txn) of ledger entries
    involved_ids: set[str] = attrs.field(factory=set)  # transactional ids without a ledger entry
    places: set[tuple[str, int, int]] = attrs.field(factory=set)  # (topic, partition, offset) of examples
    max_examples: int = 5

    @property
    def ok(self) -> bool:
        return not any(self.counts.values())

    def flag(self, kind: str, example: str, txn: tuple[str, int] | None = None, n: int = 1,
             places: Iterable[tuple[str, int, int]] = ()) -> None:
        """Count ``n`` of ``kind``; the first few examples keep the transaction (producer, number) and the
        visible places they are about, for the request story."""
        self.counts[kind] += n
        if len(self.examples[kind]) < self.max_examples:
            self.examples[kind].append(example)
            if txn is not None:
                self.involved.add(txn)
            self.places.update(places)

    def anomalies(self) -> dict[str, int]:
        return {kind: n for kind, n in self.counts.items() if n}

    def format(self) -> str:
        lines = ["anomalies: " + (", ".join(f"{k}={n}" for k, n in self.anomalies().items()) or "none")]
        for kind, n in self.anomalies().items():
            lines.append(f"  {kind} ({n}): {KINDS[kind]}")
            lines.extend(f"    - {example}" for example in self.examples[kind])
        return "\n".join(lines)


def check(ledger: Ledger, seen: Seen, slack_s: float, *, eos_input: Mapping[int, Sequence[Any]] | None = None,
          eos_output: Mapping[int, Sequence[Any]] | None = None, eos_transactional_ids: Iterable[str] = (),
          hanging: Iterable[str] = ()) -> Report:
    """Judge a finished run (every transaction of the ledger has an outcome).

    ``slack_s`` is what a call may take beyond its bound (thread scheduling on a busy machine);
    ``hanging`` names partitions found with an open transaction after everything was closed;
    ``eos_transactional_ids`` are the pipeline's, named in the report when its output is wrong.
    """
    report = Report()
    entries = ledger.transactions()
    by_key = {e.key: e for e in entries}
    places = _visible_places(seen, by_key, report)
    _check_transactions(entries, places, report)
    _check_order(seen, places.keys(), report)
    _check_timing(ledger, entries, slack_s, report)
    _check_errors(ledger, report)
    for partition in hanging:
        report.flag("hanging", f"{partition}: a transaction is still open after every producer closed")
    if eos_input is not None and eos_output is not None:
        _check_eos(eos_input, eos_output, report)
        if any(report.counts[kind] for kind in KINDS if kind.startswith("eos_")):
            report.involved_ids.update(eos_transactional_ids)
    return report


def _visible_places(seen: Seen, by_key: Mapping[tuple[str, int], TxnEntry],
                    report: Report) -> dict[RecordId, list[tuple[str, int, int]]]:
    """Where each workload record is visible: (topic, partition, offset) per copy."""
    places: dict[RecordId, list[tuple[str, int, int]]] = defaultdict(list)
    for topic, partitions in seen.items():
        for partition, records in partitions.items():
            for record in records:
                rid = RecordId.decode(record.value)
                entry = None if rid is None else by_key.get((rid.producer, rid.txn))
                if rid is None or entry is None or rid.index >= len(entry.records):
                    report.flag("unknown_record", f"{topic}-{partition}@{record.offset}: {record.value!r}",
                                None if rid is None else (rid.producer, rid.txn))
                    continue
                places[rid].append((topic, partition, record.offset))
    return places


def _check_transactions(entries: list[TxnEntry], places: Mapping[RecordId, list[tuple[str, int, int]]],
                        report: Report) -> None:
    visible_per_txn: Counter[tuple[str, int]] = Counter()
    for rid, entry, sent in iter_records(entries):
        where = places.get(rid, [])
        key = entry.key
        if where:
            visible_per_txn[key] += 1
        if len(where) > 1:
            report.flag("duplicated", f"{rid} ({entry.outcome.value}) visible {len(where)} times at {where}",
                        key, n=len(where) - 1)
        if entry.outcome is Outcome.COMMITTED and not where:
            report.flag("lost", f"{rid}: committed ({entry.reason}), not visible; future said "
                                f"{sent.acked or sent.error}", key)
        if entry.outcome is Outcome.ABORTED and where:
            report.flag("aborted_visible", f"{rid} aborted ({entry.reason}) but visible at {where[0]}", key,
                        n=len(where))
        if entry.outcome is Outcome.COMMITTED and sent.error is not None:
            report.flag("future_mismatch", f"{rid}: committed but its future failed: {sent.error}", key)
        _check_future(rid, key, sent, where, report)
    for entry in entries:
        n = visible_per_txn[entry.key]
        if 0 < n < len(entry.records):
            report.flag("torn", f"{entry.producer}#{entry.txn} ({entry.outcome.value}, {entry.reason}): "
                                f"{n} of {len(entry.records)} records visible", entry.key)
        if entry.fenced_before_commit and entry.outcome is Outcome.COMMITTED:
            report.flag("zombie_committed", f"{entry.producer}#{entry.txn} ({entry.transactional_id}): "
                                            "commit returned after a successor fenced it", entry.key)


def _check_future(rid: RecordId, key: tuple[str, int], sent: SentRecord, where: list[tuple[str, int, int]],
                  report: Report) -> None:
    """A visible record must be where its future said (one copy of it, if duplicated: the copies are
    counted as such), in the partition it was sent to."""
    if not where:
        return
    topic = where[0][0]
    misplaced = [p for _, p, _ in where if sent.partition is not None and p != sent.partition]
    if misplaced:
        report.flag("future_mismatch", f"{rid}: sent to {topic}-{sent.partition}, visible in "
                                       f"{topic}-{misplaced[0]}", key)
    elif sent.orphaned:
        return  # its process died before the future said anything
    elif sent.error is not None:
        report.flag("future_mismatch", f"{rid}: visible at {where[0]}, but its future failed: {sent.error}",
                    key)
    elif sent.acked not in [(p, o) for _, p, o in where]:
        report.flag("future_mismatch", f"{rid}: visible at {where[0]}, future said {sent.acked}", key)


def _check_order(seen: Seen, known: Collection[RecordId], report: Report) -> None:
    """Per partition and producer, ids must rise with the offset (duplicates and records no ledger accounts
    for are counted apart)."""
    for topic, partitions in seen.items():
        for partition, records in partitions.items():
            last: dict[str, RecordId] = {}
            for record in records:
                rid = RecordId.decode(record.value)
                if rid is None or rid not in known:
                    continue
                previous = last.get(rid.producer)
                if previous is not None and rid < previous:
                    report.flag("out_of_order", f"{topic}-{partition}@{record.offset}: {rid} after "
                                                f"{previous}", (rid.producer, rid.txn))
                if previous is None or rid > previous:
                    last[rid.producer] = rid


def _check_timing(ledger: Ledger, entries: list[TxnEntry], slack_s: float, report: Report) -> None:
    for call in ledger.calls:
        if call.elapsed_s > call.bound_s + slack_s:
            key = None if call.txn is None else (call.producer, call.txn)
            report.flag("blocked", f"{call.producer}#{call.txn} {call.call} took {call.elapsed_s:.2f}s, "
                                   f"bound {call.bound_s:.2f}s ({call.error or 'returned'})", key)
    for rid, entry, sent in iter_records(entries):
        if sent.orphaned:
            continue
        took = math.inf if sent.resolved_at is None else sent.resolved_at - sent.sent_at
        if took > sent.bound_s + slack_s:
            report.flag("blocked", f"{rid}: future resolved after {took:.2f}s, bound {sent.bound_s:.2f}s "
                                   f"(delivery_timeout_ms)", entry.key)


def _check_errors(ledger: Ledger, report: Report) -> None:
    for event in ledger.errors:
        key = None if event.txn is None else (event.producer, event.txn)
        if not event.expected:
            report.flag("unexpected_error", f"{event.producer}#{event.txn} {event.call}: {event.error}", key)
        if event.calm:
            report.flag("failed_while_calm", f"{event.producer}#{event.txn} {event.call}: {event.error}", key)


def _check_eos(inputs: Mapping[int, Sequence[Any]], outputs: Mapping[int, Sequence[Any]],
               report: Report) -> None:
    """Each visible input exactly once in the output, in input order per partition (the transform is
    ``eos_pipeline.origin_transform``: output partition = input partition, origin in the value)."""
    values = {(p, r.offset): r.value for p, records in inputs.items() for r in records}
    copies: dict[tuple[int, int], list[Any]] = defaultdict(list)  # input -> output records
    for out_partition, records in outputs.items():
        last = -1
        for record in records:
            origin = parse_origin(record)
            if origin is None or origin[0] != out_partition or values.get(origin[:2]) != origin[2]:
                report.flag("eos_unknown", f"output {out_partition}@{record.offset}: {record.value!r} "
                                           "matches no visible input", places=[_place(record)])
                continue
            copies[origin[:2]].append(record)
            if len(copies[origin[:2]]) > 1:
                continue  # counted as duplicated below
            if origin[1] < last:
                report.flag("eos_out_of_order", f"output {out_partition}@{record.offset}: input offset "
                                                f"{origin[1]} after {last}", places=[_place(record)])
            last = max(last, origin[1])
    for place in values:
        found = copies.get(place, [])
        if not found:
            report.flag("eos_lost", f"input {place[0]}@{place[1]} ({values[place]!r}) not in the output")
        elif len(found) > 1:
            report.flag("eos_duplicated", f"input {place[0]}@{place[1]} in the output at offsets "
                                          f"{[r.offset for r in found]}", n=len(found) - 1,
                        places=[_place(r) for r in found])


def _place(record: Any) -> tuple[str, int, int]:
    return record.topic, record.partition, record.offset
