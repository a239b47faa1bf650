"""Teardown: give nsys time to write its reports before Slurm kills the job.

At the time limit (and on `scancel`) Slurm sends SIGTERM to every process of the job, then
SIGKILL after the cluster's KillWait (30 s by default). nsys 2023.4.4 stops collecting on SIGTERM
and writes the report (measured, bench/teardown/RESULTS.md), but a report that takes longer than
KillWait to write is lost. So a job whose capture may still be open at the time limit asks Slurm
for SIGTERM early (`#SBATCH --signal=TERM@SECONDS`), with room for the report's writing, and a
lint warns when a capture planned to end near the limit leaves no such room. Slurm may send
that signal up to a minute early: on a short limit, before the capture opens (the plan's
`Teardown.too_early`; the Slurm target's lint NSG026 says so).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from nsysgen.model import Config
from nsysgen.profile.plan_types import ProfilePlan, SignalTooEarly, Teardown
from nsysgen.units import human_bytes, human_seconds

# Writing a report: nsys flushes, then QdstrmImporter converts the .qdstrm. Assumed rates, on
# the safe side of what was measured (a 26 MB .qdstrm converted in 0.4 s on a CPU run): a fixed
# part plus a rate per byte of the finished report.
WRITE_BASE_S = 20.0
WRITE_BYTES_PER_S = 5e6
# Slurm sends --signal up to 60 s earlier than asked (sbatch(1)), so no point in less.
MIN_SIGNAL_S = 60


def write_time(bytes_per_report: float) -> int:
    """Seconds nsys needs to write one report of `bytes_per_report`."""
    return max(MIN_SIGNAL_S, math.ceil(WRITE_BASE_S + bytes_per_report / WRITE_BYTES_PER_S))


def write_seconds(plan: ProfilePlan) -> int:
    """Seconds nsys needs to write one report of this setup (the plan's size estimate)."""
    return plan.teardown.write_s


def _early_signal(
    config: Config, write_s: int, window_end_s: float | None, time_limit_s: int
) -> str | None:
    """Slurm's --signal value for a clean teardown: an early SIGTERM unless the capture is a
    window with a fixed end, well before the time limit."""
    end = window_end_s if config.capture.mode == "window" else None
    if end is not None and end + write_s <= time_limit_s:
        return None
    return f"TERM@{_signal_at(write_s, time_limit_s)}"


def _signal_at(write_s: int, time_limit_s: int) -> int:
    """The seconds before the limit that --signal asks for: room to write, at most half the job."""
    return min(write_s, time_limit_s // 2)


def _earliest_s(write_s: int, time_limit_s: int) -> int:
    """The earliest moment after the start that Slurm may send the early signal."""
    return time_limit_s - _signal_at(write_s, time_limit_s) - MIN_SIGNAL_S


def _too_early(opens: float, write_s: int, time_limit_s: int) -> SignalTooEarly | None:
    """Where the early signal may come before the capture opens (`opens` s after launch), and a
    limit that avoids it whatever the report's size: the signal asks for at most half the
    limit, so past 2 x (opens + 60 s) the earliest moment is after the opening."""
    earliest = _earliest_s(write_s, time_limit_s)
    if earliest > opens:
        return None
    return SignalTooEarly(max(earliest, 0), opens, math.floor(2 * (opens + MIN_SIGNAL_S) / 60) + 1)


def teardown(
    config: Config,
    bytes_per_report: float,
    window: tuple[float, float | None],
    time_limit_s: int,
) -> Teardown:
    """The plan's teardown: the time to write a report, the early signal that gives it, and
    whether that signal may come before the capture opens (`window`: when it opens and ends,
    in seconds after launch, as plan.py computes them; None: no planned end)."""
    window_start_s, window_end_s = window
    write_s = write_time(bytes_per_report)
    signal = _early_signal(config, write_s, window_end_s, time_limit_s)
    if signal is None:
        return Teardown(write_s, None)
    return Teardown(write_s, signal, _too_early(window_start_s, write_s, time_limit_s))


def sbatch_options(config: Config, plan: ProfilePlan) -> dict[str, str]:
    """#SBATCH options for a clean teardown: an early SIGTERM where the capture may be open."""
    signal = plan.teardown.early_signal
    return {"signal": signal} if signal else {}


def no_room_to_write(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    """Lint: the planned capture ends so close to the time limit that the report cannot be
    written before Slurm's SIGTERM (and SIGKILL after KillWait)."""
    end, limit = plan.window_end_s, plan.time_limit_s
    if end is None or end > limit:  # open-ended, or NSG003's (NSG016's for steps) error
        return
    need = write_seconds(plan)
    if end + need > limit:
        path = "capture.duration" if config.capture.mode == "window" else "capture.last_step"
        yield (
            path,
            f"the capture ends about {human_seconds(end)} after launch and nsys needs about "
            f"{human_seconds(need)} to write a report of ~{human_bytes(plan.size.bytes_per_report)}"
            f", past the time limit of {human_seconds(limit)}: the report may be lost at "
            f"teardown (allowed: capture end <= {limit - need} s)",
        )
