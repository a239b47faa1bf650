"""The `nsys profile` command line of a recorded rank, for the chosen nsys version."""

from __future__ import annotations

from nsysgen.model import Config

# SLURMD_NODENAME is the node that runs the task; HOSTNAME is the batch host for every task
# , so it must never name a report.
_PER_GPU_SUFFIX = (
    "_job%q{SLURM_JOB_ID}_rank%q{SLURM_PROCID}_node%q{SLURM_NODEID}_%q{SLURMD_NODENAME}"
)
# With one torchrun per node, SLURM_PROCID is the node index and the report holds every GPU.
_PER_NODE_SUFFIX = "_job%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}_%q{SLURMD_NODENAME}_allgpus"


def report_output(config: Config) -> str:
    """The -o value: unique per job, rank and node; nsys appends .nsys-rep."""
    if config.capture.report_name:
        return f"{config.capture.report_dir}/{config.capture.report_name}"
    suffix = _PER_GPU_SUFFIX if config.workload.launch == "per_gpu" else _PER_NODE_SUFFIX
    return f"{config.capture.report_dir}/{config.job.name}{suffix}"


def window_args(config: Config) -> list[str]:
    capture = config.capture
    if capture.mode == "window":
        args = [f"--delay={capture.delay}"] if capture.delay else []
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


def profile_args(config: Config, output: str | None = None) -> list[str]:
    """Switches common to every recorded rank (collectors come from collector_args).

    `output` replaces the Slurm report name (the EKS injector has its own placeholders).
    """
    capture = config.capture
    args = [
        f"--trace={','.join(capture.trace)}",
        f"--sample={capture.sample}",
        f"--cpuctxsw={capture.cpuctxsw}",
        *window_args(config),
    ]
    if config.nsight.cuda_event_trace and "cuda" in capture.trace:
        args.append("--cuda-event-trace=false")
    output = report_output(config) if output is None else output
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
