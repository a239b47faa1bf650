"""The pause at a capture window's edges, predicted, and the collective timeout it races.

When a capture starts (cudaProfilerStart, an NVTX range, a --delay) and when it stops while the
program runs (cudaProfilerStop with --capture-range-end=stop, --duration), nsys holds the
recorded process; in a synchronous job every other rank waits for it at the next collective.
Measured on one H200 with nsys 2025.3.1 (bench/gpu/pause31.sh, BENCHMARKS.md): a launch-bound
loop (400 tiny kernels a step) and a compute-bound one (8 large matmuls), windows of 0.5 to 100 s,
reports of 0.09 to 327 MB, 29 runs with the switches nsysgen generates by default:

- at the open: 137..266 ms (median 201 ms), whatever the window;
- at the close: 2.7..133 s, growing with what the window recorded: a straight line in the
  report's size, 2.79 s + 0.374 s per MB, fits every run within -13..+17 %; the window's length
  does not enter (a 20 s compute-bound window, 1.5 MB, closes in 3.4 s).

Trace options, 26 more runs (2..20 s windows): OS runtime tracing and CPU sampling each add a few
seconds to the close that do not grow with the window (osrt 2.6..6.5 s, sampling 2.7..4.1 s over
the line at the report size of the default switches, which is what the size estimate gives);
GPU metrics leave the close alone but make the open 0.7..0.9 s.

A recorded rank that pauses longer than the job's collective timeout takes the job down (the
NCCL watchdog aborts it). The timeout is torch's default for NCCL process groups (10 minutes)
unless the workload's arguments set Megatron's --distributed-timeout-minutes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nsysgen.model import Config
from nsysgen.profile.estimate import gpus_per_report
from nsysgen.profile.workloads.registry import workload_kind
from nsysgen.units import human_seconds

OPEN_S = 0.28  # the largest open pause measured without GPU metrics (median 0.20 s)
OPEN_GPU_METRICS_S = 0.87  # the largest with --gpu-metrics-devices (0.71..0.87 s)
CLOSE_BASE_S = 2.79
CLOSE_S_PER_MB = 0.374
# What a trace option adds to the close: the median, over its runs, of the measured close less
# the line at the report size the default switches recorded in the same loop and window (the
# size estimate leaves the option's own records out, so the extra carries them).
CLOSE_EXTRA_S = {"osrt": 3.6, "sampling": 3.4}
BASIS = (
    "fit to 29 runs on H200 with nsys 2025.3.1 (0.5..100 s windows, 0.09..327 MB reports; "
    "BENCHMARKS.md), largest error 17 %; 18 % with osrt or sampling (26 more runs)"
)
TORCH_DEFAULT_TIMEOUT_S = 600  # torch.distributed's default for NCCL process groups
NEAR_FRACTION = 0.5  # a close pause above half the timeout leaves too little margin
_TIMEOUT_ARG = re.compile(r"^--distributed-timeout-minutes(?:=(.*))?$")


@dataclass(frozen=True)
class Pause:
    open_s: float | None  # None: the capture starts with the program (no pause in the run)
    close_s: float | None  # None: it ends with the program
    timeout_s: int | None  # None: the job has no collective timeout (nccl-tests)
    timeout_source: str
    open_options: tuple[str, ...] = ()  # the options that lengthen the open
    close_options: tuple[str, ...] = ()  # ... and the close (CLOSE_EXTRA_S)
    gpus_per_report: int = 1  # a report of a whole node holds several processes' records


def _close_options(config: Config) -> tuple[str, ...]:
    capture = config.capture
    found = []
    if "osrt" in capture.trace:
        found.append("osrt")
    # Measured with --sample and --cpuctxsw both process-tree; either one alone, or system-wide,
    # is charged the same (a collector stopped with the window), not measured.
    if capture.sample != "none" or capture.cpuctxsw != "none":
        found.append("sampling")
    return tuple(found)


def _open_options(config: Config) -> tuple[str, ...]:
    metrics = config.capture.gpu_metrics or any(
        arg.startswith("--gpu-metrics-device") for arg in config.capture.extra_args
    )
    return ("gpu-metrics",) if metrics else ()


def _opens_in_run(config: Config) -> bool:
    capture = config.capture
    return capture.mode != "window" or capture.delay_s > 0


def _closes_in_run(config: Config) -> bool:
    capture = config.capture
    return capture.mode != "window" or bool(capture.duration)


def timeout_argument(config: Config) -> tuple[str, str] | None:
    """(config path, value) of the last --distributed-timeout-minutes in the program's arguments
    (argparse keeps the last), or None."""
    settings = config.workload.settings
    field = "argv" if hasattr(settings, "argv") else "args"
    args = list(getattr(settings, field, ()))
    found = None
    for index, arg in enumerate(args):
        match = _TIMEOUT_ARG.match(arg)
        if match:
            value = match.group(1)
            if value is None:
                value = args[index + 1] if index + 1 < len(args) else ""
            found = (f"workload.{config.workload.kind}.{field}", value)
    return found


def minutes(value: str) -> int | None:
    """The value as argparse's type=int reads it (Megatron declares the option so), if it is at
    least one minute; None otherwise."""
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number >= 1 else None


def collective_timeout(config: Config) -> tuple[int | None, str]:
    """(seconds, where it comes from): workload.collective_timeout_s, else the program's
    --distributed-timeout-minutes, else torch's default; None for nccl-tests, which wait."""
    stated = config.workload.collective_timeout_s
    if stated is not None:
        return stated, "workload.collective_timeout_s"
    argument = timeout_argument(config)
    number = minutes(argument[1]) if argument is not None else None
    if number is not None:  # an unreadable value is a semantic error
        return number * 60, f"--distributed-timeout-minutes {number}"
    if workload_kind(config).runs_nccl_tests:
        return None, "nccl-tests have none: the other ranks only wait"
    return TORCH_DEFAULT_TIMEOUT_S, "torch's default for NCCL process groups"


def estimate(config: Config, bytes_per_report: float, target_window: bool = False) -> Pause:
    """`target_window`: the target opens and closes the capture itself while the program runs
    (the plan's `time_boxed`, e.g. the Nsight Operator's Coordinator Mode)."""
    open_options, close_options = _open_options(config), _close_options(config)
    close = CLOSE_BASE_S + CLOSE_S_PER_MB * bytes_per_report / 1e6
    close += sum(CLOSE_EXTRA_S[option] for option in close_options)
    # GPU metrics run on one collector rank a node; the others wait for it at the next
    # collective, so its open is the job's.
    opened = OPEN_GPU_METRICS_S if open_options else OPEN_S
    timeout, source = collective_timeout(config)
    opens = target_window or _opens_in_run(config)
    closes = target_window or _closes_in_run(config)
    return Pause(
        opened if opens else None,
        round(close, 1) if closes else None,
        timeout,
        source,
        open_options if opens else (),
        close_options if closes else (),
        gpus_per_report(config),
    )


def with_options(options: tuple[str, ...]) -> str:
    """' (with osrt, sampling)': the options counted in an edge's pause, or ''."""
    return f" (with {', '.join(options)})" if options else ""


def text(pause: Pause) -> str:
    """The plan's line."""
    edges = []
    if pause.open_s is not None:
        opens = with_options(pause.open_options)
        edges.append(f"~{human_seconds(pause.open_s)} when the window opens{opens}")
    if pause.close_s is not None:
        edges.append(
            f"~{human_seconds(pause.close_s)} when it closes{with_options(pause.close_options)}"
        )
    if not edges:
        return "none inside the run (the capture starts and ends with the program)"
    timeout = f"{pause.timeout_s} s " if pause.timeout_s is not None else ""
    # One process was measured; whether a node's processes flush their windows in parallel is
    # not known, so a whole-node report is counted as one flush of all its bytes (the longer).
    node = (
        f"; a report of {pause.gpus_per_report} GPUs' processes counted as one flush (measured "
        "with one process)"
        if pause.gpus_per_report > 1 and pause.close_s is not None
        else ""
    )
    return (
        f"{' and '.join(edges)}, on each recorded rank (the others wait at the next "
        f"collective); collective timeout {timeout}({pause.timeout_source}); {BASIS}{node}"
    )
