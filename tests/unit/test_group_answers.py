"""What each group answer does to a member, error code by error code, as the Java client's
handlers (AbstractCoordinator / ConsumerCoordinator, Kafka 4.x) decide it.

These are the rules a user's pipeline leans on: which errors rejoin at once, which retry after a
backoff, which end the member (and with which typed error), and when a member's partitions count as
lost (its generation reset) rather than revoked.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.consumer.group import (
    HeartbeatResponse,
    JoinGroupResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from kafka.protocol.metadata import FindCoordinatorResponse
from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.group import find_coordinator, offset_fetch
from txnproducer._internal.group.classic import heartbeat, join_group, sync_group
from txnproducer._internal.group.failures import Retry, RoundFailure
from txnproducer._internal.group.settings import GroupSettings
from txnproducer._internal.group.state import NO_GENERATION, Generation, GroupState, MemberState
from txnproducer._internal.protocol import error_codes as ec

SETTINGS = GroupSettings(group_id="g", group_instance_id="inst-1")
JOINED = Generation(4, "m-1", "range")


class Forget:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


def member_state(state: MemberState, generation: Generation = JOINED) -> GroupState:
    s = GroupState()
    s.state = state
    s.generation = generation
    s.rejoin_needed = False
    s.needs_join_prepare = False
    return s


def join(state: GroupState, sent: Generation, response: Any, forget: Forget | None = None) -> Any:
    with state.cond:  # the member calls it with the state lock held
        return join_group.read_response(state, SETTINGS, sent, response, forget or Forget())


def sync(state: GroupState, sent: Generation, response: Any, forget: Forget | None = None) -> Any:
    with state.cond:
        return sync_group.read_response(state, SETTINGS, sent, response, forget or Forget())


def join_answer(code: int, **fields: Any) -> Any:
    values: dict[str, Any] = {"throttle_time_ms": 0, "error_code": code, "generation_id": 5,
                              "protocol_type": "consumer", "protocol_name": "range", "leader": "m-1",
                              "skip_assignment": False, "member_id": "m-1", "members": []}
    values.update(fields)
    return JoinGroupResponse[9](**values)


# -- JoinGroup ------------------------------------------------------------------------------------


def test_join_success_enters_the_generation_and_tells_the_leader_everything() -> None:
    state = member_state(MemberState.PREPARING_REBALANCE)
    member = JoinGroupResponse.JoinGroupResponseMember(member_id="m-1", group_instance_id="inst-1",
                                                       metadata=b"sub")
    outcome = join(state, JOINED, join_answer(0, members=[member]), Forget())
    assert isinstance(outcome, join_group.Joined) and outcome.leader
    assert outcome.members == (("m-1", "inst-1", b"sub"),)
    assert state.state is MemberState.COMPLETING_REBALANCE
    assert state.generation == Generation(5, "m-1", "range")


def test_a_join_answer_for_a_member_that_left_meanwhile_is_not_applied() -> None:
    state = member_state(MemberState.UNJOINED, NO_GENERATION)
    outcome = join(state, NO_GENERATION, join_answer(0), Forget())
    assert isinstance(outcome, RoundFailure) and outcome.retry is Retry.AFTER_BACKOFF
    assert state.generation == NO_GENERATION


def test_member_id_required_rejoins_at_once_with_the_given_id() -> None:
    state = member_state(MemberState.PREPARING_REBALANCE, NO_GENERATION)
    outcome = join(state, NO_GENERATION, join_answer(ec.MEMBER_ID_REQUIRED, member_id="given"), Forget())
    assert outcome == RoundFailure(Retry.NOW, outcome.error, member_id_required=True)  # type: ignore[union-attr]
    assert state.generation == Generation(-1, "given", None) and state.rejoin_needed


def test_unknown_member_id_on_join_forgets_the_member_id_unless_the_generation_moved() -> None:
    state = member_state(MemberState.PREPARING_REBALANCE)
    outcome = join(state, JOINED, join_answer(ec.UNKNOWN_MEMBER_ID), Forget())
    assert isinstance(outcome, RoundFailure) and outcome.retry is Retry.NOW
    assert state.generation == NO_GENERATION and state.needs_join_prepare
    moved = member_state(MemberState.PREPARING_REBALANCE, Generation(6, "m-2", "range"))
    join(moved, JOINED, join_answer(ec.UNKNOWN_MEMBER_ID), Forget())
    assert moved.generation == Generation(6, "m-2", "range")


@pytest.mark.parametrize(("code", "retry", "forgets"), [
    (ec.REBALANCE_IN_PROGRESS, Retry.NOW, False),
    (ec.COORDINATOR_LOAD_IN_PROGRESS, Retry.AFTER_BACKOFF, False),
    (ec.COORDINATOR_NOT_AVAILABLE, Retry.AFTER_BACKOFF, True),
    (ec.NOT_COORDINATOR, Retry.AFTER_BACKOFF, True),
])
def test_join_errors_that_are_retried(code: int, retry: Retry, forgets: bool) -> None:
    forget = Forget()
    outcome = join(member_state(MemberState.PREPARING_REBALANCE), JOINED, join_answer(code), forget)
    assert isinstance(outcome, RoundFailure) and outcome.retry is retry
    assert forget.calls == (1 if forgets else 0)


@pytest.mark.parametrize(("code", "error_class"), [
    (ec.FENCED_INSTANCE_ID, errors.FencedInstanceIdError),
    (ec.GROUP_AUTHORIZATION_FAILED, errors.GroupAuthorizationError),
    (ec.INCONSISTENT_GROUP_PROTOCOL, errors.FatalError),
    (ec.INVALID_SESSION_TIMEOUT, errors.FatalError),
    (ec.INVALID_GROUP_ID, errors.FatalError),
    (ec.GROUP_MAX_SIZE_REACHED, errors.FatalError),
    (ec.UNSUPPORTED_VERSION, errors.FatalError),
    (ec.UNKNOWN_SERVER_ERROR, errors.FatalError),
])
def test_join_errors_that_end_the_member(code: int, error_class: type[Exception]) -> None:
    outcome = join(member_state(MemberState.PREPARING_REBALANCE), JOINED, join_answer(code), Forget())
    assert isinstance(outcome, RoundFailure) and outcome.retry is Retry.NEVER
    assert isinstance(outcome.error, error_class) and "'g'" in str(outcome.error)
    assert getattr(outcome.error, "error_code", None) == code


def test_a_join_answer_of_another_protocol_type_is_fatal() -> None:
    answer = join_answer(0, protocol_type="connect")
    outcome = join(member_state(MemberState.PREPARING_REBALANCE), JOINED, answer)
    assert isinstance(outcome, RoundFailure) and outcome.retry is Retry.NEVER
    assert "INCONSISTENT_GROUP_PROTOCOL" in str(outcome.error)


# -- SyncGroup ------------------------------------------------------------------------------------


def sync_answer(code: int, **fields: Any) -> Any:
    values: dict[str, Any] = {"throttle_time_ms": 0, "error_code": code, "protocol_type": "consumer",
                              "protocol_name": "range", "assignment": b"bytes"}
    values.update(fields)
    return SyncGroupResponse[5](**values)


def test_sync_success_makes_the_member_stable() -> None:
    state = member_state(MemberState.COMPLETING_REBALANCE)
    state.rejoin_needed = True
    assert sync(state, JOINED, sync_answer(0), Forget()) == b"bytes"
    assert state.state is MemberState.STABLE and not state.rejoin_needed


def test_a_sync_answer_after_the_generation_was_reset_rejoins() -> None:
    state = member_state(MemberState.UNJOINED, NO_GENERATION)
    outcome = sync(state, JOINED, sync_answer(0), Forget())
    assert isinstance(outcome, RoundFailure) and outcome.retry is Retry.NOW


@pytest.mark.parametrize(("code", "member_id_after"), [
    (ec.UNKNOWN_MEMBER_ID, ""),
    (ec.ILLEGAL_GENERATION, "m-1"),  # the member id is still valid: rejoining with it is faster
])
def test_sync_errors_that_reset_the_generation(code: int, member_id_after: str) -> None:
    state = member_state(MemberState.COMPLETING_REBALANCE)
    outcome = sync(state, JOINED, sync_answer(code), Forget())
    assert isinstance(outcome, RoundFailure) and outcome.retry is Retry.NOW
    assert state.generation == Generation(-1, member_id_after, None) and state.state is MemberState.UNJOINED


@pytest.mark.parametrize(("code", "retry", "error_class"), [
    (ec.REBALANCE_IN_PROGRESS, Retry.NOW, errors.BrokerError),
    (ec.NOT_COORDINATOR, Retry.AFTER_BACKOFF, errors.BrokerError),
    (ec.GROUP_AUTHORIZATION_FAILED, Retry.NEVER, errors.GroupAuthorizationError),
    (ec.FENCED_INSTANCE_ID, Retry.NEVER, errors.FencedInstanceIdError),
    (ec.UNKNOWN_SERVER_ERROR, Retry.NEVER, errors.FatalError),
])
def test_other_sync_errors(code: int, retry: Retry, error_class: type[Exception]) -> None:
    outcome = sync(member_state(MemberState.COMPLETING_REBALANCE), JOINED, sync_answer(code), Forget())
    assert isinstance(outcome, RoundFailure) and outcome.retry is retry
    assert isinstance(outcome.error, error_class)


def test_a_sync_answer_naming_another_protocol_is_fatal() -> None:
    outcome = sync(member_state(MemberState.COMPLETING_REBALANCE), JOINED, sync_answer(0, protocol_name="rr"))
    assert isinstance(outcome, RoundFailure) and outcome.retry is Retry.NEVER


# -- Heartbeat ------------------------------------------------------------------------------------


def beat(state: GroupState, code: int, sent: Generation = JOINED, forget: Forget | None = None
         ) -> heartbeat.HeartbeatVerdict:
    with state.cond:
        return heartbeat.read_response(state, SETTINGS, sent,
                                       HeartbeatResponse[4](throttle_time_ms=0, error_code=code),
                                       forget or Forget())


def test_rebalance_in_progress_asks_a_stable_member_to_rejoin_and_keeps_the_session() -> None:
    stable = member_state(MemberState.STABLE)
    assert beat(stable, ec.REBALANCE_IN_PROGRESS) is heartbeat.HeartbeatVerdict.OK
    assert stable.rejoin_needed and stable.generation == JOINED  # revoked, not lost
    completing = member_state(MemberState.COMPLETING_REBALANCE)
    assert beat(completing, ec.REBALANCE_IN_PROGRESS) is heartbeat.HeartbeatVerdict.OK
    assert not completing.rejoin_needed


@pytest.mark.parametrize(("code", "member_id_after", "fatal"), [
    (ec.UNKNOWN_MEMBER_ID, "", None),
    (ec.ILLEGAL_GENERATION, "m-1", None),
    (ec.FENCED_INSTANCE_ID, "", errors.FencedInstanceIdError),
])
def test_heartbeat_errors_that_drop_the_member(code: int, member_id_after: str, fatal: type | None) -> None:
    state = member_state(MemberState.STABLE)
    assert beat(state, code) is heartbeat.HeartbeatVerdict.FAILED
    assert state.generation == Generation(-1, member_id_after, None) and state.generation.is_lost
    assert state.rejoin_needed and state.needs_join_prepare
    assert (state.fatal is None) if fatal is None else isinstance(state.fatal, fatal)


def test_a_stale_heartbeat_error_is_ignored_when_the_generation_moved_on() -> None:
    state = member_state(MemberState.STABLE, Generation(5, "m-1", "range"))
    beat(state, ec.ILLEGAL_GENERATION, sent=JOINED)
    assert state.generation == Generation(5, "m-1", "range") and not state.rejoin_needed


def test_heartbeat_coordinator_errors_forget_the_coordinator() -> None:
    forget = Forget()
    assert beat(member_state(MemberState.STABLE), ec.NOT_COORDINATOR, forget=forget) is \
        heartbeat.HeartbeatVerdict.FAILED
    assert forget.calls == 1


@pytest.mark.parametrize("code", [ec.GROUP_AUTHORIZATION_FAILED, ec.UNKNOWN_SERVER_ERROR, 9999])
def test_other_heartbeat_errors_are_failed_heartbeats_retried_as_java_does(code: int) -> None:
    """Java's HeartbeatThread treats whatever the handler raises, but FENCED_INSTANCE_ID, as a failed
    heartbeat to retry after the backoff; the 4.x coordinator answers UNKNOWN_SERVER_ERROR for its own
    failures. These used to end the member."""
    state = member_state(MemberState.STABLE)
    forget = Forget()
    assert beat(state, code, forget=forget) is heartbeat.HeartbeatVerdict.FAILED
    assert state.fatal is None and state.generation == JOINED and not state.rejoin_needed
    assert forget.calls == 0


def test_heartbeat_timer_paces_sessions_polls_and_failures() -> None:
    timer = heartbeat.HeartbeatTimer(GroupSettings(group_id="g", session_timeout_ms=1000,
                                                   heartbeat_interval_ms=100, max_poll_interval_ms=500,
                                                   retry_backoff_ms=10, retry_backoff_max_ms=40), now=0.0)
    timer.reset_timeouts(0.0)
    assert not timer.should_heartbeat(0.05) and timer.should_heartbeat(0.1)
    timer.sent(0.1)
    assert not timer.should_heartbeat(0.15)
    timer.received(0.12)
    assert not timer.session_expired(1.1) and timer.session_expired(1.12)
    assert timer.poll_expired(0.5)
    timer.poll(0.4)
    assert not timer.poll_expired(0.8) and timer.poll_expired(0.9)
    timer.failed(1.0)
    assert timer.should_heartbeat(1.0 + 0.0121) and not timer.should_heartbeat(1.0 + 0.0079)


# -- FindCoordinator, OffsetFetch -----------------------------------------------------------------------


def find_answer(code: int) -> Any:
    entry = FindCoordinatorResponse.Coordinator(key="g", node_id=2, host="h", port=9, error_code=code,
                                                error_message=None)
    return FindCoordinatorResponse[6](throttle_time_ms=0, coordinators=[entry])


def test_find_coordinator_answers() -> None:
    assert find_coordinator.read_response("g", find_answer(0)).coordinator is not None
    refused = find_coordinator.read_response("g", find_answer(ec.GROUP_AUTHORIZATION_FAILED))
    assert isinstance(refused.fatal, errors.GroupAuthorizationError)
    busy = find_coordinator.read_response("g", find_answer(ec.COORDINATOR_NOT_AVAILABLE))
    assert busy.coordinator is None and busy.fatal is None
    assert busy.retriable_code == ec.COORDINATOR_NOT_AVAILABLE


def fetch_answer(group_code: int = 0, partitions: tuple[tuple[int, int, int], ...] = ()) -> Any:
    group_cls = OffsetFetchResponse.OffsetFetchResponseGroup
    topic_cls = group_cls.OffsetFetchResponseTopics
    part_cls = topic_cls.OffsetFetchResponsePartitions
    parts = [part_cls(partition_index=p, committed_offset=offset, committed_leader_epoch=3, metadata="m",
                      error_code=code) for p, offset, code in partitions]
    return OffsetFetchResponse[9](throttle_time_ms=0, groups=[
        group_cls(group_id="g", topics=[topic_cls(name="t", partitions=parts)], error_code=group_code)])


def test_offset_fetch_reads_committed_offsets_and_skips_partitions_without_one() -> None:
    outcome = offset_fetch.read_response("g", fetch_answer(partitions=((0, 10, 0), (1, -1, 0))), Forget())
    assert outcome.offsets == {TopicPartition("t", 0): offset_fetch.CommittedOffset(10, 3, "m")}


@pytest.mark.parametrize(("group_code", "part_code", "retries", "error_class", "forgets"), [
    (0, ec.UNSTABLE_OFFSET_COMMIT, True, None, False),
    (ec.COORDINATOR_LOAD_IN_PROGRESS, 0, True, None, False),
    (ec.NOT_COORDINATOR, 0, True, None, True),
    (ec.GROUP_AUTHORIZATION_FAILED, 0, False, errors.GroupAuthorizationError, False),
    (0, ec.TOPIC_AUTHORIZATION_FAILED, False, errors.TopicAuthorizationError, False),
    (0, ec.UNKNOWN_TOPIC_OR_PARTITION, False, errors.FatalError, False),
])
def test_offset_fetch_errors(group_code: int, part_code: int, retries: bool, error_class: type | None,
                             forgets: bool) -> None:
    forget = Forget()
    outcome = offset_fetch.read_response("g", fetch_answer(group_code, ((0, 5, part_code),)), forget)
    assert outcome.offsets is None
    assert (outcome.retry_because is not None) is retries
    assert outcome.error is None if error_class is None else isinstance(outcome.error, error_class)
    assert forget.calls == (1 if forgets else 0)
