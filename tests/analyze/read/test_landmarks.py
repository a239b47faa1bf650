"""Where a rank stood when ready for each collective (nsysgen/analyze/read/landmarks.py): covered
time up to a moment, the ready moment of an NCCL kernel (its host's launch or the work launched
before it, never after its start), and busy and idle time from the step's opening gate."""

from __future__ import annotations

from nsysgen.analyze.read.landmarks import Coverage, landmark, nccl_ready, process_coverage
from nsysgen.analyze.read.steps_read import COMPUTE, COPY, NCCL


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
        (0, 5, 100, COMPUTE, "", 2, 7),  # a bucket's last kernel, ending at 100
        (10, 150, 200, NCCL, "nccl", 12, 13),  # held until 150 by its stream: ready at 100
        (20, 30, 40, COPY, "", 22, 7),
        (300, 305, 400, NCCL, "nccl", 302, 13),  # launched late by its host: ready at 300
        (310, 90, 95, NCCL, "nccl", 312, 13),  # started before its launch returned: at its start
    ]
    assert nccl_ready(ops) == [100, 300, 90]
    assert nccl_ready([(0, 5, 10, COMPUTE, "", 1, 7)]) == []


# DDP's shape with a prefetch: backward on stream 7, the next batch's copy on stream 20 (long,
# launched before the all-reduce), the all-reduce on stream 13 after a wait on an event that
# stream 7 recorded once the bucket's gradients were launched.
PREFETCH = [
    (0, 5, 100, COMPUTE, "", 2, 7),  # the bucket's last backward kernel: ends at 100
    (30, 35, 400, COPY, "", 32, 20),  # the next batch's copy: ends at 400, needed by no one
    (50, 410, 450, NCCL, "nccl", 52, 13),  # held (its previous collective waited for a peer)
]
RECORD_AT, WAIT_AT = 10, 45  # cudaEventRecord on stream 7, cudaStreamWaitEvent on stream 13


def test_stream_waits_decide_what_a_kernel_waited_for() -> None:
    """With the report's stream waits the all-reduce was ready when the bucket's gradients were
    (100), not when the unrelated copy ended (400), as launch order alone would say."""
    assert nccl_ready(PREFETCH) == [400]  # launch order: every earlier piece of work
    assert nccl_ready(PREFETCH, [(WAIT_AT, 13, RECORD_AT, 7)]) == [100]
    # A record made after the copy's launch on the copy's stream: then it did wait for it.
    assert nccl_ready(PREFETCH, [(WAIT_AT, 13, 40, 20)]) == [400]
    # Waits read, none on its stream: only its own stream's work held it (none here).
    assert nccl_ready(PREFETCH, []) == [50]
    # A wait issued before the stream's previous op served that op, not this one.
    later = [*PREFETCH, (60, 460, 470, NCCL, "nccl", 62, 13)]
    assert nccl_ready(later, [(WAIT_AT, 13, 40, 20)]) == [400, 60]


def test_busy_and_idle_from_the_gate() -> None:
    compute, every = process_coverage([[(10, 20)], [(40, 60)]], [[(10, 30)], [(40, 60)]])
    # From the gate at 5 to ready at 50: compute 10 + 10, something running 20 + 10, idle 15.
    assert landmark(5, 50, compute, every) == (45, 20, 15)
    # Ready before the gate (the host issued it early): at the gate, nothing yet.
    assert landmark(5, 0, compute, every) == (0, 0, 0)
