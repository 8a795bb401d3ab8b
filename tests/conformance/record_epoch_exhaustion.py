"""Record what a real Kafka 4.1.0 answers at the end of a TV2 producer's epoch range (KAFKA-20090):
``tests/conformance/kafka-4.1.0/epoch_exhaustion.json``, in the format of the team's shared recordings,
which ``tests/mock/test_conformance.py`` replays against MockCluster.

Run by hand, not by the suite (it starts a broker, and leaves one of its transactional ids broken for
good - the broker is thrown away at the end)::

    KAFKA_HOME=/work/kafka/kafka_2.13-4.1.0 .venv/bin/python -m tests.conformance.record_epoch_exhaustion

Three transactional ids, each fast-forwarded to epoch 32765 with pipelined InitProducerId bumps with
its current producer id and epoch (not recorded, as in the shared ``epoch_overflow.json``: a
``fast_forward`` action), then:

* ``timeout``: a transaction at 32766 that the coordinator aborts on its own (``transaction_timeout_ms``
  2000 ms; the node checks every second), the producer's abort (answered with epoch 32767), and the
  way out a client can take: InitProducerId with its producer id and epoch 32767 (a new producer id at
  epoch 0), then a commit under the new id;
* ``abort``: an abort of a transaction at 32766 (the producer id rotates, as a commit's does);
* ``stuck``: KAFKA-20090 itself - after the same timeout and abort, a transaction begun at 32767 and
  its commit, what a new instance's InitProducerId gets, the partition's offsets and the coordinator's
  next timeout pass. Last, because from then on the node's timeout task throws at this id on every pass.

Polls that only wait (a fresh topic's leaders, the timeout abort, markers) are not recorded.
Normalization as the shared recordings: ``$RUN``, ``$PIDn``, ``$TS``, ``$TOPIC_IDn``, ``$CLUSTER_ID``.
"""

from __future__ import annotations

import os
import struct
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import EndTxnRequest, InitProducerIdRequest

from tests.conformance.record_read_path import Broker, Recorder, create_topic, until
from txnproducer.testing.wire_client import WireClient, build_batch, decode_batches

TIMEOUT_MS = 2000
PID_KEYS = ("producer_id", "ongoing_txn_producer_id", "v3_and_below_producer_id")
TS_KEYS = ("transaction_start_time_ms", "log_append_time_ms")


def control_records(batches: list[dict[str, Any]], raw: Any) -> list[dict[str, Any]]:
    """The read path's decoded batches, with control records as the shared recordings show them."""
    for batch, decoded in zip(batches, decode_batches(bytes(raw) if raw else None), strict=True):
        if not decoded.is_control_batch:
            continue
        records = []
        for record in decoded:
            key_version, kind = struct.unpack(">hh", bytes(record.key))
            value_version, coordinator_epoch = struct.unpack(">hi", bytes(record.value)[:6])
            records.append({"offset": record.offset, "control_type": "COMMIT" if kind == 1 else "ABORT",
                            "control_key_version": key_version, "control_value_version": value_version,
                            "coordinator_epoch": coordinator_epoch, "timestamp": record.timestamp})
        batch["records"] = records
    return batches


class TxnRecorder(Recorder):
    """The read path's recorder plus the shared recordings' producer-id and time placeholders."""

    def __init__(self, broker: Broker, run: str, scenario: str) -> None:
        super().__init__(broker, run, scenario)
        self.pids: list[int] = []

    def send(self, request: Any, note: str, *, setup: bool = False, produce: bool = False) -> Any:
        response = super().send(request, note, setup=setup, produce=produce)
        if isinstance(request, FetchRequest):
            recorded = self.steps[-1]["response"]["responses"]
            for topic, sent in zip(recorded, response.responses, strict=True):
                for part, raw in zip(topic["partitions"], sent.partitions, strict=True):
                    part["records"] = control_records(part["records"], raw.records)
        self._note_pids(self.steps[-1])
        return response

    def _note_pids(self, value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                self._note_pids(v, k)
        elif isinstance(value, list):
            for v in value:
                self._note_pids(v, key)
        elif key in PID_KEYS and isinstance(value, int) and value >= 0 and value not in self.pids:
            self.pids.append(value)

    def normalized(self, data: Any) -> Any:
        pids = {pid: f"$PID{i + 1}" for i, pid in enumerate(self.pids)}

        def walk(value: Any, key: str = "") -> Any:
            if isinstance(value, dict):
                return {k: walk(v, k) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v, key) for v in value]
            if isinstance(value, int) and not isinstance(value, bool):
                if key in PID_KEYS and value in pids:
                    return pids[value]
                if key in TS_KEYS and value > 0:
                    return "$TS"
            return value

        return super().normalized(walk(data))


def find_coordinator(rec: TxnRecorder, tid: str) -> None:
    """FindCoordinator once it answers NONE: a fresh node answers COORDINATOR_NOT_AVAILABLE until it
    created ``__transaction_state`` (timing noise, dropped from the recording)."""
    for _ in range(100):
        request = FindCoordinatorRequest[6](key_type=1, coordinator_keys=[tid])
        answer = rec.send(request, "transaction coordinator")
        if not answer.coordinators[0].error_code:
            return
        rec.steps.pop()
        time.sleep(0.1)
    raise RuntimeError(f"no transaction coordinator for {tid!r}")


def init(rec: TxnRecorder, tid: str, pid: int, epoch: int, note: str) -> Any:
    return rec.send(InitProducerIdRequest[5](transactional_id=tid, transaction_timeout_ms=TIMEOUT_MS,
                                             producer_id=pid, producer_epoch=epoch), note)


def fast_forward(rec: TxnRecorder, tid: str, pid: int, epoch: int, target: int) -> None:
    """KIP-360 bumps (pid, e) -> e + 1 from ``epoch`` to ``target``, pipelined, not recorded."""
    client = WireClient("127.0.0.1", rec.broker.port, client_id=f"conformance-{rec.run}", timeout=60.0)
    try:
        pending: list[tuple[int, int]] = []
        next_epoch = epoch
        while next_epoch < target or pending:
            while next_epoch < target and len(pending) < 64:
                request = InitProducerIdRequest[5](transactional_id=tid, transaction_timeout_ms=TIMEOUT_MS,
                                                   producer_id=pid, producer_epoch=next_epoch)
                pending.append((client.send_nowait(request), next_epoch + 1))
                next_epoch += 1
            cid, expected = pending.pop(0)
            answer = client.receive(cid)
            if answer.error_code or answer.producer_id != pid or answer.producer_epoch != expected:
                raise RuntimeError(f"bump to {expected} answered {answer}")
    finally:
        client.close()
    rec.action("fast_forward", f"{target - epoch} InitProducerId v5 calls with the current (producer id,"
               " epoch), pipelined 64 deep, NOT recorded; each answered NONE, same producer id, epoch+1",
               reached_epoch=target)


def produce(rec: TxnRecorder, tid: str, topic: str, pid: int, epoch: int, partitions: list[int],
            sequence: int, note: str) -> Any:
    data = [ProduceRequest.TopicProduceData.PartitionProduceData(
        index=p, records=build_batch([(b"k", f"{note[:20]}-{p}".encode())], producer_id=pid,
                                     producer_epoch=epoch, base_sequence=sequence, transactional=True))
        for p in partitions]
    return rec.send(ProduceRequest[12](transactional_id=tid, acks=-1, timeout_ms=30000,
                                       topic_data=[ProduceRequest.TopicProduceData(name=topic,
                                                                                   partition_data=data)]),
                    note, produce=True)


def end_txn(rec: TxnRecorder, tid: str, pid: int, epoch: int, commit: bool, note: str) -> Any:
    return rec.send(EndTxnRequest[5](transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                      committed=commit), note)


def describe(rec: TxnRecorder, tid: str, note: str) -> Any:
    return rec.send(DescribeTransactionsRequest[0](transactional_ids=[tid]), note).transaction_states[0]


def state_of(rec: TxnRecorder, tid: str) -> tuple[str, int]:
    answer = rec.client.send(DescribeTransactionsRequest[0](transactional_ids=[tid])).transaction_states[0]
    return str(answer.transaction_state), int(answer.producer_epoch)


def wait_for_timeout_abort(rec: TxnRecorder, tid: str) -> None:
    seen: list[str] = []

    def aborted() -> bool:
        state, epoch = state_of(rec, tid)
        if not seen or seen[-1] != f"{state}/epoch {epoch}":
            seen.append(f"{state}/epoch {epoch}")
        return state == "CompleteAbort"

    started = time.monotonic()
    until(aborted, f"the coordinator aborts {tid}'s timed-out transaction", attempts=200)
    rec.action("sleep", f"waited {time.monotonic() - started:.1f} s without sending anything for this"
               f" transaction (transaction_timeout_ms={TIMEOUT_MS}; the node aborts timed-out transactions"
               " every transaction.abort.timed.out.transaction.cleanup.interval.ms=1000);"
               " DescribeTransactions was polled every 100 ms meanwhile (not recorded)",
               seconds=TIMEOUT_MS / 1000 + 2, states_seen=seen)


def wait_for_markers(rec: TxnRecorder, tid: str) -> None:
    until(lambda: state_of(rec, tid)[0] in ("CompleteCommit", "CompleteAbort"), f"{tid}'s markers")
    rec.action("wait_for_markers", "poll DescribeTransactions v0 (polls not recorded) until the state is no"
               " longer PrepareCommit/PrepareAbort, i.e. the markers are written",
               final_state=state_of(rec, tid)[0])


def fetch(rec: TxnRecorder, topic: str, partitions: list[int], committed: bool, note: str) -> Any:
    t = FetchRequest.FetchTopic
    return rec.send(FetchRequest[12](
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=1 if committed else 0,
        session_id=0, session_epoch=-1,
        topics=[t(topic=topic, partitions=[
            t.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                             log_start_offset=-1, partition_max_bytes=1 << 20)
            for p in partitions])],
        forgotten_topics_data=[], rack_id=""), note)


def end_offsets(rec: TxnRecorder, topic: str, partition: int, committed: bool, note: str) -> Any:
    t = ListOffsetsRequest.ListOffsetsTopic
    return rec.send(ListOffsetsRequest[9](
        replica_id=-1, isolation_level=1 if committed else 0,
        topics=[t(name=topic, partitions=[t.ListOffsetsPartition(partition_index=partition,
                                                                  current_leader_epoch=-1, timestamp=-1)])]),
        note)


def init_when_ready(rec: TxnRecorder, tid: str) -> Any:
    """The id's first InitProducerId; a fresh node's coordinator may first answer NOT_COORDINATOR or
    COORDINATOR_LOAD_IN_PROGRESS while it loads ``__transaction_state``: those answers are timing noise,
    dropped from the recording, and asked again."""
    for _ in range(100):
        answer = init(rec, tid, -1, -1, f"InitProducerId v5 with transaction_timeout_ms={TIMEOUT_MS}")
        if answer.error_code not in (14, 15, 16):  # load in progress, not available, not coordinator
            return answer
        rec.steps.pop()
        time.sleep(0.1)
    raise RuntimeError(f"the transaction coordinator of {tid!r} never became ready")


def to_the_edge(rec: TxnRecorder, tid: str, topic: str) -> int:
    """A fresh id at epoch 32766 with one record in an open transaction on partition 0; its pid."""
    find_coordinator(rec, tid)
    first = init_when_ready(rec, tid)
    pid = int(first.producer_id)
    fast_forward(rec, tid, pid, 0, 32765)
    init(rec, tid, -1, -1, "InitProducerId v5 (-1, -1), as a new instance's init_transactions(): epoch 32766")
    produce(rec, tid, topic, pid, 32766, [0], 0, "Produce v12 at epoch 32766 starts the transaction")
    describe(rec, tid, "DescribeTransactions: ongoing at 32766")
    return pid


def record(broker: Broker, run: str) -> None:
    rec = TxnRecorder(broker, run, "epoch_exhaustion")
    topic = f"conformance-epoch-exhaustion-topic-{run}"
    names = {"topic": topic.replace(run, "$RUN")}
    create_topic(rec, topic, 2)

    tid = f"conformance-epoch-exhaustion-timeout-{run}"
    names["transactional_id_timeout"] = tid.replace(run, "$RUN")
    pid = to_the_edge(rec, tid, topic)
    wait_for_timeout_abort(rec, tid)
    describe(rec, tid, "DescribeTransactions after the coordinator's timeout abort")
    end_txn(rec, tid, pid, 32766, False, "EndTxn v5 abort with epoch 32766: the producer's own abort after"
            " the coordinator's (taken as a retry)")
    wait_for_markers(rec, tid)
    way_out = init(rec, tid, pid, 32767, "InitProducerId v5 with (pid, 32767): the client's way out, a"
                   " KIP-360 bump with the last epoch")
    new_pid, new_epoch = int(way_out.producer_id), int(way_out.producer_epoch)
    produce(rec, tid, topic, new_pid, new_epoch, [0, 1], 0, "Produce v12 under the new producer id")
    end_txn(rec, tid, new_pid, new_epoch, True, "EndTxn v5 commit under the new producer id")
    wait_for_markers(rec, tid)
    fetch(rec, topic, [0, 1], True, "Fetch v12 read_committed: the aborted record and the new id's commit")
    for p in (0, 1):
        end_offsets(rec, topic, p, True,
                    f"ListOffsets v9 latest read_committed, partition {p}: last stable offset")

    tid = f"conformance-epoch-exhaustion-abort-{run}"
    names["transactional_id_abort"] = tid.replace(run, "$RUN")
    pid = to_the_edge(rec, tid, topic)
    end_txn(rec, tid, pid, 32766, False, "EndTxn v5 abort at epoch 32766")
    wait_for_markers(rec, tid)
    end_txn(rec, tid, pid, 32766, False, "the same EndTxn again (a retry of a lost answer)")
    describe(rec, tid, "DescribeTransactions after the abort")

    tid = f"conformance-epoch-exhaustion-stuck-{run}"
    names["transactional_id_stuck"] = tid.replace(run, "$RUN")
    pid = to_the_edge(rec, tid, topic)
    wait_for_timeout_abort(rec, tid)
    end_txn(rec, tid, pid, 32766, False, "EndTxn v5 abort with epoch 32766, answered with epoch 32767")
    wait_for_markers(rec, tid)
    produce(rec, tid, topic, pid, 32767, [0], 0, "Produce v12 at epoch 32767: a transaction begins there")
    end_txn(rec, tid, pid, 32767, True, "EndTxn v5 commit at epoch 32767 (KAFKA-20090)")
    describe(rec, tid, "DescribeTransactions after that commit")
    init(rec, tid, -1, -1, "InitProducerId v5 (-1, -1): a new instance's init_transactions()")
    init(rec, tid, pid, 32767, "InitProducerId v5 (pid, 32767): a KIP-360 bump with the last epoch")
    end_offsets(rec, topic, 0, True, "ListOffsets v9 latest read_committed, partition 0: last stable offset")
    end_offsets(rec, topic, 0, False, "ListOffsets v9 latest read_uncommitted, partition 0: high watermark")
    time.sleep((TIMEOUT_MS + 2000) / 1000)  # the coordinator's next timeout passes: nothing to wait on
    rec.action("sleep", f"waited {(TIMEOUT_MS + 2000) / 1000:.0f} s: the transaction at 32767 is past its"
               " timeout and the node's timeout task visits it", seconds=(TIMEOUT_MS + 2000) / 1000)
    describe(rec, tid, "DescribeTransactions after the coordinator's timeout passes")
    rec.write(
        "What Kafka 4.1.0 answers at the end of a TV2 producer's epoch range. timeout: the coordinator's "
        "own abort of a transaction at 32766 leaves the producer id at epoch 32767, and the producer's "
        "abort is answered with that epoch; InitProducerId with (pid, 32767) then gives a new producer id"
        " at epoch 0 - what txnproducer does before its next transaction. abort: an abort at 32766 "
        "rotates the producer id as a commit does. stuck: a transaction begun at 32767 cannot end "
        "(KAFKA-20090): its commit, a new instance's InitProducerId and the bump all fail, it stays "
        "Ongoing, and the last stable offset stays behind the high watermark.",
        names)


def main() -> None:
    home = Path(os.environ.get("KAFKA_HOME", "/work/kafka/kafka_2.13-4.1.0"))
    run = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="txnproducer-conformance-") as tmp:
        broker = Broker(home, Path(tmp))
        broker.start()
        try:
            record(broker, run)
        finally:
            broker.stop()
            for log in sorted((Path(tmp) / "logs").glob("server.log*")):  # the node's view of it
                for line in log.read_text(errors="replace").splitlines():
                    if "Illegal new producer epoch" in line or "Short.MaxValue" in line:
                        print(line[:300])


if __name__ == "__main__":
    main()
