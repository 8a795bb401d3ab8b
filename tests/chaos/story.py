"""The request story of a failed chaos run: what crossed the wire for the transactions the checker flagged.

Why: an anomaly count says *that* something went wrong; the requests of the transactions involved, with the
faults and the transactions' begin and end at their request-log positions, usually say *what*. MockCluster's
request log gives the requests; the ledger and the scheduler give the rest. The story is a list of blocks,
most specific first: one per flagged transaction, one per producer epoch that wrote a flagged pipeline
output (under TV2 an epoch is one transaction) with the group's requests around it, and the last requests of
transactional ids the checker named without a transaction (the pipeline's).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from tests._support.txn_checker import Report
from tests._support.txn_ledger import Ledger, TxnEntry
from tests.chaos.scheduler import FaultEvent
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster, RequestLogEntry
from txnproducer.testing.wire_client import decode_batches

__all__ = ["batch_owners", "format_entry", "request_story", "topic_names"]

Place = tuple[str, int, int]  # topic, partition, offset
ProducerEpoch = tuple[int, int]

AROUND = 25  # requests shown before a flagged transaction began and after it ended
TAIL = 60  # requests shown for a transactional id named without a transaction


def format_entry(entry: RequestLogEntry, topic_names: Mapping[str, str] | None = None) -> str:
    """One request as a line: position, broker, API, producer id/epoch, what it carried, the answer.
    ``topic_names`` maps topic ids (Produce v13 names topics by id) to names."""
    names = topic_names or {}
    fields = entry.fields
    parts = [f"#{entry.seq}", f"b{entry.broker_id}", f"{entry.api} v{entry.version}"]
    if "transactional_id" in fields:
        parts.append(f"tid={fields['transactional_id']}")
    if "producer_id" in fields:
        parts.append(f"pid={fields['producer_id']}/e{fields.get('producer_epoch')}")
    if entry.api == "EndTxn":
        parts.append("COMMIT" if fields.get("committed") else "ABORT")
    if "group_id" in fields:
        parts.append(f"group={fields['group_id']} gen={fields.get('generation_id')} "
                     f"member=...{str(fields.get('member_id', ''))[-8:]}")
    if entry.api == "Produce":
        parts.append(" ".join(f"{names.get(t, t)}-{p}:pid={pid}/e{epoch}/seq={seq}+{n}"
                              for t, p, pid, epoch, seq, n, _ in fields.get("batches", [])))
    elif "partitions" in fields:
        parts.append(" ".join(f"{t}-{p}" for t, p in fields["partitions"]))
    parts.append("-> " + (",".join(ec.error_name(c) for c in entry.error_codes) or "ok"))
    if entry.injected:
        parts.append("[injected]")
    if entry.dropped:
        parts.append("[dropped]")
    return " ".join(parts)


def batch_owners(cluster: MockCluster, places: Iterable[Place]) -> dict[Place, ProducerEpoch]:
    """The producer id and epoch of the batch holding each visible place (from the partition logs)."""
    wanted: dict[tuple[str, int], set[int]] = defaultdict(set)
    for topic, partition, offset in places:
        wanted[(topic, partition)].add(offset)
    owners: dict[Place, ProducerEpoch] = {}
    for (topic, partition), offsets in wanted.items():
        with cluster.state.lock:
            log = cluster.state.partition_log(topic, partition)
            data = b"" if log is None else log.read(0, 2**62, log.high_watermark, min_one=True)[0]
        for batch in decode_batches(data):
            for offset in offsets:
                if batch.base_offset <= offset <= batch.base_offset + batch.last_offset_delta:
                    owners[(topic, partition, offset)] = (batch.producer_id, batch.producer_epoch)
    return owners


def topic_names(cluster: MockCluster) -> dict[str, str]:
    """Topic id (as the request log writes it) -> topic name."""
    with cluster.state.lock:
        return {str(topic.topic_id): name for name, topic in cluster.state.topics.items()}


def _epochs_of(entry: RequestLogEntry) -> set[ProducerEpoch]:
    fields = entry.fields
    found = {(pid, epoch) for _, _, pid, epoch, _, _, _ in fields.get("batches", ())}
    if "producer_id" in fields:
        found.add((fields["producer_id"], fields.get("producer_epoch", -1)))
    return found


def _block(title: str, entries: Sequence[RequestLogEntry], faults: Sequence[FaultEvent],
           names: Mapping[str, str], marks: Iterable[tuple[int, str]] = ()) -> list[str]:
    """A titled block: the entries, with the faults and marks that fall between the first and the last."""
    if not entries:
        return [f"== {title}: no requests"]
    lo, hi = entries[0].seq, entries[-1].seq
    lines = [(e.seq, 1, format_entry(e, names)) for e in entries]
    lines += [(seq, 0, text) for seq, text in marks if lo <= seq <= hi + 1]
    lines += [(f.seq, 0, f"!! {f.at_s:7.2f}s fault: {f.text}") for f in faults if lo <= f.seq <= hi + 1]
    return [f"== {title}", *(text for _, _, text in sorted(lines))]


def _txn_marks(entry: TxnEntry) -> list[tuple[int, str]]:
    out = []
    if entry.start_pos is not None:
        out.append((entry.start_pos, f"-- {entry.producer}#{entry.txn} begins ({entry.intent}, "
                                     f"{len(entry.records)} records, instance {entry.instance})"))
    if entry.end_pos is not None:
        out.append((entry.end_pos,
                    f"-- {entry.producer}#{entry.txn} ends {entry.outcome.value}: {entry.reason}"))
    return out


def request_story(log: Sequence[RequestLogEntry], ledger: Ledger, report: Report,
                  faults: Sequence[FaultEvent], owners: Mapping[Place, ProducerEpoch] | None = None,
                  group: str | None = None, topic_names: Mapping[str, str] | None = None) -> str:
    """The blocks of the module docstring. ``owners`` (see :func:`batch_owners`) names the producer epochs
    that wrote flagged places; ``group`` is the pipeline's consumer group; ``topic_names`` maps topic ids
    to names (see :func:`topic_names`)."""
    names = topic_names or {}
    by_tid: dict[str, list[RequestLogEntry]] = defaultdict(list)
    for request in log:
        by_tid[str(request.fields.get("transactional_id"))].append(request)
    lines: list[str] = []
    for producer, txn in sorted(report.involved):
        entry = ledger.get(producer, txn)
        if entry is None:
            continue
        lo = (entry.start_pos or 0) - AROUND
        hi = (len(log) if entry.end_pos is None else entry.end_pos) + AROUND
        window = [e for e in by_tid[entry.transactional_id] if lo <= e.seq <= hi]
        lines += _block(f"{producer}#{txn} ({entry.transactional_id}): {entry.outcome.value}, {entry.reason}",
                        window, faults, names, _txn_marks(entry))
    epochs = sorted(set((owners or {}).values()))
    for pid, epoch in epochs:
        written = sorted(place for place, owner in (owners or {}).items() if owner == (pid, epoch))
        mine = [e for e in log if (pid, epoch) in _epochs_of(e)]
        lo, hi = (mine[0].seq, mine[-1].seq) if mine else (1, 0)
        around = [e for e in log if lo - AROUND * 4 <= e.seq <= hi and group is not None
                  and e.fields.get("group_id") == group and e.api != "Heartbeat"]
        shown = ", ".join(f"{t}-{p}@{o}" for t, p, o in written)
        lines += _block(f"producer id {pid} epoch {epoch}, which wrote {shown}",
                        sorted(mine + around, key=lambda e: e.seq), faults, names)
    if not epochs:
        for tid in sorted(report.involved_ids):
            lines += _block(f"the last requests of {tid}", by_tid[tid][-TAIL:], faults, names)
    return "\n".join(lines) or "(nothing to tell: no transaction involved)"
