"""What a ConsumerGroupHeartbeat carries and is answered, and the checks Kafka makes before the group.

Kept apart from the protocol's state machine (``consumer_membership.py``): these are the request and answer
as values independent of the wire version, the one exception type the coordinator raises to answer with an
error code and Kafka's message, and Kafka 4.1's validation of a request (``GroupCoordinatorService``'s
``throwIfConsumerGroupHeartbeatRequestIsInvalid``): INVALID_REQUEST with Kafka's messages,
UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION - all decided before any group is looked at.

Regular expressions: Kafka compiles them with RE2/J; the mock with Python's ``re``. Constructs RE2/J refuses
(lookaround, backreferences, ``\\p{...}``) are refused here too, and the common mistakes are reported in
RE2/J's words; other Python error messages are passed on as they are.
"""

from __future__ import annotations

import base64
import re
import uuid

import attrs

from txnproducer._internal.protocol import error_codes as ec

__all__ = [
    "LEAVE",
    "STATIC_LEAVE",
    "GroupError",
    "HeartbeatAnswer",
    "HeartbeatRequest",
    "new_member_id",
    "regex_problem",
    "validate",
]

#: the member epoch of a member leaving for good
LEAVE = -1
#: the member epoch of a static member leaving for a while
STATIC_LEAVE = -2
_RE2_MESSAGES = (
    ("missing ), unterminated subpattern", "missing closing )"),
    ("unbalanced parenthesis", "unexpected )"),
    ("unterminated character set", "missing closing ]"),
    ("nothing to repeat", "missing argument to repetition operator"),
    ("multiple repeat", "bad repetition operator"),
)
_NOT_RE2 = re.compile(r"\(\?[=!<]|\\[1-9]|\(\?P[=>]|\\p\{")


class GroupError(Exception):
    """A request refused with an error code (and Kafka's message for it)."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or str(code))
        self.code = code
        self.message = message


@attrs.frozen
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat, independent of the wire version (None: "unchanged")."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: (topic id, partitions) the member owns; None: unchanged since its last heartbeat
    owned: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None = None
    client_id: str = ""
    client_host: str = "/127.0.0.1"
    api_version: int = 1


@attrs.frozen
class HeartbeatAnswer:
    error_code: int = ec.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: topic id -> partitions the member may use; None: unchanged (not sent)
    assignment: dict[uuid.UUID, list[int]] | None = None


def new_member_id() -> str:
    """A member id as Kafka makes them (``Uuid.randomUuid().toString()``: 22 URL-safe base64 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def validate(request: HeartbeatRequest, assignors: list[str]) -> None:
    """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``, in its order."""
    if not request.member_id and (request.api_version >= 1 or request.member_epoch != 0):
        raise GroupError(ec.INVALID_REQUEST, "MemberId can't be empty.")
    if not request.group_id:
        raise GroupError(ec.INVALID_REQUEST, "GroupId can't be empty.")
    if request.instance_id == "":
        raise GroupError(ec.INVALID_REQUEST, "InstanceId can't be empty.")
    if request.rack_id == "":
        raise GroupError(ec.INVALID_REQUEST, "RackId can't be empty.")
    if request.member_epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise GroupError(ec.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or request.owned:
            raise GroupError(ec.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise GroupError(
                ec.INVALID_REQUEST,
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            )
    elif request.member_epoch == STATIC_LEAVE:
        if request.instance_id is None:
            raise GroupError(ec.INVALID_REQUEST, "InstanceId can't be null.")
    elif request.member_epoch < STATIC_LEAVE:
        raise GroupError(ec.INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise GroupError(
            ec.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}.",
        )
    if request.subscribed_topic_regex:
        problem = regex_problem(request.subscribed_topic_regex)
        if problem is not None:
            raise GroupError(
                ec.INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex "
                f"`{request.subscribed_topic_regex}` is not a valid regular expression: {problem}.",
            )


def regex_problem(regex: str) -> str | None:
    """Why ``regex`` is not an expression RE2/J accepts (RE2/J's wording where it is known), or None."""
    if _NOT_RE2.search(regex):
        return "invalid or unsupported Perl syntax"
    try:
        re.compile(regex)
    except re.error as exc:
        text = str(exc.msg)
        for python, re2 in _RE2_MESSAGES:
            if text.startswith(python):
                return re2
        return text
    return None
