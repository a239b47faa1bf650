"""Where a rank stood when ready for each collective (nsysgen/analyze/landmarks.py): covered
time up to a moment, the ready moment of an NCCL kernel (its host's launch or the work launched
before it, never after its start), and busy and idle time from the step's opening gate."""

from __future__ import annotations

from nsysgen.analyze.landmarks import Coverage, landmark, nccl_ready, process_coverage
from nsysgen.analyze.steps_read import COMPUTE, COPY, NCCL


def test_coverage_counts_the_time_covered_up_to_a_moment() -> None:
    cover = Coverage([(10, 20), (30, 50)])
    assert [cover.until(t) for t in (0, 10, 15, 20, 25, 30, 40, 60)] == [
        0,
        0,
        5,
        10,
        10,
        10,
        20,
        30,
    ]
    assert cover.between(15, 40) == 15 and cover.between(40, 15) == 0
    assert Coverage([]).until(100) == 0


def test_the_ready_moment_is_the_later_of_the_launch_and_the_work_launched_before() -> None:
    ops = [
        (0, 5, 100, COMPUTE, "", 2),  # a bucket's last kernel, ending at 100
        (10, 150, 200, NCCL, "nccl", 12),  # held until 150 by its stream: ready at 100
        (20, 30, 40, COPY, "", 22),
        (300, 305, 400, NCCL, "nccl", 302),  # launched late by its host: ready at 300
        (310, 90, 95, NCCL, "nccl", 312),  # started before its launch returned: at its start
    ]
    assert nccl_ready(ops) == [100, 300, 90]
    assert nccl_ready([(0, 5, 10, COMPUTE, "", 1)]) == []


def test_busy_and_idle_from_the_gate() -> None:
    compute, every = process_coverage([[(10, 20)], [(40, 60)]], [[(10, 30)], [(40, 60)]])
    # From the gate at 5 to ready at 50: compute 10 + 10, something running 20 + 10, idle 15.
    assert landmark(5, 50, compute, every) == (45, 20, 15)
    # Ready before the gate (the host issued it early): at the gate, nothing yet.
    assert landmark(5, 0, compute, every) == (0, 0, 0)
