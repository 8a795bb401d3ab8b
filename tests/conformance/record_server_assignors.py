"""Record what Kafka 4.1.0's own server-side assignors compute: ``kafka-4.1.0/server_assignors.json``.

MockCluster's ``uniform`` and ``range`` assignors (``txnproducer/testing/server_assignors.py``) must choose
the partitions Kafka's group coordinator chooses, or a test of which member gets what - and the KIP-848
conformance replay - would hold only by chance. A broker exchange shows few such choices; this recording
shows hundreds: seeded random groups (1-7 members with client-made ids, 1-3 topics of 1-16 partitions,
static members for ``range``), each assigned, then changed - a member joins, one leaves, a topic grows -
and assigned again from the previous result, as the coordinator does from one target assignment to the
next. ``tests/unit/test_server_assignors.py`` checks the mock's assignors against every round.

Run by hand (it compiles ``AssignorCases.java`` and runs it on the jars of ``$KAFKA_HOME/libs``)::

    KAFKA_HOME=/work/kafka/kafka_2.13-4.1.0 .venv/bin/python -m tests.conformance.record_server_assignors

Topic ids are Kafka's form (22 URL-safe base64 characters of a UUID); member ids too.
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "kafka-4.1.0" / "server_assignors.json"
SEED = 848
ROUNDS = 4


def kafka_id(rng: random.Random) -> str:
    while True:
        text = base64.urlsafe_b64encode(uuid.UUID(int=rng.getrandbits(128)).bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def groups(rng: random.Random) -> list[dict[str, Any]]:
    """The cases: chains of rounds per assignor and subscription shape (the previous targets are filled in
    from Kafka's answers as the rounds are run)."""
    chains = []
    for assignor, shape, count in (
        ("uniform", "same", 25),
        ("range", "same", 12),
        ("range", "mixed", 20),
        ("uniform", "mixed", 12),
    ):
        for _ in range(count):
            topics = {kafka_id(rng): rng.randint(1, 16) for _ in range(rng.randint(1, 3))}
            names = list(topics)
            members = []
            for _ in range(rng.randint(1, 7)):
                subscribed = names if shape == "same" else rng.sample(names, rng.randint(1, len(names)))
                static = assignor == "range" and rng.random() < 0.3
                members.append(
                    {
                        "id": kafka_id(rng),
                        "instance": f"i-{rng.randint(0, 99)}" if static else None,
                        "topics": sorted(subscribed),
                    }
                )
            instances = [m["instance"] for m in members if m["instance"]]
            if len(instances) != len(set(instances)):
                continue
            chains.append({"assignor": assignor, "shape": shape, "topics": topics, "members": members})
    return chains


def change(rng: random.Random, chain: dict[str, Any]) -> None:
    """One change between two rounds: a member joins, one leaves, or a topic gets more partitions."""
    names = list(chain["topics"])
    what = rng.choice(["join", "leave", "grow"])
    if what == "leave" and len(chain["members"]) > 1:
        chain["members"].pop(rng.randrange(len(chain["members"])))
    elif what == "grow":
        topic = rng.choice(names)
        chain["topics"][topic] += rng.randint(1, 4)
    else:
        subscribed = names if chain["shape"] == "same" else rng.sample(names, rng.randint(1, len(names)))
        chain["members"].append({"id": kafka_id(rng), "instance": None, "topics": sorted(subscribed)})


def run_java(cases: list[dict[str, Any]], workdir: Path, classes: Path, libs: Path) -> list[dict[str, Any]]:
    source, target = workdir / "in.json", workdir / "out.json"
    source.write_text(json.dumps({"cases": cases}))
    subprocess.run(
        ["java", "-cp", f"{libs}/*:{classes}", "AssignorCases", str(source), str(target)], check=True
    )
    return list(json.loads(target.read_text()))


def main() -> None:
    libs = Path(os.environ.get("KAFKA_HOME", "/work/kafka/kafka_2.13-4.1.0")) / "libs"
    rng = random.Random(SEED)
    chains = groups(rng)
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="txnproducer-assignors-") as tmp:
        classes = Path(tmp)
        subprocess.run(
            ["javac", "-nowarn", "-cp", f"{libs}/*", "-d", str(classes), str(HERE / "AssignorCases.java")],
            check=True,
        )
        previous: list[dict[str, Any]] = [{} for _ in chains]
        for number in range(ROUNDS):
            cases = []
            for chain, last in zip(chains, previous, strict=True):
                if number:
                    change(rng, chain)
                members = [dict(m, previous=last.get(m["id"], {})) for m in chain["members"]]
                cases.append(
                    {
                        "assignor": chain["assignor"],
                        "round": number,
                        "topics": dict(chain["topics"]),
                        "members": members,
                    }
                )
            previous = run_java(cases, classes, classes, libs)
            for case, result in zip(cases, previous, strict=True):
                rounds.append(dict(case, result=result))
    OUT.write_text(
        json.dumps(
            {
                "what_this_shows": "Kafka 4.1.0's UniformAssignor and RangeAssignor "
                "(kafka-group-coordinator-4.1.0.jar) called as the group coordinator calls them, on seeded "
                "random groups and changes; "
                "'previous' is each member's target of the round before (Kafka's result).",
                "recorded_with": "tests/conformance/record_server_assignors.py + AssignorCases.java",
                "cases": rounds,
            },
            indent=None,
            separators=(",", ":"),
        )
        + "\n"
    )
    print(f"wrote {OUT} ({len(rounds)} rounds)")


if __name__ == "__main__":
    main()
