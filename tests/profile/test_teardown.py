"""Teardown (teardown.py): the seconds nsys needs to write a report, at least Slurm's 60 s
--signal slack; an early SIGTERM unless a window ends with room before the limit, never more
than half the limit; and NSG013 where a planned end leaves no room to write."""

from __future__ import annotations

from nsysgen.model import Config
from nsysgen.profile.plan import window_start
from nsysgen.profile.plan_types import SignalTooEarly, Teardown
from nsysgen.profile.teardown import no_room_to_write, sbatch_options, teardown, write_time
from tests.profile.configs import config, planned


def torn(config: Config, size: float, end: float | None, limit: int) -> Teardown:
    """The teardown as the plan asks for it: the window's opening from the config."""
    return teardown(config, size, (window_start(config), end), limit)


def test_writing_takes_a_fixed_part_and_a_rate_but_at_least_the_signal_slack() -> None:
    assert write_time(0) == 60
    assert write_time(250e6) == 70  # 20 s + 250 MB at 5 MB/s
    assert write_time(1e9) == 220


def test_the_early_signal_leaves_room_to_write() -> None:
    window = config("workload=fsdp")  # 30 s to 90 s
    assert torn(window, 0, 90.0, 3600) == Teardown(60, None)
    assert torn(window, 0, 3560.0, 3600) == Teardown(60, "TERM@60")  # no room after it
    assert torn(window, 0, None, 3600) == Teardown(60, "TERM@60")  # ends with the program
    # Steps end when the program gets there: always the signal.
    assert torn(config("workload=fsdp", "capture=steps"), 1e9, 30.0, 3600) == Teardown(
        220, "TERM@220"
    )
    # A short job gets its signal at half the limit at the latest.
    assert torn(window, 1e9, None, 300) == Teardown(220, "TERM@150")


def test_where_the_early_signal_may_come_before_the_capture_opens() -> None:
    """Slurm sends --signal up to 60 s early: the earliest moment is limit - signal - 60."""
    window = config("workload=fsdp")  # opens 30 s after launch
    assert torn(window, 0, None, 120) == Teardown(60, "TERM@60", SignalTooEarly(0, 30, 4))
    assert torn(window, 0, None, 150) == Teardown(60, "TERM@60", SignalTooEarly(30, 30, 4))
    assert torn(window, 0, None, 180).too_early is None  # 60 s after the start
    assert torn(window, 0, None, 60) == Teardown(60, "TERM@30", SignalTooEarly(0, 30, 4))
    # Steps open at first_step x step_seconds (fsdp's estimate: 2 s a step).
    steps = config("workload=fsdp", "capture=steps", "capture.first_step=100")
    assert torn(steps, 0, 160.0, 300) == Teardown(60, "TERM@60", SignalTooEarly(180, 200.0, 9))
    # An NVTX range opens when the program says: not known before, so from the start.
    assert window_start(config("workload=fsdp", "capture=nvtx")) == 0.0
    # No early signal (a window that ends with room to write): nothing to say.
    assert torn(window, 0, 50.0, 120) == Teardown(60, None)


def test_sbatch_asks_for_the_plans_signal_only() -> None:
    assert sbatch_options(*planned()) == {"signal": "TERM@60"}
    assert sbatch_options(*planned("workload=fsdp")) == {}


def test_a_capture_ending_too_near_the_limit_is_named_with_its_room() -> None:
    chosen, plan = planned("capture.delay=3500", "capture.duration=60")
    assert list(no_room_to_write(chosen, plan)) == [
        (
            "capture.duration",
            "the capture ends about 59.3 min after launch and nsys needs about 60 s to write a "
            "report of ~7.3 MB, past the time limit of 60.0 min: the report may be lost at "
            "teardown (allowed: capture end <= 3540 s)",
        )
    ]
    assert list(no_room_to_write(*planned("capture.delay=3480", "capture.duration=60"))) == []
    # Open-ended, or past the limit (NSG003's): not this lint's.
    assert list(no_room_to_write(*planned())) == []
    assert list(no_room_to_write(*planned("capture.delay=3580", "capture.duration=60"))) == []
