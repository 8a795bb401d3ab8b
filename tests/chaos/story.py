"""The request story of a failed chaos run: what crossed the wire for the transactions the checker flagged.

Why: an anomaly count says *that* something went wrong; the requests of the transactional ids involved,
with the faults and the transactions' begin and end interleaved at their request-log positions, usually say
*what*. MockCluster's request log gives the requests; the ledger and the scheduler give the rest.
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

__all__ = ["batch_owners", "format_entry", "request_story"]

Place = tuple[str, int, int]  # topic, partition, offset
ProducerEpoch = tuple[int, int]

AROUND = 25  # requests shown before a flagged transaction began and after it ended
TAIL = 60  # requests shown for a transactional id without ledger positions (a pipeline processor)


def format_entry(entry: RequestLogEntry) -> str:
    """One request as a line: position, broker, API, producer id/epoch, what it carried, the answer."""
    fields = entry.fields
    parts = [f"#{entry.seq}", f"b{entry.broker_id}", f"{entry.api} v{entry.version}"]
    if "transactional_id" in fields:
        parts.append(f"tid={fields['transactional_id']}")
    if "producer_id" in fields:
        parts.append(f"pid={fields['producer_id']}/e{fields.get('producer_epoch')}")
    if entry.api == "EndTxn":
        parts.append("COMMIT" if fields.get("committed") else "ABORT")
    if "group_id" in fields:
        parts.append(f"group={fields['group_id']}")
    if entry.api == "Produce":
        parts.append(" ".join(f"{t}-{p}:pid={pid}/e{epoch}/seq={seq}+{n}"
                              for t, p, pid, epoch, seq, n, _ in fields.get("batches", [])))
    elif "partitions" in fields:
        parts.append(" ".join(f"{t}-{p}" for t, p in fields["partitions"]))
    parts.append("-> " + (",".join(ec.error_name(c) for c in entry.error_codes) or "ok"))
    if entry.injected:
        parts.append("[injected]")
    if entry.dropped:
        parts.append("[dropped]")
    return " ".join(parts)


def _windows(ledger: Ledger, report: Report, log_end: int) -> dict[str, list[tuple[int, int]]]:
    """Per transactional id, the request-log ranges worth showing."""
    windows: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for producer, txn in sorted(report.involved):
        entry = ledger.get(producer, txn)
        if entry is None:
            continue
        start = entry.start_pos if entry.start_pos is not None else 0
        end = entry.end_pos if entry.end_pos is not None else log_end
        windows[entry.transactional_id].append((max(0, start - AROUND), end + AROUND))
    for tid in report.involved_ids:
        windows[tid].append((-1, log_end))  # the tail only: see _select
    return windows


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


def _epochs_of(entry: RequestLogEntry) -> set[ProducerEpoch]:
    fields = entry.fields
    found = {(pid, epoch) for _, _, pid, epoch, _, _, _ in fields.get("batches", ())}
    if "producer_id" in fields:
        found.add((fields["producer_id"], fields.get("producer_epoch", -1)))
    return found


def _select(log: Sequence[RequestLogEntry], windows: dict[str, list[tuple[int, int]]],
            epochs: Iterable[ProducerEpoch], group: str | None) -> list[RequestLogEntry]:
    """The entries of the windows (or the tail) of each transactional id, the entries of the producer
    epochs of interest, and the group's requests (but heartbeats) between the first and last of those."""
    chosen: list[RequestLogEntry] = []
    tails: dict[str, list[RequestLogEntry]] = defaultdict(list)
    epochs = set(epochs)
    of_epochs = [e for e in log if epochs & _epochs_of(e)]
    lo, hi = (of_epochs[0].seq, of_epochs[-1].seq) if of_epochs else (1, 0)
    for entry in log:
        tid = str(entry.fields.get("transactional_id"))
        ranges = windows.get(tid, [])
        if any(a <= entry.seq <= b for a, b in ranges if a >= 0) or epochs & _epochs_of(entry) or (
                lo <= entry.seq <= hi and group is not None and entry.fields.get("group_id") == group
                and entry.api != "Heartbeat"):
            chosen.append(entry)
        elif any(a < 0 for a, _ in ranges):
            tails[tid].append(entry)
    for entries in tails.values():
        chosen.extend(entries[-TAIL:])
    return sorted(chosen, key=lambda e: e.seq)


def _marks(ledger: Ledger, report: Report) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for producer, txn in report.involved:
        entry = ledger.get(producer, txn)
        if entry is None:
            continue
        out.extend(_txn_marks(entry))
    return out


def _txn_marks(entry: TxnEntry) -> Iterable[tuple[int, str]]:
    name = f"{entry.producer}#{entry.txn} ({entry.transactional_id}, instance {entry.instance})"
    if entry.start_pos is not None:
        yield entry.start_pos, f"== {name} begins ({entry.intent}, {len(entry.records)} records)"
    if entry.end_pos is not None:
        yield entry.end_pos, f"== {name} ends {entry.outcome.value}: {entry.reason}"


def request_story(log: Sequence[RequestLogEntry], ledger: Ledger, report: Report,
                  faults: Sequence[FaultEvent], owners: Mapping[Place, ProducerEpoch] | None = None,
                  group: str | None = None, limit: int | None = None) -> str:
    """The requests of the flagged transactions, with faults and transaction marks at their positions.

    ``owners`` (see :func:`batch_owners`) names the producer epochs that wrote flagged places: their
    requests are shown too (under TV2 an epoch is one transaction), with ``group``'s requests between them.
    ``limit`` keeps the last lines only (for a message; the whole story goes to a file)."""
    owners = owners or {}
    windows = _windows(ledger, report, len(log))
    if owners:  # the epochs that wrote the flagged places say more than the ids' last requests
        windows = {tid: [w for w in ws if w[0] >= 0] for tid, ws in windows.items()}
    selected = _select(log, windows, owners.values(), group)
    if not selected:
        return "(no requests of the transactional ids involved)"
    lo, hi = selected[0].seq, selected[-1].seq
    written_by = [f"== {topic}-{partition}@{offset} was written by producer id {pid}, epoch {epoch}"
              for (topic, partition, offset), (pid, epoch) in sorted(owners.items())]
    lines: list[tuple[int, int, str]] = [(e.seq, 1, format_entry(e)) for e in selected]
    lines += [(seq, 0, text) for seq, text in _marks(ledger, report) if lo <= seq <= hi + 1]
    lines += [(f.seq, 0, f"!! {f.at_s:7.2f}s fault: {f.text}") for f in faults if lo <= f.seq <= hi + 1]
    text = [line for _, _, line in sorted(lines)]
    if limit is not None and len(text) > limit:
        text = [f"... ({len(text) - limit} earlier lines in the full story)", *text[-limit:]]
    return "\n".join(text + written_by)  # last: a message shows the story's tail
