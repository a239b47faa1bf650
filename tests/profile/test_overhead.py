"""The slowdown estimate outside the capture window (nsysgen/profile/overhead.py)."""

from __future__ import annotations

import pytest

from nsysgen.profile.overhead import SECONDS_PER_LAUNCH, THRESHOLD_PERCENT, estimate_slowdown


def test_launch_bound_loop_gets_the_measured_cost_back() -> None:
    # The loop the constant was measured on: 2,021 launches per 30.72 ms step, +12.7 %.
    estimate = estimate_slowdown(
        kernels_per_second=2021 / 0.03072, traces_cuda=True, recorded=1, world_size=1
    )
    assert estimate.rank_percent == pytest.approx(12.7, abs=0.1)
    assert estimate.job_percent == estimate.rank_percent
    assert "whole job" in estimate.paid_by


def test_slowdown_grows_with_the_launch_rate() -> None:
    slow = estimate_slowdown(kernels_per_second=1000, traces_cuda=True, recorded=1, world_size=8)
    fast = estimate_slowdown(kernels_per_second=20000, traces_cuda=True, recorded=1, world_size=8)
    assert slow.rank_percent < THRESHOLD_PERCENT < fast.rank_percent
    assert fast.rank_percent == pytest.approx(20000 * SECONDS_PER_LAUNCH * 100, abs=0.01)
    assert "20000 kernels/s" in fast.basis


def test_one_recorded_rank_slows_every_rank_of_a_synchronous_job() -> None:
    estimate = estimate_slowdown(
        kernels_per_second=20000, traces_cuda=True, recorded=1, world_size=16
    )
    assert estimate.job_percent == estimate.rank_percent > 0
    assert "other 15" in estimate.paid_by
    assert any("capture.ranks" in remedy for remedy in estimate.remedies)
    every = estimate_slowdown(
        kernels_per_second=20000, traces_cuda=True, recorded=16, world_size=16
    )
    assert "all 16" in every.paid_by


@pytest.mark.parametrize(("traces_cuda", "recorded"), [(False, 4), (True, 0)])
def test_nothing_to_pay_without_cuda_tracing_or_recorded_tasks(
    traces_cuda: bool, recorded: int
) -> None:
    estimate = estimate_slowdown(
        kernels_per_second=50000, traces_cuda=traces_cuda, recorded=recorded, world_size=8
    )
    assert (estimate.rank_percent, estimate.job_percent, estimate.remedies) == (0.0, 0.0, ())
    assert estimate.paid_by == "nobody"
