"""benchmarks/rebalance_pause.py's measurement: what it reports for a membership change, from the committed
output it saw (the members themselves run in tests/broker and on the benchmark's own broker)."""

from __future__ import annotations

from typing import Any

import pytest

from tests._support.benchmark_scripts import load_benchmark


def _pause() -> Any:
    return load_benchmark("rebalance_pause.py")


def _steady(commits: Any, name: str, parts: set[int], start: float, end: float, gap_from: float | None = None,
            gap_to: float | None = None) -> None:
    """``name``'s output on ``parts`` every 100 ms over [start, end), except within [gap_from, gap_to)."""
    t = start
    while t < end:
        if gap_from is None or gap_to is None or not gap_from <= t < gap_to:
            commits.add(t, name, frozenset(parts))
        t = round(t + 0.1, 3)


def test_a_join_reports_the_kept_partitions_longest_gap_and_when_the_moved_ones_resumed() -> None:
    pause = _pause()
    commits = pause.Commits()
    p1, p2 = set(range(6)), set(range(6, 12))
    # the change at t=10: p1 keeps 0-3 (silent for 0.5 s), p2 keeps 6-9, partitions 4, 5, 10, 11 go to p3,
    # which first commits 4 and 5 at 10.8 and 10 and 11 at 11.2
    _steady(commits, "p1", {0, 1, 2, 3}, 5.0, 16.0, gap_from=10.1, gap_to=10.6)
    _steady(commits, "p1", {4, 5}, 5.0, 10.2)
    _steady(commits, "p2", {6, 7, 8, 9}, 5.0, 16.0)
    _steady(commits, "p2", {10, 11}, 5.0, 10.1)
    _steady(commits, "p3", {4, 5}, 10.8, 16.0)
    _steady(commits, "p3", {10, 11}, 11.2, 16.0)
    after = {**dict.fromkeys(p1 - {4, 5}, "p1"), **dict.fromkeys(p2 - {10, 11}, "p2"),
             **dict.fromkeys({4, 5, 10, 11}, "p3")}
    assert commits.longest_gap(6.0, 9.95) == pytest.approx(0.1)  # the steady state: a commit per 100 ms
    assert commits.longest_gap(9.5, 12.0) == pytest.approx(1.2)  # 10 and 11: from p2 (10.0) to p3 (11.2)
    result = pause.Commits.measure(commits, 10.0, 16.0, after)
    assert result["kept"] == 8 and result["moved"] == 4
    assert result["kept_pause_s"] == pytest.approx(0.6)  # 10.0 -> 10.6: the last commit before the gap
    assert result["moved_resume_s"] == pytest.approx(1.2)  # 10 and 11, the later of the two moves


def test_a_moved_partition_never_resumed_counts_the_whole_window() -> None:
    pause = _pause()
    commits = pause.Commits()
    _steady(commits, "p1", {0, 1}, 5.0, 10.0)
    _steady(commits, "p2", set(range(2, 12)), 5.0, 20.0)
    # p1 killed at 10: its partitions go to p2, whose output on them is not visible before the window ends
    after = dict.fromkeys(range(12), "p2")
    result = pause.Commits.measure(commits, 10.0, 20.0, after)
    assert result["moved"] == 2 and result["moved_resume_s"] == pytest.approx(10.0)
    assert result["kept"] == 10 and result["kept_pause_s"] == pytest.approx(0.1)


def test_the_slow_scenario_leaves_out_the_slow_members_partitions() -> None:
    pause = _pause()
    commits = pause.Commits()
    # s1 is slow: one commit every 1.5 s on 0-5; s2 steady on 6-11; s3 joins at 10 and takes 4, 5 (from
    # s1) and 10, 11 (from s2); s1 takes nothing new
    for t in (7.0, 8.5, 10.0, 11.5, 13.0):
        commits.add(t, "s1", frozenset(range(6) if t < 10.5 else range(4)))
    _steady(commits, "s2", set(range(6, 12)), 5.0, 10.3)
    _steady(commits, "s2", {6, 7, 8, 9}, 10.3, 16.0)
    _steady(commits, "s3", {10, 11}, 10.6, 16.0)
    _steady(commits, "s3", {4, 5}, 11.8, 16.0)
    after = {**dict.fromkeys(range(4), "s1"), **dict.fromkeys({6, 7, 8, 9}, "s2"),
             **dict.fromkeys({4, 5, 10, 11}, "s3")}
    result = pause.Commits.measure(commits, 10.0, 16.0, after, kept_of={"s2", "s3"})
    assert result["kept"] == 4  # s2's 6-9; s1's 0-3 are its own (slow) pace
    assert result["kept_pause_s"] == pytest.approx(0.1)
    assert result["moved_resume_s"] == pytest.approx(1.8)  # 4 and 5 had to wait for s1's batch


def test_the_verdict_applies_the_issues_criterion() -> None:
    pause = _pause()

    def run(**pauses: float) -> dict[str, Any]:
        return {c: {"kept_pause_s": pauses.get(c, 0.2), "moved_resume_s": 1.0} for c in pause.CHANGES}

    results = {"consumer": [run(join=0.2, slow_join=0.3)], "confluent": [run(join=1.2)],
               "classic-static": [run(join=0.1, slow_join=0.8)]}
    lines = pause.verdict(results)
    assert "join: consumer 0.20 <= confluent 1.20: True" in lines
    assert "join: consumer 0.20 <= classic-static 0.10: False" in lines
    assert "slow_join: consumer 0.30 <= half classic-static 0.40: True" in lines


def test_the_broker_chaos_tier_runs_the_pipeline_under_the_protocol_asked_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.chaos import broker_run

    monkeypatch.setenv("BROKER_CHAOS_SEED", "1")
    monkeypatch.delenv("BROKER_CHAOS_GROUP_PROTOCOL", raising=False)
    monkeypatch.setenv("CHAOS_GROUP_PROTOCOL", "consumer")
    settings = broker_run.BrokerChaosSettings.from_env()
    assert settings.group_protocol == "consumer"
    assert settings.cluster_settings["group.consumer.session.timeout.ms"] == "10000"
    consumer = broker_run.consumer_settings(settings.group_protocol)
    assert consumer["group_protocol"] == "consumer"
    assert "session_timeout_ms" not in consumer and "heartbeat_interval_ms" not in consumer
    monkeypatch.setenv("BROKER_CHAOS_GROUP_PROTOCOL", "classic")
    classic = broker_run.BrokerChaosSettings.from_env()
    assert classic.group_protocol == "classic" and classic.cluster_settings == {}
    assert broker_run.consumer_settings("classic") == broker_run.CONSUMER
