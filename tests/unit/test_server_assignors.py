"""MockCluster's server-side assignors (``txnproducer/testing/server_assignors.py``) against Kafka's own.

``tests/conformance/kafka-4.1.0/server_assignors.json`` holds what Kafka 4.1.0's UniformAssignor and
RangeAssignor computed for seeded random groups and their changes (``record_server_assignors.py``); each
round is replayed here from Kafka's previous target. ``range`` and ``uniform`` with one subscription must
choose exactly Kafka's partitions; ``uniform`` with different subscriptions - an approximation, as the
module says - must assign every partition once to a subscriber and be about as balanced as Kafka.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from txnproducer.testing.server_assignors import (
    MemberSpec,
    java_hash_order,
    java_string_hash,
    java_uuid_hash,
    range_assign,
    uniform_assign,
)

RECORDING = Path(__file__).parents[1] / "conformance/kafka-4.1.0/server_assignors.json"
CASES = json.loads(RECORDING.read_text())["cases"]


def topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def specs(case: dict[str, Any]) -> list[MemberSpec]:
    return [
        MemberSpec(
            m["id"],
            m["instance"],
            tuple(topic_id(t) for t in m["topics"]),
            {topic_id(t): frozenset(ps) for t, ps in m["previous"].items()},
        )
        for m in case["members"]
    ]


def as_kafka(assignment: dict[str, dict[uuid.UUID, frozenset[int]]]) -> dict[str, dict[str, list[int]]]:
    return {m: {str(t): sorted(ps) for t, ps in a.items() if ps} for m, a in assignment.items() if a}


def homogeneous(case: dict[str, Any]) -> bool:
    return len({frozenset(m["topics"]) for m in case["members"]}) == 1


def label(case: dict[str, Any]) -> str:
    return f"{case['assignor']}-r{case['round']}-{len(case['members'])}m-{len(case['topics'])}t"


EXACT = [c for c in CASES if c["assignor"] == "range" or homogeneous(c)]
APPROXIMATE = [c for c in CASES if c["assignor"] == "uniform" and not homogeneous(c)]


def test_the_recording_covers_both_assignors_and_changes() -> None:
    assert {c["assignor"] for c in EXACT} == {"uniform", "range"}
    assert len(EXACT) > 200 and len(APPROXIMATE) > 10
    assert any(c["round"] > 0 and any(m["previous"] for m in c["members"]) for c in EXACT)


@pytest.mark.parametrize("case", EXACT, ids=label)
def test_the_same_partitions_as_kafka(case: dict[str, Any]) -> None:
    assign = range_assign if case["assignor"] == "range" else uniform_assign
    ours = assign(specs(case), {topic_id(t): n for t, n in case["topics"].items()})
    kafka = {m: {str(topic_id(t)): ps for t, ps in a.items()} for m, a in case["result"].items() if a}
    assert as_kafka(ours) == kafka


@pytest.mark.parametrize("case", APPROXIMATE, ids=label)
def test_uniform_with_different_subscriptions_is_complete_and_balanced(case: dict[str, Any]) -> None:
    counts = {topic_id(t): n for t, n in case["topics"].items()}
    members = specs(case)
    ours = uniform_assign(members, counts)
    given = [(t, p) for a in ours.values() for t, ps in a.items() for p in ps]
    subscribed = {t for m in members for t in m.topics}
    assert sorted(given) == sorted((t, p) for t in subscribed for p in range(counts[t]))
    for member in members:
        assert set(ours[member.member_id]) <= set(member.topics)
    sizes = [sum(len(ps) for ps in ours[m.member_id].values()) for m in members]
    kafka = [sum(len(ps) for ps in case["result"].get(m.member_id, {}).values()) for m in members]
    assert max(sizes) - min(sizes) <= max(kafka) - min(kafka) + 1


def test_java_hash_codes_and_map_order() -> None:
    """Values and an iteration order printed by a JVM (String.hashCode, Kafka's Uuid.hashCode, HashMap)."""
    assert java_string_hash("kXIh35a5UkGgwKGkfShg4g") == 1847841071
    assert java_string_hash("I9TeY9DbVR2fDieI5ALtBg") == 709954705
    assert java_string_hash("é€x") == 483317
    assert java_uuid_hash(topic_id("kXIh35a5UkGgwKGkfShg4g")) == -635194664
    keys = [
        "m1",
        "m2",
        "abc",
        "zz",
        "kXIh35a5UkGgwKGkfShg4g",
        "I9TeY9DbVR2fDieI5ALtBg",
        "q",
        "w",
        "e",
        "r",
        "t",
        "y",
    ]
    ordered = [
        "zz",
        "I9TeY9DbVR2fDieI5ALtBg",
        "q",
        "r",
        "abc",
        "m1",
        "t",
        "m2",
        "e",
        "w",
        "y",
        "kXIh35a5UkGgwKGkfShg4g",
    ]
    assert java_hash_order(keys, java_string_hash) == ordered
