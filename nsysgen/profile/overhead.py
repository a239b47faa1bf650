"""What a recorded rank pays outside the capture window, estimated before the job runs.

nsys injects its CUDA interception when the program starts, not when the window opens, so a
rank traced with CUDA runs slower for the whole job, in proportion to how many kernels it
launches. In a synchronous job (collectives every step) every rank waits for the slowest in each
collective, so one recorded rank slows all of them. Measured on an H200 with nsys 2025.3.1
(bench/gpu/RESULTS.md, issues 6 and 20).
"""

from __future__ import annotations

from nsysgen.profile.plan_types import SlowdownEstimate

# Seconds nsys adds to each kernel launch before the window opens: +12.7 % on a loop of 2,021
# launches per 30.72 ms step (65,800 launches/s; issue 6, median of 3 runs each). Issue 20's
# ablation did not resolve it better: identical runs spread by +-15 % on the shared machine.
SECONDS_PER_LAUNCH = 1.93e-6
# The goal for the cost outside the window (the project's compass), and the lint's threshold.
THRESHOLD_PERCENT = 2.0


def estimate_slowdown(
    *, kernels_per_second: float, traces_cuda: bool, recorded: int, world_size: int
) -> SlowdownEstimate:
    """The slowdown outside the window of `recorded` of `world_size` ranks under nsys (a
    whole-node report records every rank of its node).

    A multi-rank job is taken to be synchronous (data-parallel training all-reduces every
    step), so the job runs at its slowest rank's pace.
    """
    if not traces_cuda or recorded == 0:
        why = "no CUDA tracing" if recorded else "no task records"
        return SlowdownEstimate(0.0, 0.0, "nobody", f"{why}: nsys intercepts no launches", ())
    rank = kernels_per_second * SECONDS_PER_LAUNCH * 100
    # The job runs at its slowest rank's pace: a single task is the job, and in a synchronous
    # job the others wait for the recorded one in each collective.
    if world_size == 1:
        paid_by = "the one rank, which is the whole job"
    elif recorded < world_size:
        paid_by = (
            f"the {recorded} recorded rank(s), and through every collective the other "
            f"{world_size - recorded} too"
        )
    else:
        paid_by = f"all {world_size} ranks (all recorded)"
    basis = (
        f"{kernels_per_second:g} kernels/s (workload.estimate.kernels_per_second) x "
        f"{SECONDS_PER_LAUNCH * 1e6:.2f} us that nsys adds to each launch before the window "
        "(H200, nsys 2025.3.1, bench/gpu/RESULTS.md)"
    )
    remedies = (
        "record fewer ranks (capture.ranks), or none in runs that are timed",
        "start the window early (capture.first_step) and end the job soon after it: the "
        "cost lasts as long as the process runs under nsys",
        "capture the step in a CUDA graph: one launch instead of thousands (4.7x faster "
        "steps measured; nsys still added about 9 % to the graph replay)",
        # Issue 20's third device call, 4 runs: node-level graph tracing removed the cost
        # before the window but not after it, so it is offered, not generated.
        "with a CUDA graph, capture.extra_args=['--cuda-graph-trace=node'] removed the cost "
        "before the window (-1.8 %, window exact) but not after it (+9 %), and slows the "
        "window itself (+39 %) with a 13x larger report",
    )
    return SlowdownEstimate(round(rank, 2), round(rank, 2), paid_by, basis, remedies)
