"""The lag meter's split of a tick's lateness into the machine's and the process's share."""

from __future__ import annotations

from tests._support.loop_lag import _machine_wait_ms


def test_disjoint_waits_of_the_loop_and_a_preempted_sender_add_up() -> None:
    # a make-test tick: 127 ms late, the loop thread 25 ms on a run queue, and blocked the rest of the
    # time on the GIL of a Sender the kernel kept off a CPU for 102 ms: all of it the machine's
    machine = _machine_wait_ms(127.4, loop_cpu_ms=0.3, loop_rq_ms=25.0, other_rq_ms=102.4)
    assert abs(machine - 127.1) < 1e-9  # only the loop thread's 0.3 ms on a CPU is left


def test_the_loop_threads_own_running_time_stays_attributable() -> None:
    # 30 ms late, the loop thread ran for 20 ms of it: at most the other 10 ms can be the machine's
    machine = _machine_wait_ms(30.0, loop_cpu_ms=20.0, loop_rq_ms=4.0, other_rq_ms=8.0)
    assert machine == 10.0
    assert 30.0 - machine == 20.0


def test_a_sender_waiting_while_the_loop_was_not_blocked_excuses_no_more_than_before() -> None:
    # the rule before this one subtracted the larger wait; a tick it passed still passes
    assert _machine_wait_ms(12.0, loop_cpu_ms=12.0, loop_rq_ms=0.0, other_rq_ms=9.0) == 9.0
    assert _machine_wait_ms(12.0, loop_cpu_ms=0.0, loop_rq_ms=7.0, other_rq_ms=2.0) == 7.0 + 2.0
