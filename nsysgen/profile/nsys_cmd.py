"""The `nsys profile` command line of a recorded rank, for the chosen nsys version."""

from __future__ import annotations

from nsysgen.model import Config
from nsysgen.profile.cuda_trace import trace_values

# Switches of capture.extra_args that start node-wide collectors.
COLLECTOR_FLAGS = ("--enable", "--gpu-metrics-device", "--gpu-metrics-devices")


def extra_collectors(config: Config) -> bool:
    """Whether capture.extra_args start collectors in every recorded task."""
    return any(a.split("=")[0] in COLLECTOR_FLAGS for a in config.capture.extra_args)


def window_args(config: Config) -> list[str]:
    capture = config.capture
    if capture.mode == "window":
        args = [f"--delay={capture.delay_s}"] if capture.delay_s else []
        if capture.duration:
            # --duration ends the program with SIGTERM unless told otherwise.
            args += [f"--duration={capture.duration}", "--kill=none"]
        return args
    if capture.mode == "steps":
        # stop (not the default stop-shutdown) keeps the job alive after the last step.
        return ["--capture-range=cudaProfilerApi", "--capture-range-end=stop"]
    target = (
        capture.nvtx_range
        if capture.nvtx_domain is None
        else (f"{capture.nvtx_range}@{capture.nvtx_domain}")
    )
    return [
        "--capture-range=nvtx",
        f"--nvtx-capture={target}",
        "--capture-range-end=stop",
        # torch.cuda.nvtx and the nvtx package use unregistered strings.
        "--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0",
    ]


def profile_args(config: Config, output: str, boxed: bool | None = None) -> list[str]:
    """Switches common to every recorded rank (collectors come from collector_args); `output`
    is the target's report name (Target.report_output); `boxed`: whether the capture starts or
    stops while the program runs (None: as capture.* says)."""
    capture = config.capture
    trace = trace_values(config, boxed)
    args = [
        f"--trace={','.join(trace)}",
        f"--sample={capture.sample}",
        f"--cpuctxsw={capture.cpuctxsw}",
        *window_args(config),
    ]
    if capture.nccl_trace:
        args.append(f"--nccl-trace={','.join(capture.nccl_trace)}")
    if capture.pytorch:
        args.append(f"--pytorch={','.join(capture.pytorch)}")
    if config.nsight.cuda_event_trace and config.setup.traces_cuda:
        args.append("--cuda-event-trace=false")
    args += ["--force-overwrite=true", f"--output={output}", *capture.extra_args]
    return args


def collector_args(config: Config) -> list[str]:
    """Node-wide collectors, for one recorded rank per node only."""
    args: list[str] = []
    if config.capture.efa_metrics:
        args += config.nsight.plugins.get("efa_metrics", ())  # absent: a semantic error
    if config.capture.gpu_metrics:
        args.append(f"{config.nsight.gpu_metrics_flag}={config.nsight.gpu_metrics_node_value}")
    return args
