"""The pause at a capture window's edges, predicted, and the collective timeout it races.

When a capture starts (cudaProfilerStart, an NVTX range, a --delay) and when it stops while the
program runs (cudaProfilerStop with --capture-range-end=stop, --duration), nsys holds the
recorded process; in a synchronous job every other rank waits for it at the next collective.
Measured on one H200 with nsys 2025.3.1 (bench/gpu/pause31.sh, BENCHMARKS.md): 24 runs, a
launch-bound loop (400 tiny kernels a step) and a compute-bound one (8 large matmuls), windows of
0.5 to 20 s, 3 runs each:

- at the open: 137..266 ms (median 208 ms), whatever the window;
- at the close: 2.7..28.3 s, growing with what the window recorded: a straight line in the
  report's size, 3.24 s + 0.335 s per MB, fits every run within 21 % (the compute-bound loop's
  small reports are over-predicted by 3..21 %, the launch-bound ones within -16..+8 %).

A recorded rank that pauses longer than the job's collective timeout takes the job down (the
NCCL watchdog aborts it). The timeout is torch's default for NCCL process groups (10 minutes)
unless the workload's arguments set Megatron's --distributed-timeout-minutes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nsysgen.model import Config

OPEN_S = 0.27  # the largest open pause measured (median 0.21 s)
CLOSE_BASE_S = 3.24
CLOSE_S_PER_MB = 0.335
BASIS = (
    "fit to 24 runs on H200 with nsys 2025.3.1 (0.5..20 s windows, 0.09..81 MB reports; "
    "BENCHMARKS.md), largest error 21 %"
)
TORCH_DEFAULT_TIMEOUT_S = 600  # torch.distributed's default for NCCL process groups
NEAR_FRACTION = 0.5  # a close pause above half the timeout leaves too little margin
_TIMEOUT_ARG = re.compile(r"^--distributed-timeout-minutes(?:=(\d+))?$")


@dataclass(frozen=True)
class Pause:
    open_s: float | None  # None: the capture starts with the program (no pause in the run)
    close_s: float | None  # None: it ends with the program
    timeout_s: int
    timeout_source: str


def _opens_in_run(config: Config) -> bool:
    capture = config.capture
    return capture.mode != "window" or capture.delay_s > 0


def _closes_in_run(config: Config) -> bool:
    capture = config.capture
    return capture.mode != "window" or bool(capture.duration)


def collective_timeout(config: Config) -> tuple[int, str]:
    """(seconds, where it comes from): the workload's --distributed-timeout-minutes, else
    torch's default."""
    args = list(getattr(config.workload.settings, "args", ()))
    for index, arg in enumerate(args):
        match = _TIMEOUT_ARG.match(arg)
        if match:
            value = match.group(1) or (args[index + 1] if index + 1 < len(args) else "")
            if value.isdigit():
                return int(value) * 60, f"--distributed-timeout-minutes {value}"
    return TORCH_DEFAULT_TIMEOUT_S, "torch's default for NCCL process groups"


def estimate(config: Config, bytes_per_report: float, target_window: bool = False) -> Pause:
    """`target_window`: the target opens and closes the capture itself while the program runs
    (the plan's `time_boxed`, e.g. the Nsight Operator's Coordinator Mode)."""
    close = CLOSE_BASE_S + CLOSE_S_PER_MB * bytes_per_report / 1e6
    timeout, source = collective_timeout(config)
    return Pause(
        OPEN_S if target_window or _opens_in_run(config) else None,
        round(close, 1) if target_window or _closes_in_run(config) else None,
        timeout,
        source,
    )


def text(pause: Pause) -> str:
    """The plan's line."""
    edges = []
    if pause.open_s is not None:
        edges.append(f"~{pause.open_s:g} s when the window opens")
    if pause.close_s is not None:
        edges.append(f"~{pause.close_s:g} s when it closes")
    if not edges:
        return "none inside the run (the capture starts and ends with the program)"
    return (
        f"{' and '.join(edges)}, on each recorded rank (the others wait at the next "
        f"collective); collective timeout {pause.timeout_s} s ({pause.timeout_source}); "
        f"{BASIS}"
    )
