"""Report size, estimated from a model calibrated on real reports (bench/calibration/).

Reports that trace CUDA grow with the number of kernels recorded; CPU-only reports (nvtx, osrt)
with the seconds recorded. The coefficients live in calibration.json, which
bench/calibration/fit.py writes from the measured reports, with the largest error it saw.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from nsysgen.model import Config
from nsysgen.profile import nccl_run
from nsysgen.profile.plan_types import SizeEstimate
from nsysgen.units import human_bytes as human_bytes

_CALIBRATION = Path(__file__).resolve().parent / "calibration.json"
# Seconds assumed for a capture whose length the config does not fix.
_OPEN_ENDED_SECONDS = 60.0


@cache
def calibration() -> dict[str, float]:
    data = json.loads(_CALIBRATION.read_text(encoding="utf-8"))
    return {key: float(value) for key, value in data.items()}


def captured_seconds(config: Config) -> tuple[float, str]:
    capture, workload = config.capture, config.workload
    if capture.mode == "window" and capture.duration:
        return float(capture.duration), f"{capture.duration} s window"
    if capture.mode == "window":
        rest = config.job.time_limit_min * 60 - capture.delay_s
        run = nccl_run.estimate(config)
        if run is not None and run.slow_seconds - capture.delay_s < rest:
            left = max(0.0, run.slow_seconds - capture.delay_s)
            return left, (
                f"{left:.0f} s: from the delay to nccl-tests' end at half the estimated bus "
                "bandwidth (the nccl-tests run `nsysgen plan` shows)"
            )
        return float(rest), f"up to {rest} s (delay to the job's time limit)"
    if capture.mode == "steps":
        steps = config.setup.last_step - config.setup.first_step + 1
        seconds = steps * workload.step_seconds
        return (
            seconds,
            f"{steps} steps x {workload.step_seconds} s (workload.estimate.step_seconds)",
        )
    return _OPEN_ENDED_SECONDS, f"{_OPEN_ENDED_SECONDS:.0f} s assumed for one NVTX range"


_NPROC = re.compile(r"^--nproc[_-]per[_-]node(?:=(.*))?$")


def gpus_per_report(config: Config) -> int:
    """The GPUs (and training processes) one report records: one torchrun per node is one
    nsys process tree holding every rank of the node. nsysgen starts torchrun with one process
    per GPU; a user's own command says how many in its --nproc_per_node."""
    if config.setup.per_gpu:
        return 1
    argv = tuple(getattr(config.workload.settings, "argv", ()))
    for index, arg in enumerate(argv):
        match = _NPROC.match(arg)
        value = match and (match.group(1) or (argv[index + 1] if index + 1 < len(argv) else ""))
        if value and value.isascii() and value.isdigit() and int(value) > 0:
            return int(value)
    return config.cluster.gpus_per_node


def estimate_report_size(config: Config) -> SizeEstimate:
    model = calibration()
    seconds, how_long = captured_seconds(config)
    gpus = gpus_per_report(config)
    of_gpus = f" x {gpus} GPUs of a node in one report" if gpus > 1 else ""
    error = f"largest error on the calibration reports: {model['max_abs_error_percent']:.0f} %"
    if config.setup.traces_cuda:
        kernels = seconds * config.workload.kernels_per_second * gpus
        size = model["base_cuda_bytes"] + model["bytes_per_kernel"] * kernels
        basis = (
            f"{how_long}; {kernels:,.0f} kernels at workload.estimate.kernels_per_second="
            f"{config.workload.kernels_per_second:g} (one GPU){of_gpus}; "
            f"{model['base_cuda_bytes']:,.0f} B + {model['bytes_per_kernel']:g} B per kernel "
            f"(fit to {model['reports']:.0f} real reports, {error})"
        )
    else:
        size = model["base_cpu_bytes"] + model["bytes_per_cpu_second"] * seconds * gpus
        basis = (
            f"{how_long}{of_gpus}; {model['base_cpu_bytes']:,.0f} B + "
            f"{model['bytes_per_cpu_second']:,.0f} B per second of a process's CPU tracing "
            f"({error})"
        )
    if config.capture.gpu_metrics:
        basis += f"; +{model['gpu_metrics_bytes']:,.0f} B for a report with GPU metrics"
    return SizeEstimate(round(size), basis)
