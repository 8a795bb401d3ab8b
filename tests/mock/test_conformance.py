"""Replay the Kafka 4.1.0 conformance recordings against the MockCluster's transaction coordinator.

Each recording (``shared/conformance/kafka-4.1.0/*.json``) lists every request a real broker got and
what it answered. The replay sends the same requests - placeholders mapped: ``$RUN`` becomes a fresh
suffix, ``$PIDn`` is bound to the producer id our coordinator answered the first time it appears and
must then match everywhere - and compares the answers field by field.

Two levels:

* handler level (always): the transaction coordinator's handlers are called directly on a small fake
  cluster state (``_txn_fake_state``). Transactional requests are compared in full. Produce steps
  are checked through ``verify_produce`` (the coordinator's part of a Produce: TV1 verification, TV2
  implicit add, epoch checks); answers that only the partition log can give (sequence errors,
  offsets) are not compared there. Fetch steps are checked for the control batches: the markers our
  coordinator wrote must be exactly the recorded COMMIT/ABORT batches (producer id, epoch, type).
* wire level (when the real ``MockCluster`` is importable): every step goes over TCP to a one-broker
  MockCluster, and everything is compared, Produce/Fetch/DescribeProducers included.

The recordings' placeholders for wall-clock values (``$TS``) only require a positive value.

Two sets of recordings: the team's (``shared/conformance/kafka-4.1.0``, transactional flows) and the read
path's, kept in this repository (``tests/conformance/kafka-4.1.0``: ListOffsets and OffsetForLeaderEpoch
across a restart and DeleteRecords, incremental fetch sessions, the classic group protocol; recorded by
``tests/conformance/record_read_path.py``, in the same format). The read path's are replayed at wire level
only (no transactional step for the handler level to check); their placeholders ``$MEMBERn`` (member
ids) and ``$SESSIONn`` (fetch session ids) bind to the mock's values on first sight, as ``$TOPIC_IDn`` do,
and requests use the bound values; request bytes are ``{"latin1": ...}`` (``$RUN`` substituted first).
Their actions: ``restart_broker`` (the one-broker mock's stop and start: a new leader epoch, as the real
node's restart) and ``delete_records`` (the mock has no DeleteRecords handler:
``MockCluster.delete_records``).
"""

from __future__ import annotations

import copy
import json
import os
import re
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
)
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

from txnproducer._internal.protocol.consumer_group_describe import ConsumerGroupDescribeRequest
from txnproducer._internal.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient, build_batch, decode_batches

try:  # tests/mock is a plain directory (rootdir import) or a package, depending on the tree
    from _txn_fake_state import FakeState
except ImportError:  # pragma: no cover
    from tests.mock._txn_fake_state import FakeState

def _recordings_dir() -> Path:
    """The recordings: $TXN_CONFORMANCE_DIR, else shared/ beside the repository (as CI has it)."""
    if "TXN_CONFORMANCE_DIR" in os.environ:
        return Path(os.environ["TXN_CONFORMANCE_DIR"])
    beside_repo = Path(__file__).resolve().parents[3] / "shared/conformance/kafka-4.1.0"
    return beside_repo if beside_repo.exists() else Path("/work/shared/conformance/kafka-4.1.0")


RECORDINGS = _recordings_dir()
FILES = ["tv2_commit_flow", "tv1_commit_flow", "errors", "txn_timeout", "epoch_bump_kip360",
         "epoch_overflow", "describe_ongoing"]
#: the read path's recordings, in this repository (see the module docstring)
READ_PATH_RECORDINGS = Path(__file__).resolve().parents[1] / "conformance" / "kafka-4.1.0"
READ_PATH_FILES = ["read_offsets", "fetch_sessions", "classic_group"]
#: the KIP-848 recording (tests/conformance/record_consumer_group.py) and the settings of the node it was
#: recorded on, which the replay's MockCluster takes
CONSUMER_GROUP_FILE = "consumer_group"
CONSUMER_GROUP_CONFIG = {"group.consumer.heartbeat.interval.ms": 5000,
                         "group.consumer.session.timeout.ms": 10000, "group.consumer.max.size": 3}
#: transactional recordings kept in this repository too (tests/conformance/record_epoch_exhaustion.py)
REPO_TXN_FILES = ["epoch_exhaustion"]

TXN_REQUESTS: dict[str, Any] = {
    "InitProducerId": InitProducerIdRequest,
    "AddPartitionsToTxn": AddPartitionsToTxnRequest,
    "AddOffsetsToTxn": AddOffsetsToTxnRequest,
    "EndTxn": EndTxnRequest,
    "TxnOffsetCommit": TxnOffsetCommitRequest,
    "DescribeTransactions": DescribeTransactionsRequest,
    "ListTransactions": ListTransactionsRequest,
}
OTHER_REQUESTS: dict[str, Any] = {
    "CreateTopics": CreateTopicsRequest,
    "Metadata": MetadataRequest,
    "FindCoordinator": FindCoordinatorRequest,
    "Produce": ProduceRequest,
    "Fetch": FetchRequest,
    "DescribeProducers": DescribeProducersRequest,
    "OffsetFetch": OffsetFetchRequest,
    "ListOffsets": ListOffsetsRequest,
    "OffsetForLeaderEpoch": OffsetForLeaderEpochRequest,
    "JoinGroup": JoinGroupRequest,
    "SyncGroup": SyncGroupRequest,
    "Heartbeat": HeartbeatRequest,
    "LeaveGroup": LeaveGroupRequest,
    "OffsetCommit": OffsetCommitRequest,
    "DescribeGroups": DescribeGroupsRequest,
    "ListGroups": ListGroupsRequest,
    "ConsumerGroupHeartbeat": ConsumerGroupHeartbeatRequest,
    "ConsumerGroupDescribe": ConsumerGroupDescribeRequest,
}
CONCURRENT_TRANSACTIONS = 51
PID_RE = re.compile(r"^\$PID\d+$")
FREE_PLACEHOLDERS = ("$CLUSTER_ID", "$FEATURES_EPOCH", "$THROTTLE_MS")
# values the broker makes up: bound to the mock's on first sight, substituted in later requests
BOUND_PLACEHOLDERS = ("$TOPIC_ID", "$MEMBER", "$SESSION")
# lists whose order the broker does not define (a broker answers partitions in the order of its own maps)
UNORDERED_KEYS = ("index", "partition_index", "name", "topic", "transactional_id", "group_id", "member_id",
                  "topic_id")


def load(name: str, directory: Path = RECORDINGS) -> dict[str, Any]:
    with open(directory / f"{name}.json") as fh:
        return dict(json.load(fh))


def build(cls: Any, data: dict[str, Any], version: int | None = None) -> Any:
    """A kafka-python request/data object from its ``to_dict()`` form (recursively)."""
    kwargs: dict[str, Any] = {}
    for name, field in cls._struct.fields.items():
        if name not in data:
            continue
        value = data[name]
        if isinstance(value, dict) and set(value) == {"latin1"}:  # request bytes, as recorded
            value = value["latin1"].encode("latin-1")
        elif value is not None and field.is_struct_array():
            value = [build(field.data_class, item) for item in value]
        elif value is not None and field.is_struct():
            value = build(field.data_class, value)
        elif isinstance(value, str) and getattr(field, "type_str", "") == "uuid":
            value = uuid.UUID(value)
        kwargs[name] = value
    if version is not None:
        return cls[version](**kwargs)
    return cls(**kwargs)


class Replay:
    """Placeholder bindings and the comparison of one recording file."""

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self.run = uuid.uuid4().hex[:8]
        self.pids: dict[str, int] = {}
        self.diffs: list[str] = []
        self.checked = 0
        self.skipped: list[str] = []
        self._foreign = 7_000_000
        self.bound: dict[str, Any] = {}  # $TOPIC_IDn, $MEMBERn, $SESSIONn -> the mock's value
        self.port = 9092  # the recorded broker's port; the wire replay maps it to the mock's

    # -- placeholders
    def subst(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.subst(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.subst(v) for v in value]
        if isinstance(value, str):
            if PID_RE.match(value):
                if value not in self.pids:
                    # first seen in a request (a foreign producer id): any id nobody uses
                    self._foreign += 1
                    self.pids[value] = self._foreign
                return self.pids[value]
            if value.startswith(BOUND_PLACEHOLDERS) and value in self.bound:
                return self.bound[value]
            return value.replace("$RUN", self.run)
        return value

    def compare(self, expected: Any, actual: Any, where: str) -> None:
        self._cmp(self._sorted(expected), self._sorted(actual), where)

    def _sorted(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: (sorted(v) if k == "partitions" and isinstance(v, list)
                        and all(isinstance(x, int) for x in v) else self._sorted(v))
                    for k, v in value.items()}
        if isinstance(value, list):
            items = [self._sorted(v) for v in value]
            if items and all(isinstance(v, dict) for v in items):
                for key in UNORDERED_KEYS:
                    if all(key in v and isinstance(v[key], (int, str)) for v in items):
                        return sorted(items, key=lambda v, k=key: self._sort_key(v[k]))
            return items
        return value

    def _sort_key(self, value: Any) -> str:
        """A list item's sort key: a bound placeholder ($TOPIC_IDn, $MEMBERn) sorts as its value, so that an
        expected list and the mock's come out in the same order."""
        text = str(value)
        if text.startswith(BOUND_PLACEHOLDERS) and text in self.bound:
            text = str(self.bound[text])
        return text.replace("$RUN", self.run)

    def _cmp(self, expected: Any, actual: Any, where: str) -> None:
        if isinstance(expected, str) and PID_RE.match(expected):
            if not isinstance(actual, int):
                self.diffs.append(f"{where}: expected producer id {expected}, got {actual!r}")
            elif expected in self.pids:
                if self.pids[expected] != actual:
                    self.diffs.append(f"{where}: expected {expected}={self.pids[expected]}, got {actual}")
            elif actual in self.pids.values():
                self.diffs.append(f"{where}: {expected} answered with {actual}, already bound to another id")
            else:
                self.pids[expected] = actual
            return
        if expected == "$TS":
            if not (isinstance(actual, int) and actual > 0):
                self.diffs.append(f"{where}: expected a timestamp, got {actual!r}")
            return
        if isinstance(expected, str) and expected.startswith(BOUND_PLACEHOLDERS):
            value = str(actual) if expected.startswith("$TOPIC_ID") else actual
            bound = self.bound.setdefault(expected, value)
            if bound != value:
                self.diffs.append(f"{where}: expected {expected}={bound!r}, got {actual!r}")
            return
        if isinstance(expected, str) and expected in FREE_PLACEHOLDERS:
            return
        if where.endswith(".port") and expected == 9092:
            expected = self.port
        if isinstance(expected, dict):
            if not isinstance(actual, dict):
                self.diffs.append(f"{where}: expected an object, got {actual!r}")
                return
            for key, value in expected.items():
                if key.endswith("_not_shown"):  # the recorder's truncation note, not a protocol field
                    continue
                if key not in actual:
                    self.diffs.append(f"{where}.{key}: missing")
                else:
                    self._cmp(value, actual[key], f"{where}.{key}")
            return
        if isinstance(expected, list):
            if not isinstance(actual, list) or len(actual) != len(expected):
                self.diffs.append(f"{where}: expected {json.dumps(expected)}, got {actual!r}")
                return
            for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
                self._cmp(e, a, f"{where}[{i}]")
            return
        if isinstance(expected, str):
            expected = expected.replace("$RUN", self.run)
        if expected != actual:
            self.diffs.append(f"{where}: expected {expected!r}, got {actual!r}")


def scenarios(data: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    if "cases" in data:
        out = [("setup", list(data.get("setup_steps", [])))]
        out += [(f"case {c['case']}", list(c["steps"])) for c in data["cases"]]
        return out
    return [("", list(data["steps"]))]


def is_attempt_of(step: dict[str, Any], previous: dict[str, Any]) -> bool:
    return (step.get("api") == previous.get("api") and step.get("request") == previous.get("request")
            and "(attempt" in str(step.get("note", "")))


# ============================================================================ handler level
class HandlerReplay(Replay):
    """Replays the transactional steps on a FakeState (see the module docstring)."""

    def __init__(self, file_name: str) -> None:
        super().__init__(file_name)
        self.state = FakeState(transaction_version=2)
        self.last_tid: str | None = None

    def run_file(self, data: dict[str, Any]) -> None:
        for label, steps in scenarios(data):
            self.run_steps(label, steps)

    def run_steps(self, label: str, steps: list[dict[str, Any]]) -> None:
        i = 0
        while i < len(steps):
            step = steps[i]
            where = f"{self.file_name} {label} step {step.get('step')}".replace("  ", " ")
            consumed = self.run_step(step, steps[i + 1:], where)
            i += 1 + consumed

    def run_step(self, step: dict[str, Any], rest: list[dict[str, Any]], where: str) -> int:
        if "action" in step:
            self.run_action(step, where)
            return 0
        api = step["api"]
        if api in TXN_REQUESTS:
            return self.run_txn_step(step, rest, where)
        if api == "CreateTopics":
            for topic in self.subst(step["request"])["topics"]:
                self.state.create_topic(topic["name"], topic["num_partitions"])
            return 0
        if api == "Produce":
            self.run_produce(step, where)
            return 0
        if api == "Fetch":
            self.check_fetch_markers(step, where)
            return 0
        self.skipped.append(f"{where} {api}: broker/group side, compared at wire level only")
        return 0

    def run_txn_step(self, step: dict[str, Any], rest: list[dict[str, Any]], where: str) -> int:
        request = build(TXN_REQUESTS[step["api"]], self.subst(step["request"]), step["version"])
        tid = (getattr(request, "transactional_id", None)
               or getattr(request, "v3_and_below_transactional_id", None))
        if step["api"] in ("InitProducerId", "EndTxn", "AddPartitionsToTxn") and tid:
            self.last_tid = tid
        actual = self.state.call(request).to_dict()
        expected = step["response"]
        consumed = 0
        if self._error_codes(expected) == {CONCURRENT_TRANSACTIONS} and \
                CONCURRENT_TRANSACTIONS not in self._error_codes(actual):
            # the recording retried while the broker was busy; we may be done sooner (markers are
            # synchronous here): compare with the final attempt and skip the retries
            while consumed < len(rest) and is_attempt_of(rest[consumed], step):
                consumed += 1
            if consumed:
                expected = rest[consumed - 1]["response"]
                where += f" (compared with attempt {consumed + 1})"
        self.checked += 1
        self.compare(expected, actual, f"{where} {step['api']} v{step['version']}")
        return consumed

    @staticmethod
    def _error_codes(response: Any) -> set[int]:
        codes: set[int] = set()

        def walk(v: Any, key: str = "") -> None:
            if isinstance(v, dict):
                for k, x in v.items():
                    walk(x, k)
            elif isinstance(v, list):
                for x in v:
                    walk(x, key)
            elif key.endswith("error_code") and isinstance(v, int) and v:
                codes.add(v)

        walk(response)
        return codes

    def run_produce(self, step: dict[str, Any], where: str) -> None:
        request = self.subst(step["request"])
        answers = {(t["name"], p["index"]): p for t in step["response"]["responses"]
                   for p in t["partition_responses"]}
        for topic in request["topic_data"]:
            for part in topic["partition_data"]:
                batch = part["records"][0]
                if not batch["attributes"]["transactional"]:
                    continue
                key = (topic["name"].replace(self.run, "$RUN"), part["index"])
                recorded = answers[key]
                error, message = self.state.txn.verify_produce(
                    batch["producer_id"], batch["producer_epoch"], topic["name"], part["index"],
                    step["version"], transactional_id=request["transactional_id"])
                self.checked += 1
                label = f"{where} Produce v{step['version']} {key[0]}-{key[1]}"
                if recorded["error_code"] in (0, 45):  # 45: the log's sequence check, not ours
                    if error != 0:
                        self.diffs.append(f"{label}: coordinator refused with {error}, broker accepted "
                                          f"(error {recorded['error_code']})")
                elif error != recorded["error_code"]:
                    self.diffs.append(f"{label}: expected error {recorded['error_code']}, got {error}")
                elif recorded.get("error_message") is not None and message != recorded["error_message"]:
                    self.diffs.append(f"{label}: expected message {recorded['error_message']!r}, "
                                      f"got {message!r}")

    def check_fetch_markers(self, step: dict[str, Any], where: str) -> None:
        """The control batches of a complete fetch from offset 0 are exactly the markers we wrote."""
        request = step["request"]
        offsets = {(t.get("topic"), p["partition"]): p["fetch_offset"]
                   for t in request["topics"] for p in t["partitions"]}
        for topic in step["response"]["responses"]:
            name = topic.get("topic")
            if not name:
                self.skipped.append(f"{where} Fetch v{step['version']} by topic id: "
                                    "markers compared by name only")
                continue
            for part in topic["partitions"]:
                if offsets.get((name, part["partition_index"])) != 0 or \
                        part["last_stable_offset"] != part["high_watermark"]:
                    continue
                recorded = [[b["producer_id"], b["producer_epoch"], b["records"][0]["control_type"],
                             b["records"][0]["coordinator_epoch"]]
                            for b in part["records"] or [] if b["attributes"]["control"]]
                log = self.state.partition_log(name.replace("$RUN", self.run), part["partition_index"])
                actual = [] if log is None else log.markers
                self.checked += 1
                self.compare(recorded, [list(m) for m in actual],
                             f"{where} Fetch markers {name}-{part['partition_index']}")

    def run_action(self, step: dict[str, Any], where: str) -> None:
        action = step["action"]
        if action == "wait_for_markers":
            if self.last_tid is not None:
                described = self.state.txn.describe(self.last_tid)
                self.checked += 1
                state = None if described is None else described["state"]
                if state != step["final_state"]:
                    self.diffs.append(f"{where} wait_for_markers: state {state}, "
                                      f"recorded {step['final_state']}")
        elif action == "sleep":
            self.state.advance(int(step["seconds"] * 1000))
        elif action == "fast_forward":
            self.fast_forward(step["reached_epoch"], where)
        else:
            self.skipped.append(f"{where} action {action}: not replayed")

    def fast_forward(self, target_epoch: int, where: str) -> None:
        """The unrecorded KIP-360 bumps: InitProducerId(pid, epoch) until the epoch is ``target_epoch``."""
        assert self.last_tid is not None
        md = self.state.txn.metadata(self.last_tid)
        assert md is not None
        while md.producer_epoch < target_epoch:
            error, _pid, epoch = self.state.txn.init_producer_id(self.last_tid, md.timeout_ms, md.producer_id,
                                                                md.producer_epoch)
            if error or epoch != md.producer_epoch:
                self.diffs.append(f"{where} fast_forward: bump answered error {error} epoch {epoch}")
                return


@pytest.mark.parametrize("file_name", FILES + REPO_TXN_FILES)
def test_handler_level_replay(file_name: str) -> None:
    replay = HandlerReplay(file_name)
    replay.run_file(load(file_name, RECORDINGS if file_name in FILES else READ_PATH_RECORDINGS))
    assert replay.checked > 0
    assert not replay.diffs, "\n".join(replay.diffs)


def test_replay_detects_a_wrong_answer() -> None:
    """The harness itself: a recording with a tampered answer must produce a difference."""
    data = copy.deepcopy(load("tv2_commit_flow"))
    for step in data["steps"]:
        if step.get("api") == "EndTxn":
            step["response"]["producer_epoch"] += 1
            break
    replay = HandlerReplay("tampered")
    replay.run_file(data)
    assert any("EndTxn" in d and "producer_epoch" in d for d in replay.diffs)


# ============================================================================ wire level
def _text(data: bytes | None) -> str | None:
    return None if data is None else bytes(data).decode("utf-8", "replace")


def decode_fetched(data: bytes | None) -> list[dict[str, Any]]:
    """Fetched batches in the recordings' decoded form (the fields this replay compares)."""
    out = []
    for batch in decode_batches(data):
        entry: dict[str, Any] = {
            "base_offset": batch.base_offset, "last_offset_delta": batch.last_offset_delta,
            "partition_leader_epoch": batch.leader_epoch, "magic": batch.magic,
            "attributes": {"compression": batch.compression_type, "transactional": batch.is_transactional,
                           "control": batch.is_control_batch},
            "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
            "base_sequence": batch.base_sequence, "record_count": batch.records_count,
        }
        records = []
        for record in batch:
            if batch.is_control_batch:
                _key_version, kind = struct.unpack(">hh", bytes(record.key)[:4])
                _value_version, coordinator_epoch = struct.unpack(">hi", bytes(record.value)[:6])
                records.append({"offset": record.offset, "control_type": "COMMIT" if kind == 1 else "ABORT",
                                "coordinator_epoch": coordinator_epoch})
            else:
                records.append({"offset": record.offset, "key": _text(record.key),
                                "value": _text(record.value), "headers": [list(h) for h in record.headers]})
        entry["records"] = records[:3]
        if batch.is_control_batch:
            entry["size_in_bytes"] = batch.size_in_bytes
        out.append(entry)
    return out


def project_batch(recorded: dict[str, Any]) -> dict[str, Any]:
    """The recorded batch reduced to what :func:`decode_fetched` gives."""
    keep = ("base_offset", "last_offset_delta", "partition_leader_epoch", "magic", "producer_id",
            "producer_epoch", "base_sequence", "record_count", "records")
    out = {k: recorded[k] for k in keep}
    attrs = recorded["attributes"]
    out["attributes"] = {"compression": attrs["compression"], "transactional": attrs["transactional"],
                         "control": attrs["control"]}
    out["records"] = [
        {k: r[k] for k in (("offset", "control_type", "coordinator_epoch") if attrs["control"]
                           else ("offset", "key", "value", "headers"))} for r in recorded["records"]]
    if attrs["control"]:
        out["size_in_bytes"] = recorded["size_in_bytes"]
    return out


class WireReplay(HandlerReplay):
    """Replays every step over TCP against a one-broker MockCluster (see the module docstring)."""

    def __init__(self, file_name: str, cluster: Any) -> None:
        super().__init__(file_name)
        self.cluster = cluster
        host, port = cluster.broker_address(1)
        self.port = port
        self.client = WireClient(host, port, client_id=f"conformance-{self.run}", timeout=10.0)
        self.setup_diffs: list[str] = []
        self._batches: dict[str, bytes] = {}
        # the mock's clock, ahead of the wall clock by what polled steps waited (ask_while_waiting)
        self.clock_ms = 0
        cluster.state.now_ms = lambda: int(time.time() * 1000) + self.clock_ms

    def close(self) -> None:
        self.client.close()

    def run_steps(self, label: str, steps: list[dict[str, Any]]) -> None:
        i = 0
        while i < len(steps):
            step = steps[i]
            where = f"{self.file_name} {label} step {step.get('step')}".replace("  ", " ")
            if "action" in step:
                self.run_wire_action(step, where)
                i += 1
                continue
            if step.get("waited_ms", 0) >= 500:
                self.judge(step, self.ask_while_waiting(step), [], where)
                i += 1
                continue
            match = re.search(r"\[pipelined 1/(\d+)", str(step.get("note", "")))
            group = steps[i:i + int(match.group(1))] if match else [step]
            ids = [self.client.send_nowait(self.request_for(s)) for s in group]
            actuals = [self.client.receive(cid) for cid in ids]
            consumed = 0
            for k, (s, actual) in enumerate(zip(group, actuals, strict=True)):
                w = f"{self.file_name} {label} step {s.get('step')}".replace("  ", " ")
                consumed = self.judge(s, self.response_dict(s, actual), steps[i + k + 1:], w)
            i += len(group) + consumed

    def ask_while_waiting(self, step: dict[str, Any]) -> dict[str, Any]:
        """A polled step the broker answered ``waited_ms`` later: ask the same every half second of the mock's
        clock (as the recorder asked, keeping the member's session alive) until the recorded answer comes or
        that much time (and 2 s more) has passed; the last answer is the one to judge."""
        state = self.cluster.state
        for _ in range(int(step["waited_ms"]) // 500 + 4):
            actual = self.response_dict(step, self.client.send(self.request_for(step)))
            kept, self.diffs = self.diffs, []
            self.compare(step["response"], actual, "waiting")
            done, self.diffs = not self.diffs, kept
            if done:
                break
            self.clock_ms += 500
            with state.lock:
                state.groups.tick(state.now_ms())
        return actual

    def request_for(self, step: dict[str, Any]) -> Any:
        api = step["api"]
        data = self.subst(step["request"])
        if api in ("InitProducerId", "EndTxn", "AddPartitionsToTxn"):
            tid = data.get("transactional_id") or data.get("v3_and_below_transactional_id")
            if tid:
                self.last_tid = tid
        if api == "Produce":
            for topic in data["topic_data"]:
                for part in topic["partition_data"]:
                    part["records"] = b"".join(self.batch_bytes(b) for b in part["records"])
        cls = TXN_REQUESTS.get(api) or OTHER_REQUESTS[api]
        return build(cls, data, step["version"])

    def batch_bytes(self, batch: dict[str, Any]) -> bytes:
        """Re-encode a recorded Produce batch (the same bytes again for a byte-identical re-send)."""
        key = json.dumps(batch, sort_keys=True)
        if key not in self._batches:
            records = [(None if r["key"] is None else r["key"].encode(),
                        None if r["value"] is None else r["value"].encode()) for r in batch["records"]]
            records += [(b"k", b"v")] * (batch["record_count"] - len(records))
            self._batches[key] = build_batch(records, producer_id=batch["producer_id"],
                                             producer_epoch=batch["producer_epoch"],
                                             base_sequence=batch["base_sequence"],
                                             transactional=batch["attributes"]["transactional"])
        return self._batches[key]

    @staticmethod
    def response_dict(step: dict[str, Any], response: Any) -> dict[str, Any]:
        if step["api"] != "Fetch":
            return dict(response.to_dict())
        raw = response.to_dict(json=False)
        for topic in raw["responses"]:
            if "topic_id" in topic:
                topic["topic_id"] = str(topic["topic_id"])
            for part in topic["partitions"]:
                part["records"] = decode_fetched(part["records"])
        return dict(json.loads(json.dumps(raw, default=str)))

    def judge(self, step: dict[str, Any], actual: dict[str, Any], rest: list[dict[str, Any]],
              where: str) -> int:
        expected = step["response"]
        if step["api"] == "Fetch":
            expected = copy.deepcopy(expected)
            for topic in expected["responses"]:
                for part in topic["partitions"]:
                    part["records"] = [project_batch(b) for b in part["records"] or []]
        consumed = 0
        if self._error_codes(expected) == {CONCURRENT_TRANSACTIONS} and \
                CONCURRENT_TRANSACTIONS not in self._error_codes(actual):
            while consumed < len(rest) and is_attempt_of(rest[consumed], step):
                consumed += 1
            if consumed:
                expected = rest[consumed - 1]["response"]
                where += f" (compared with attempt {consumed + 1})"
        self.checked += 1
        if step.get("setup"):
            kept, self.diffs = self.diffs, []
            self.compare(expected, actual, f"{where} {step['api']} v{step['version']}")
            self.setup_diffs += self.diffs
            self.diffs = kept
        else:
            self.compare(expected, actual, f"{where} {step['api']} v{step['version']}")
        return consumed

    def run_wire_action(self, step: dict[str, Any], where: str) -> None:
        state = self.cluster.state
        if step["action"] == "restart_broker":
            self.cluster.stop_broker(1)
            self.cluster.start_broker(1)
            self.client.close()
            host, port = self.cluster.broker_address(1)
            self.port = port
            self.client = WireClient(host, port, client_id=f"conformance-{self.run}", timeout=10.0)
            return
        if step["action"] == "add_partitions":
            self.cluster.add_partitions(self.subst(step["topic"]), step["count"])
            return
        if step["action"] == "delete_records":
            self.cluster.delete_records(self.subst(step["topic"]), step["partition"], step["offset"])
            return
        if step["action"] == "sleep":
            # the coordinators' periodic checks, as if the recorded silence had passed
            with state.lock:
                state.txn.tick(state.now_ms() + int(step["seconds"] * 1000))
                state.groups.tick(state.now_ms() + int(step["seconds"] * 1000))
            return
        if step["action"] == "api_versions":
            advertised = {str(k): [lo, hi] for k, lo, hi in self.cluster.api_versions()}
            for key, versions in step["versions"].items():
                self.checked += 1
                if advertised.get(key) != versions:
                    self.diffs.append(f"{where} ApiVersions of {step['apis'][key]} (key {key}): expected "
                                      f"{versions}, the mock advertises {advertised.get(key)}")
            return
        if step["action"] == "fast_forward":
            with state.lock:
                self.state = state  # the coordinator under test is the cluster's
                self.fast_forward(step["reached_epoch"], where)
            return
        if step["action"] == "wait_for_markers" and self.last_tid is not None:
            described = self.cluster.describe_transaction(self.last_tid)
            self.checked += 1
            got = None if described is None else described["state"]
            if got != step["final_state"]:
                self.diffs.append(f"{where} wait_for_markers: state {got}, recorded {step['final_state']}")


@pytest.mark.parametrize("file_name", FILES + REPO_TXN_FILES)
def test_wire_level_replay(file_name: str) -> None:
    with MockCluster(num_brokers=1, transaction_version=2) as cluster:
        replay = WireReplay(file_name, cluster)
        try:
            replay.run_file(load(file_name, RECORDINGS if file_name in FILES else READ_PATH_RECORDINGS))
        finally:
            replay.close()
    assert replay.checked > 0
    assert not replay.diffs, "\n".join([*replay.diffs, "(setup steps:)", *replay.setup_diffs])


@pytest.mark.parametrize("file_name", READ_PATH_FILES)
def test_wire_level_replay_of_the_read_path(file_name: str) -> None:
    """The read path's recordings (ListOffsets, OffsetForLeaderEpoch, fetch sessions, classic groups)."""
    with MockCluster(num_brokers=1, transaction_version=2) as cluster:
        replay = WireReplay(file_name, cluster)
        try:
            replay.run_file(load(file_name, READ_PATH_RECORDINGS))
        finally:
            replay.close()
    assert replay.checked > 0
    assert not replay.diffs, "\n".join([*replay.diffs, "(setup steps:)", *replay.setup_diffs])


def consumer_group_cluster() -> MockCluster:
    """A one-broker MockCluster with the group settings of the node the KIP-848 recording was made on."""
    return MockCluster(num_brokers=1, transaction_version=2, consumer_group_config=CONSUMER_GROUP_CONFIG)


def test_wire_level_replay_of_the_consumer_group_protocol() -> None:
    """KIP-848 (tests/conformance/kafka-4.1.0/consumer_group.json): ConsumerGroupHeartbeat and
    ConsumerGroupDescribe, offsets with member epochs, the online migration: every answer as Kafka 4.1.0's."""
    with consumer_group_cluster() as cluster:
        replay = WireReplay(CONSUMER_GROUP_FILE, cluster)
        try:
            replay.run_file(load(CONSUMER_GROUP_FILE, READ_PATH_RECORDINGS))
        finally:
            replay.close()
    assert replay.checked > 100
    assert not replay.diffs, "\n".join([*replay.diffs, "(setup steps:)", *replay.setup_diffs])


def test_consumer_group_replay_detects_a_wrong_answer() -> None:
    """The KIP-848 replay compares what matters: a tampered member epoch, assignment or error must show."""
    data = copy.deepcopy(load(CONSUMER_GROUP_FILE, READ_PATH_RECORDINGS))
    beats = [s for s in data["steps"] if s.get("api") == "ConsumerGroupHeartbeat"]
    revoking = next(s for s in beats if "must give up" in s["note"])
    revoking["response"]["assignment"]["topic_partitions"][0]["partitions"] = [0, 1, 2]
    fenced = next(s for s in beats if s["response"]["error_code"] == 110)
    fenced["response"]["error_code"] = 25
    joined = next(s for s in beats if "member b joins" in s["note"])
    joined["response"]["member_epoch"] += 1
    with consumer_group_cluster() as cluster:
        replay = WireReplay("tampered", cluster)
        try:
            replay.run_file(data)
        finally:
            replay.close()
    where = {int(d.split(" step ")[1].split(" ")[0]) for d in replay.diffs}
    assert {revoking["step"], fenced["step"], joined["step"]} <= where, "\n".join(replay.diffs)


def test_wire_replay_detects_a_wrong_marker_epoch() -> None:
    """The wire harness compares fetched control batches: a tampered marker epoch must show up."""
    data = copy.deepcopy(load("tv2_commit_flow"))
    fetch = next(s for s in data["steps"] if s.get("api") == "Fetch")
    control = next(b for b in fetch["response"]["responses"][0]["partitions"][0]["records"]
                   if b["attributes"]["control"])
    control["producer_epoch"] += 5
    with MockCluster(num_brokers=1, transaction_version=2) as cluster:
        replay = WireReplay("tampered", cluster)
        try:
            replay.run_file(data)
        finally:
            replay.close()
    assert any("Fetch" in d and "producer_epoch" in d for d in replay.diffs)
