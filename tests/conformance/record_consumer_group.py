"""Record what a real Kafka 4.1.0 answers to the KIP-848 consumer group protocol:
``tests/conformance/kafka-4.1.0/consumer_group.json``, in the format of the read path's recordings, which
``tests/mock/test_conformance.py`` replays against MockCluster.

Run by hand, not by the suite (it starts a broker of its own, and waits for session and rebalance
timeouts)::

    KAFKA_HOME=/work/kafka/kafka_2.13-4.1.0 .venv/bin/python -m tests.conformance.record_consumer_group

The node: one KRaft broker+controller (``tests/_support/kafka_home.py``) with Kafka's defaults for the
group coordinator (``group.coordinator.rebalance.protocols`` classic, consumer, streams; assignors uniform
and range; ``group.consumer.migration.policy`` bidirectional; heartbeat interval 5000 ms) except
``group.consumer.max.size`` 3 (to reach GROUP_MAX_SIZE_REACHED), ``group.consumer.session.timeout.ms``
10000 (its minimum lowered to 6000: a static member's session expires within the recording) and
``group.initial.rebalance.delay.ms`` Kafka's 3000 (a classic group's first generation).

Member ids. Since KIP-1082 (ConsumerGroupHeartbeat v1, Kafka 4.0) a member chooses its own id, a UUID
(Java's ``Uuid.toString()``: 22 URL-safe base64 characters). The recorder's members use fixed ids of that
form (:func:`member_id`), recorded as sent - not placeholders - so that the replay sends the same ids and a
server-side assignor that orders members by id (``uniform`` iterates a Java HashMap of them, ``range``
sorts them) sees the same order. Ids the broker makes up - a classic member's, a v0 join's - are
``$MEMBERn``, as in the read path's recordings.

Polls: a few answers come after the broker did something on its own - a regular expression resolved in the
background, a rebalance timeout. The recorder asks again (0.1 s apart) until the answer shows it, and
records only the last exchange, with ``"polled": true`` and ``waited_ms`` (how long it asked: the replay
asks the same while moving the mock's clock as far). Sleeps are ``sleep`` actions (the replay runs the
mock's timers that far ahead); CreatePartitions, which the mock does not answer, is an ``add_partitions``
action.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

from kafka.protocol.admin.topics import CreatePartitionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.transaction import EndTxnRequest, InitProducerIdRequest

from tests.conformance.group_recording import (
    GROUP_MAX_SIZE,
    SESSION_TIMEOUT_MS,
    ConsumerGroupBroker,
    Scenario,
    api_versions,
    assigned,
    describe,
    heartbeat,
    join,
    member_id,
    offset_commit,
    offset_fetch,
    owned,
    txn_offset_commit,
    wait_for_coordinator,
)
from tests.conformance.record_group_migration import classic_to_consumer, consumer_with_classic
from tests.conformance.record_read_path import until


def uniform_group(s: Scenario) -> None:
    """Two members share a topic of 4 partitions with the default assignor; offsets and fencing."""
    rec = s.rec
    topic = s.topic("uniform", 4)
    tid = s.tid(topic)
    group = s.name("group_uniform", f"conformance-cg-uniform-{s.run}")
    a, b = member_id("uniform-a"), member_id("uniform-b")
    s.names["member_a"], s.names["member_b"] = a, b
    rec.send(FindCoordinatorRequest[6](key_type=0, coordinator_keys=[group]), "the group's coordinator")
    rec.send(describe([group]), "ConsumerGroupDescribe of a group that does not exist yet")
    rec.send(join(group, a, [topic]), "member a joins (epoch 0, its own member id, no assignor named)")
    rec.send(
        heartbeat(group, a, 1, owned_partitions=owned(tid, [0, 1, 2, 3])),
        "a's next heartbeat: only what changed (nothing) and what it owns",
    )
    rec.send(describe([group]), "ConsumerGroupDescribe: one member, stable")
    rec.send(join(group, b, [topic]), "member b joins: a still owns every partition")
    rec.send(heartbeat(group, b, 2, owned_partitions=[]), "b again before a released anything")
    rec.send(
        heartbeat(group, a, 1, owned_partitions=owned(tid, [0, 1, 2, 3])),
        "a's heartbeat: it must give up two partitions",
    )
    rec.send(
        heartbeat(group, a, 1, owned_partitions=owned(tid, [0, 1, 2, 3])),
        "a again, still owning all four (revocation not done yet)",
    )
    rec.send(heartbeat(group, a, 1), "a with topic_partitions null (owned partitions unchanged)")
    rec.send(describe([group]), "ConsumerGroupDescribe while a revokes")
    rec.send(
        offset_commit(group, a, 1, topic, {0: 5}), "OffsetCommit v9 from a with its epoch 1 (mid-revocation)"
    )
    rec.send(
        heartbeat(group, a, 1, owned_partitions=owned(tid, [0, 1])),
        "a acknowledges: it owns only its new assignment",
    )
    rec.send(heartbeat(group, b, 2, owned_partitions=[]), "b: the released partitions are its now")
    rec.send(heartbeat(group, b, 2, owned_partitions=owned(tid, [2, 3])), "b owns them")
    rec.send(describe([group]), "ConsumerGroupDescribe: stable, two members")
    # member epochs and fencing
    rec.send(heartbeat(group, a, 3, owned_partitions=owned(tid, [0, 1])), "a with an epoch above its own")
    rec.send(
        heartbeat(group, a, 1, owned_partitions=owned(tid, [0, 1])),
        "a with its previous epoch and a subset of its partitions (a lost answer)",
    )
    rec.send(
        heartbeat(group, a, 1, owned_partitions=owned(tid, [0, 1, 2])),
        "a with its previous epoch owning partitions no longer its own",
    )
    rec.send(
        heartbeat(group, a, 0, topics=[topic], rebalance_timeout_ms=30000, owned_partitions=[]),
        "a rejoins with epoch 0 and the same member id",
    )
    rec.send(heartbeat(group, a, 2, owned_partitions=owned(tid, [0, 1])), "a with epoch 2 after that")
    rec.send(heartbeat(group, member_id("uniform-unknown"), 2, owned_partitions=[]), "an unknown member id")
    rec.send(
        heartbeat(f"conformance-cg-no-such-group-{s.run}", a, 2, owned_partitions=[]),
        "epoch 2 to a group that does not exist",
    )
    # offsets with member epochs
    rec.send(offset_commit(group, a, 2, topic, {0: 10, 1: 11}), "OffsetCommit v9 with a's member epoch")
    rec.send(offset_commit(group, a, 1, topic, {0: 12}), "OffsetCommit v9 with an older epoch")
    rec.send(offset_commit(group, a, 3, topic, {0: 12}), "OffsetCommit v9 with a newer epoch")
    rec.send(
        offset_commit(group, member_id("uniform-unknown"), 2, topic, {0: 12}),
        "OffsetCommit v9 of an unknown member",
    )
    rec.send(
        offset_commit(group, "", -1, topic, {0: 12}),
        "OffsetCommit v9 without member (admin) to a group with members",
    )
    rec.send(
        offset_commit(group, a, 2, topic, {0: 12}, version=8),
        "OffsetCommit v8 from a consumer-protocol member",
    )
    rec.send(offset_fetch(group, a, 2, topic, [0, 1]), "OffsetFetch v9 with a's member id and epoch")
    rec.send(offset_fetch(group, a, 1, topic, [0, 1]), "OffsetFetch v9 with an older epoch")
    rec.send(
        offset_fetch(group, member_id("uniform-unknown"), 2, topic, [0]),
        "OffsetFetch v9 of an unknown member",
    )
    rec.send(offset_fetch(group, None, -1, topic, [0, 1]), "OffsetFetch v9 without member (admin)")
    # KIP-447 fencing under KIP-848: TxnOffsetCommit v5 with the member epoch as generation id
    txn = s.name("transactional_id", f"conformance-cg-txn-{s.run}")
    until(
        lambda: (
            rec.client.send(FindCoordinatorRequest[6](key_type=1, coordinator_keys=[txn]))
            .coordinators[0]
            .error_code
            == 0
        ),
        "the transaction coordinator runs",
    )
    rec.send(FindCoordinatorRequest[6](key_type=1, coordinator_keys=[txn]), "the transaction coordinator")
    init = rec.poll(
        lambda: InitProducerIdRequest[5](
            transactional_id=txn, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
        ),
        lambda r: r.error_code not in (14, 15, 16),
        "InitProducerId v5 (once the coordinator loaded)",
    )
    pid, pepoch = int(init.producer_id), int(init.producer_epoch)
    rec.send(
        txn_offset_commit(txn, pid, pepoch, group, a, 2, topic, {0: 20}),
        "TxnOffsetCommit v5: a's member id, its member epoch as generation id",
    )
    rec.send(
        txn_offset_commit(txn, pid, pepoch, group, a, 1, topic, {0: 21}),
        "TxnOffsetCommit v5 with an older epoch",
    )
    rec.send(
        txn_offset_commit(txn, pid, pepoch, group, a, 3, topic, {0: 21}),
        "TxnOffsetCommit v5 with a newer epoch",
    )
    rec.send(
        txn_offset_commit(txn, pid, pepoch, group, member_id("uniform-unknown"), 2, topic, {0: 21}),
        "TxnOffsetCommit v5 of an unknown member",
    )
    rec.send(
        txn_offset_commit(txn, pid, pepoch, group, "", -1, topic, {1: 22}),
        "TxnOffsetCommit v5 without member and generation -1",
    )
    rec.send(
        offset_fetch(group, a, 2, topic, [0, 1], require_stable=True),
        "OffsetFetch v9 require_stable with a transaction's offsets pending",
    )
    rec.send(
        EndTxnRequest[5](transactional_id=txn, producer_id=pid, producer_epoch=pepoch, committed=True),
        "EndTxn v5 commit",
    )
    until(
        lambda: all(
            p.error_code == 0
            for p in rec.client.send(offset_fetch(group, None, -1, topic, [0, 1], require_stable=True))
            .groups[0]
            .topics[0]
            .partitions
        ),
        "the commit's markers reach the offsets",
    )
    rec.send(offset_fetch(group, a, 2, topic, [0, 1], require_stable=True), "OffsetFetch v9 after the commit")
    # leaving
    rec.send(heartbeat(group, b, -1), "b leaves (epoch -1)")
    rec.send(heartbeat(group, b, 2, owned_partitions=[]), "b's heartbeat after it left")
    rec.send(describe([group]), "ConsumerGroupDescribe: the group epoch moved, the target not yet computed")
    rec.send(heartbeat(group, a, 2, owned_partitions=owned(tid, [0, 1])), "a: b's partitions come to it")
    rec.send(describe([group]), "ConsumerGroupDescribe: one member again")
    rec.send(heartbeat(group, a, -1), "a leaves")
    rec.send(describe([group]), "ConsumerGroupDescribe: empty")
    rec.send(
        offset_commit(group, "", -1, topic, {0: 30}), "OffsetCommit v9 without member to the empty group"
    )


def invalid_requests(s: Scenario) -> None:
    """INVALID_REQUEST and UNSUPPORTED_ASSIGNOR: what the coordinator refuses before looking at the group."""
    rec = s.rec
    topic = s.names["uniform"].replace("$RUN", s.run)
    group = s.name("group_invalid", f"conformance-cg-invalid-{s.run}")
    m = member_id("invalid")
    rec.send(join(group, "", [topic]), "v1 join with an empty member id")
    rec.send(join("", m, [topic]), "an empty group id")
    rec.send(
        heartbeat(group, m, 0, topics=[topic], owned_partitions=[]), "a join without rebalance_timeout_ms"
    )
    rec.send(
        heartbeat(group, m, 0, topics=[topic], rebalance_timeout_ms=30000),
        "a join with topic_partitions null",
    )
    rec.send(
        heartbeat(
            group, m, 0, topics=[topic], rebalance_timeout_ms=30000, owned_partitions=owned(s.tid(topic), [0])
        ),
        "a join claiming to own a partition",
    )
    rec.send(
        heartbeat(group, m, 0, rebalance_timeout_ms=30000, owned_partitions=[]),
        "a join with neither topic names nor a regex",
    )
    rec.send(heartbeat(group, m, -3), "member epoch -3")
    rec.send(join(group, m, [topic], instance=""), "an empty instance id")
    rec.send(
        heartbeat(group, m, 0, topics=[topic], rack="", rebalance_timeout_ms=30000, owned_partitions=[]),
        "an empty rack id",
    )
    rec.send(heartbeat(group, m, -2), "epoch -2 without an instance id")
    rec.send(join(group, m, [topic], assignor="sticky"), "server_assignor 'sticky' (not one of the broker's)")
    rec.send(join(group, m, [topic], regex="(unclosed"), "a regular expression that does not compile")
    rec.send(join(group, m, [], regex=None), "a join with an empty list of topics")
    rec.send(heartbeat(group, m, -1), "it leaves")
    v0 = rec.send(
        join(group, "", [topic], version=0), "v0 join with an empty member id (the coordinator makes one)"
    )
    rec.send(heartbeat(group, v0.member_id, -1, version=0), "that member leaves (v0)")


def range_group(s: Scenario) -> None:
    """The range assignor: contiguous ranges by member id order, not sticky."""
    rec = s.rec
    topic = s.topic("range", 3)
    tid = s.tid(topic)
    group = s.name("group_range", f"conformance-cg-range-{s.run}")
    first, second = sorted([member_id("range-1"), member_id("range-2")], reverse=True)
    s.names["member_range_first"], s.names["member_range_second"] = first, second
    rec.send(
        join(group, first, [topic], assignor="range"), "the member whose id sorts last joins with 'range'"
    )
    rec.send(
        heartbeat(group, first, 1, owned_partitions=owned(tid, [0, 1, 2])), "it owns the three partitions"
    )
    rec.send(join(group, second, [topic], assignor="range"), "a member whose id sorts first joins")
    revoke = rec.send(
        heartbeat(group, first, 1, owned_partitions=owned(tid, [0, 1, 2])),
        "the first member learns what it keeps",
    )
    keeps = assigned(revoke)
    rec.send(heartbeat(group, first, 1, owned_partitions=owned(tid, keeps)), "it acknowledges")
    rec.send(heartbeat(group, second, 2, owned_partitions=[]), "the second member gets the rest")
    rec.send(describe([group]), "ConsumerGroupDescribe: assignor range")
    third = member_id("range-3")
    rec.send(
        join(group, third, [topic], assignor="uniform"), "a member asking for 'uniform' joins the range group"
    )
    rec.send(describe([group]), "ConsumerGroupDescribe: which assignor the group uses")
    for m in (third, second, first):
        rec.send(heartbeat(group, m, -1), "leave")


def regex_group(s: Scenario) -> None:
    """A subscription by regular expression (resolved by the broker, in the background)."""
    rec = s.rec
    t1 = s.topic("rx-one", 2)
    t2 = s.topic("rx-two", 1)
    group = s.name("group_regex", f"conformance-cg-regex-{s.run}")
    pattern = s.name("regex", f"conformance-cg-rx-.*-{s.run}")
    m = member_id("regex")
    rec.send(join(group, m, None, regex=pattern), "a member subscribes with a regular expression")
    answer = rec.poll(
        lambda: heartbeat(group, m, 1, owned_partitions=[]),
        lambda r: r.member_epoch > 1,
        "its next heartbeat after the broker resolved the expression",
    )
    parts = {s.tid(t1): [], s.tid(t2): []}  # type: dict[uuid.UUID, list[int]]
    for t in answer.assignment.topic_partitions:
        parts[t.topic_id] = sorted(t.partitions)
    rec.send(
        heartbeat(
            group,
            m,
            answer.member_epoch,
            owned_partitions=[p for t, ps in parts.items() for p in owned(t, ps)],
        ),
        "it owns them",
    )
    rec.send(describe([group]), "ConsumerGroupDescribe: the member's regex and its assignment")
    epoch = int(answer.member_epoch)
    holding = [p for t, ps in parts.items() for p in owned(t, ps)]
    t3 = s.topic("rx-three", 1)
    rec.send(
        heartbeat(group, m, epoch, owned_partitions=holding),
        "a new topic matches: not within 10 s of the last resolution",
    )
    grown = rec.poll(
        lambda: heartbeat(group, m, epoch, owned_partitions=holding),
        lambda r: r.member_epoch > epoch,
        "the new topic is matched - the broker re-resolves a group's expressions no sooner than 10 s "
        "after the "
        "last time -: a new epoch, its partition assigned",
    )
    holding += owned(s.tid(t3), [0])
    create = CreatePartitionsRequest[3](
        topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=t2, count=3, assignments=None)],
        timeout_ms=30_000,
        validate_only=False,
    )
    s.rec.action(
        "add_partitions",
        "CreatePartitions v3: the second topic grows to 3 partitions (the mock has no "
        "CreatePartitions handler: the replay grows it through MockCluster.add_partitions)",
        topic=t2.replace(s.run, "$RUN"),
        count=3,
        response=rec.client.send(create).to_dict(),
    )
    epoch = int(grown.member_epoch)
    grown = rec.poll(
        lambda: heartbeat(group, m, epoch, owned_partitions=holding),
        lambda r: r.member_epoch > epoch,
        "the grown topic's new partitions: a new epoch",
    )
    rec.send(
        heartbeat(group, m, grown.member_epoch, topics=[t2], regex="", owned_partitions=holding),
        "it switches to a topic list (regex '' clears the expression)",
    )
    rec.send(heartbeat(group, m, -1), "leave")


def static_group(s: Scenario) -> None:
    """A static member (instance id): leaving for a while with -2, coming back, UNRELEASED_INSTANCE_ID."""
    rec = s.rec
    topic = s.topic("static", 2)
    tid = s.tid(topic)
    group = s.name("group_static", f"conformance-cg-static-{s.run}")
    instance = s.name("instance", f"conformance-instance-{s.run}")
    first, second, third = member_id("static-1"), member_id("static-2"), member_id("static-3")
    rec.send(join(group, first, [topic], instance=instance), "a static member joins")
    rec.send(heartbeat(group, first, 1, owned_partitions=owned(tid, [0, 1])), "it owns both partitions")
    rec.send(
        join(group, second, [topic], instance=instance),
        "another member id with the same instance id while the first is there",
    )
    rec.send(
        heartbeat(group, second, 1, instance=instance, owned_partitions=[]),
        "a heartbeat of another member id with the instance id",
    )
    rec.send(
        heartbeat(group, first, -2, instance=instance), "the static member leaves for a while (epoch -2)"
    )
    rec.send(describe([group]), "ConsumerGroupDescribe: the member at epoch -2")
    rec.send(
        heartbeat(group, first, 1, instance=instance, owned_partitions=owned(tid, [0, 1])),
        "the old member id after leaving with -2",
    )
    rec.send(join(group, second, [topic], instance=instance), "the instance comes back with a new member id")
    rec.send(
        heartbeat(group, second, 1, instance=instance, owned_partitions=owned(tid, [0, 1])), "it owns them"
    )
    rec.send(describe([group]), "ConsumerGroupDescribe after the return")
    rec.send(heartbeat(group, first, -1, instance=instance), "the old member id leaves with -1")
    rec.send(heartbeat(group, second, -2, instance=instance), "the instance leaves with -2 again")
    rec.sleep(SESSION_TIMEOUT_MS / 1000 + 3, "its session times out (no heartbeat)")
    rec.send(describe([group]), "ConsumerGroupDescribe after the session timeout")
    rec.send(
        join(group, third, [topic], instance=instance), "the instance joins again after its session expired"
    )
    rec.send(heartbeat(group, third, -1, instance=instance), "it leaves with -1")
    rec.send(describe([group]), "ConsumerGroupDescribe after it left for good")


def max_size(s: Scenario) -> None:
    rec = s.rec
    topic = s.names["uniform"].replace("$RUN", s.run)
    group = s.name("group_full", f"conformance-cg-full-{s.run}")
    members = [member_id(f"full-{i}") for i in range(GROUP_MAX_SIZE + 1)]
    for i, m in enumerate(members):
        rec.send(join(group, m, [topic]), f"member {i + 1} joins (group.consumer.max.size {GROUP_MAX_SIZE})")
    for m in members[:GROUP_MAX_SIZE]:
        rec.send(heartbeat(group, m, -1), "leave")


def rebalance_timeout(s: Scenario) -> None:
    """A member that never acknowledges a revocation is fenced after its rebalance timeout."""
    rec = s.rec
    topic = s.topic("slow", 2)
    tid = s.tid(topic)
    group = s.name("group_slow", f"conformance-cg-slow-{s.run}")
    slow, fast = member_id("slow"), member_id("fast")
    rec.send(join(group, slow, [topic], rebalance_timeout_ms=2000), "a member with a 2 s rebalance timeout")
    rec.send(heartbeat(group, slow, 1, owned_partitions=owned(tid, [0, 1])), "it owns both")
    rec.send(join(group, fast, [topic]), "another member joins")
    rec.send(
        heartbeat(group, slow, 1, owned_partitions=owned(tid, [0, 1])), "the slow one is asked to revoke one"
    )
    rec.sleep(4, "it never acknowledges (no heartbeat for 4 s)")
    rec.poll(
        lambda: heartbeat(group, fast, 2, owned_partitions=[]),
        lambda r: len(assigned(r)) == 2,
        "the other member: the slow one was fenced, both partitions are its",
    )
    rec.send(heartbeat(group, slow, 1, owned_partitions=owned(tid, [0, 1])), "the slow member's heartbeat")
    rec.send(heartbeat(group, fast, -1), "leave")


def main() -> None:
    home = Path(os.environ.get("KAFKA_HOME", "/work/kafka/kafka_2.13-4.1.0"))
    os.environ.setdefault("KAFKA_JMX_OPTS", "-Djava.awt.headless=true")
    run = uuid.uuid4().hex[:8]
    only = os.environ.get("ONLY", "")
    with tempfile.TemporaryDirectory(prefix="txnproducer-conformance-") as tmp:
        broker = ConsumerGroupBroker(home, Path(tmp))
        broker.start()
        s = Scenario(broker, run)
        try:
            api_versions(s)
            wait_for_coordinator(s, [f"conformance-cg-uniform-{run}", f"conformance-cg-upgrade-{run}"])
            for scenario in (
                uniform_group,
                invalid_requests,
                range_group,
                regex_group,
                static_group,
                max_size,
                rebalance_timeout,
                classic_to_consumer,
                consumer_with_classic,
            ):
                if not only or scenario.__name__ in only.split(",") or scenario is uniform_group:
                    scenario(s)
            s.rec.write(
                "The KIP-848 consumer group protocol on Kafka 4.1.0: ConsumerGroupHeartbeat v1 (and a v0 "
                "join) - joining with a member id of the member's choosing, the assignment arriving over "
                "heartbeats, a second member joining (revocation acknowledged by the owned partitions, then "
                "the released partitions assigned), member epochs and fencing, leaving with -1; the uniform "
                "and range server-side assignors; a regular-expression subscription; a static member leaving "
                "with -2 and coming back, its session expiring; INVALID_REQUEST, UNSUPPORTED_ASSIGNOR, "
                "GROUP_MAX_SIZE_REACHED, UNRELEASED_INSTANCE_ID, a rebalance timeout; ConsumerGroupDescribe "
                "v1; OffsetCommit v9, OffsetFetch v9 and TxnOffsetCommit v5 with member epochs; and the "
                "online migration between the classic and the consumer protocol both ways.",
                s.names,
            )
        finally:
            s.rec.close()
            broker.stop()


if __name__ == "__main__":
    main()
