"""What a consumer-protocol member's ConsumerGroupHeartbeat carries (``_internal/group/kip848/
consumer_group_heartbeat.py``), as the Java client's ``HeartbeatState`` builds it, and what the member's
state machine allows (``kip848/state.py``); the committed-offset lookup naming the member (OffsetFetch v9).

A join carries every field and no owned partitions; later heartbeats carry only what changed - the
owned partitions exactly when the reconciled assignment changed, which is how a revocation is
acknowledged; after an error every field again; a leave only who leaves.
"""

from __future__ import annotations

import uuid

import pytest
from kafka.structs import TopicPartition

from txnproducer import UnsupportedVersionError
from txnproducer._internal.group import offset_fetch
from txnproducer._internal.group.kip848 import consumer_group_heartbeat as cgh
from txnproducer._internal.group.kip848.settings import ConsumerGroupSettings
from txnproducer._internal.group.kip848.state import NONE, LocalAssignment, MemberFacts, MemberState
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse

SETTINGS = ConsumerGroupSettings(group_id="g", rebalance_timeout_ms=30_000, remote_assignor="range",
                                 rack_id="r1")
TOPIC = uuid.uuid4()


def build(sent: cgh.SentFields, epoch: int, subscription: cgh.Subscription, owned: LocalAssignment,
          joining: bool = False, settings: ConsumerGroupSettings = SETTINGS,
          version: int = 1) -> dict[str, object]:
    request = cgh.build_request(version, settings, "member-1", epoch, subscription, owned, sent, joining)
    fields = {name: getattr(request, name) for name in (
        "group_id", "member_id", "member_epoch", "instance_id", "rack_id", "rebalance_timeout_ms",
        "subscribed_topic_names", "server_assignor", "topic_partitions")}
    fields["subscribed_topic_regex"] = getattr(request, "subscribed_topic_regex", None)
    return fields


def owned_of(fields: dict[str, object]) -> dict[uuid.UUID, list[int]] | None:
    partitions = fields["topic_partitions"]
    return None if partitions is None else {t.topic_id: list(t.partitions) for t in partitions}  # type: ignore[attr-defined]


def test_a_join_carries_every_field_and_later_heartbeats_only_what_changed() -> None:
    sent = cgh.SentFields()
    join = build(sent, 0, frozenset({"b", "a"}), NONE, joining=True)
    assert join == {"group_id": "g", "member_id": "member-1", "member_epoch": 0, "instance_id": None,
                    "rack_id": "r1", "rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["a", "b"],
                    "server_assignor": "range", "topic_partitions": [], "subscribed_topic_regex": None}
    beat = build(sent, 1, frozenset({"a", "b"}), NONE)
    assert (beat["rebalance_timeout_ms"], beat["subscribed_topic_names"], beat["server_assignor"],
            beat["rack_id"], beat["topic_partitions"]) == (-1, None, None, None, None)
    reconciled = LocalAssignment(0, {TOPIC: frozenset({0, 1, 2})})
    assert owned_of(build(sent, 1, frozenset({"a", "b"}), reconciled)) == {TOPIC: [0, 1, 2]}
    assert build(sent, 1, frozenset({"a", "b"}), reconciled)["topic_partitions"] is None
    # a revocation acknowledged: only the partitions kept are listed
    assert owned_of(build(sent, 1, frozenset({"a", "b"}), LocalAssignment(1, {TOPIC: frozenset({0})}))) == {
        TOPIC: [0]}
    # the same partitions in a new local epoch are a new assignment to acknowledge
    assert owned_of(build(sent, 2, frozenset({"a", "b"}), LocalAssignment(2, {TOPIC: frozenset({0})}))) == {
        TOPIC: [0]}
    assert build(sent, 2, frozenset({"a"}), LocalAssignment(2, {TOPIC: frozenset({0})}))[
        "subscribed_topic_names"] == ["a"]


def test_after_a_reset_every_field_goes_again() -> None:
    sent = cgh.SentFields()
    owned = LocalAssignment(0, {TOPIC: frozenset({3})})
    build(sent, 0, frozenset({"a"}), NONE, joining=True)
    build(sent, 1, frozenset({"a"}), owned)
    sent.reset()
    again = build(sent, 1, frozenset({"a"}), owned)
    assert (again["rebalance_timeout_ms"], again["subscribed_topic_names"], again["server_assignor"],
            owned_of(again)) == (30_000, ["a"], "range", {TOPIC: [3]})


def test_switching_between_names_and_a_pattern_clears_the_other() -> None:
    sent = cgh.SentFields()
    join = build(sent, 0, "orders-.*", NONE, joining=True)
    assert (join["subscribed_topic_regex"], join["subscribed_topic_names"]) == ("orders-.*", None)
    to_names = build(sent, 1, frozenset({"orders"}), NONE)
    assert (to_names["subscribed_topic_names"], to_names["subscribed_topic_regex"]) == (["orders"], "")
    back = build(sent, 1, "o.*", NONE)
    assert (back["subscribed_topic_regex"], back["subscribed_topic_names"]) == ("o.*", [])


def test_a_leave_says_only_who_leaves() -> None:
    static = ConsumerGroupSettings(group_id="g", group_instance_id="i-1")
    leave = build(cgh.SentFields(), -2, frozenset({"a"}), NONE, settings=static)
    assert (leave["member_epoch"], leave["instance_id"], leave["subscribed_topic_names"],
            leave["topic_partitions"], leave["rebalance_timeout_ms"]) == (-2, "i-1", None, None, -1)


def test_the_version_names_a_broker_without_the_protocol() -> None:
    assert cgh.choose_version({68: 1, 0: 12}.get, pattern=True) == 1
    assert cgh.choose_version({68: 0, 0: 11}.get, pattern=False) == 0
    with pytest.raises(UnsupportedVersionError, match=r"older than Kafka 4\.0"):
        cgh.choose_version({0: 11, 3: 12}.get, pattern=False)
    with pytest.raises(UnsupportedVersionError, match="turned off"):
        cgh.choose_version({0: 12, 3: 12}.get, pattern=False)
    with pytest.raises(UnsupportedVersionError, match="regular expression"):
        cgh.choose_version({68: 0, 0: 11}.get, pattern=True)


def answer(code: int = ec.NONE, epoch: int = 3, assignment: list[int] | None = None) -> object:
    assigned = None if assignment is None else ConsumerGroupHeartbeatResponse.Assignment(
        topic_partitions=[ConsumerGroupHeartbeatResponse.Assignment.TopicPartitions(topic_id=TOPIC,
                                                                                     partitions=assignment)])
    return ConsumerGroupHeartbeatResponse[1](
        throttle_time_ms=0, error_code=code, error_message="said so", member_id="member-1",
        member_epoch=epoch, heartbeat_interval_ms=500, assignment=assigned)


@pytest.mark.parametrize(("code", "kind"), [
    (ec.FENCED_MEMBER_EPOCH, cgh.VerdictKind.FENCED),
    (ec.UNKNOWN_MEMBER_ID, cgh.VerdictKind.FENCED),
    (ec.NOT_COORDINATOR, cgh.VerdictKind.COORDINATOR),
    (ec.COORDINATOR_NOT_AVAILABLE, cgh.VerdictKind.COORDINATOR),
    (ec.COORDINATOR_LOAD_IN_PROGRESS, cgh.VerdictKind.RETRY),
    (ec.GROUP_MAX_SIZE_REACHED, cgh.VerdictKind.FATAL),
    (ec.UNRELEASED_INSTANCE_ID, cgh.VerdictKind.FATAL),
    (ec.UNKNOWN_SERVER_ERROR, cgh.VerdictKind.FATAL),
])
def test_each_answer_code_is_a_verdict(code: int, kind: cgh.VerdictKind) -> None:
    verdict = cgh.read_response(SETTINGS, answer(code))
    assert verdict.kind is kind
    if kind is cgh.VerdictKind.FATAL:
        assert verdict.error is not None and "said so" in str(verdict.error)


def test_an_answer_carries_the_epoch_the_interval_and_the_assignment_when_it_changed() -> None:
    verdict = cgh.read_response(SETTINGS, answer(assignment=[2, 0]))
    assert (verdict.kind, verdict.epoch, verdict.interval_ms, verdict.assignment) == (
        cgh.VerdictKind.OK, 3, 500, {TOPIC: frozenset({0, 2})})
    assert cgh.read_response(SETTINGS, answer()).assignment is None


def test_the_state_machine_refuses_what_java_refuses() -> None:
    facts = MemberFacts("m")
    with facts.cond:  # (every change is made with the lock held)
        facts.to_joining()
        facts.assignment_received({TOPIC: frozenset({0})})
        assert facts.state is MemberState.RECONCILING and facts.target.local_epoch == 0
        facts.assignment_received({TOPIC: frozenset({0})})
        assert facts.target.local_epoch == 0, "the same partitions again are nothing new"
        with pytest.raises(RuntimeError, match="RECONCILING to LEAVING"):
            facts.transition(MemberState.LEAVING)
        facts.current = facts.target
        facts.transition(MemberState.ACKNOWLEDGING)
        facts.transition(MemberState.STABLE)
        facts.assignment_received({TOPIC: frozenset({0})})
        assert facts.state is MemberState.STABLE


def test_offset_fetch_names_a_consumer_protocol_member_from_v9() -> None:
    tp = [TopicPartition("t", 0)]
    v9 = offset_fetch.build_request("g", tp, {9: 9}.get, ("member-1", 4)).groups[0]
    assert (v9.member_id, v9.member_epoch) == ("member-1", 4)
    anonymous = offset_fetch.build_request("g", tp, {9: 9}.get).groups[0]
    assert (anonymous.member_id, anonymous.member_epoch) == (None, -1)
    v8 = offset_fetch.build_request("g", tp, {9: 8}.get, ("member-1", 4))
    assert v8.version == 8
    assert v8.encode() == offset_fetch.build_request("g", tp, {9: 8}.get).encode(), "no member before v9"
