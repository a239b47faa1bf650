"""What a profile will do, before the job runs: the facts `nsysgen plan` shows and lints check.

Everything here is computed from the config, with the same code the artifacts are rendered from:
the target (nsysgen/targets/) says which tasks record (a rank, or a node with one torchrun per
node, or a pod) and what their reports are named; the facts every target renders from (the
job's environment, the program, the step window, the teardown margin, the recipe runs, the nsys
command line) are derived here once and carried by the plan (nsysgen/profile/plan_types/).
"""

from __future__ import annotations

from nsysgen.model import Config
from nsysgen.profile import cuda_trace, nsys_cmd
from nsysgen.profile.analysis_job import analysis_job
from nsysgen.profile.estimate import calibration, estimate_report_size
from nsysgen.profile.facts import derive
from nsysgen.profile.overhead import estimate_slowdown
from nsysgen.profile.plan_types import (
    ProfilePlan,
    RecordedTask,
    RecordedTasks,
    Scheduler,
    expand_name,
)
from nsysgen.profile.recorded import recorded_ranks
from nsysgen.profile.teardown import teardown
from nsysgen.profile.workloads.registry import workload_kind
from nsysgen.profile.workloads.steps import step_detection

# The plan's types, where callers have always found them.
__all__ = [
    "ProfilePlan",
    "RecordedTask",
    "RecordedTasks",
    "Scheduler",
    "build_plan",
    "expand_name",
    "window_end",
    "window_start",
]


def window_start(config: Config) -> float:
    """Seconds after launch at which the capture opens, as far as the config says: a window's
    delay, a step window's first_step x workload.estimate.step_seconds; 0 for an NVTX range
    (not known before the run)."""
    if config.capture.mode == "window":
        return float(config.capture.delay_s)
    if config.capture.mode == "steps":
        return config.setup.first_step * config.workload.step_seconds
    return 0.0


def window_end(config: Config) -> float | None:
    """Seconds after launch at which the capture ends, where the config fixes it: a window's
    delay + duration, a step window's (last_step + 1) x workload.estimate.step_seconds; None
    when it ends with the program or with an NVTX range. The one place this is computed."""
    capture = config.capture
    if capture.mode == "window":
        return float(capture.delay_s + capture.duration) if capture.duration else None
    if capture.mode == "steps":
        return (config.setup.last_step + 1) * config.workload.step_seconds
    return None


def _span(start: float, end: float) -> str:
    """`20 s to 30 s`; with fast steps, to the tenth or millisecond that tells them apart
    (never "10 s to 10 s")."""
    for digits in (0, 1, 3):
        if f"{start:.{digits}f}" != f"{end:.{digits}f}":
            return f"{start:.{digits}f} s to {end:.{digits}f} s"
    return f"{start:.3f} s to {end:.3f} s"


def _window(config: Config) -> tuple[str, float | None]:
    capture, end = config.capture, window_end(config)
    if capture.mode == "window":
        if end is not None:
            return f"from {capture.delay_s} s to {end:.0f} s after launch", end
        return f"from {capture.delay_s} s after launch to the end of the program", None
    if capture.mode == "steps" and end is not None:
        first, last = config.setup.first_step, config.setup.last_step
        span, step = _span(window_start(config), end), config.workload.step_seconds
        return (
            f"training steps {first}..{last} (about {span} after the loop starts, at "
            f"workload.estimate.step_seconds={step})",
            end,
        )
    domain = f"@{capture.nvtx_domain}" if capture.nvtx_domain else ""
    return f"the first NVTX range {capture.nvtx_range}{domain}", None


def _launch(config: Config, per_node: int, unit: str) -> tuple[str, str]:
    """What one task is, in a sentence and in a few words: the only place the launch is worded."""
    gpus = config.cluster.gpus_per_node
    if config.setup.per_gpu:
        return (
            f"one task per GPU: {per_node} tasks per node, a task is a global rank",
            f"one task per GPU ({gpus} per node)",
        )
    return (
        f"one torchrun per node: 1 {unit} per node driving {gpus} GPUs; a report covers the "
        "whole node",
        "one torchrun per node driving every GPU of the node",
    )


def build_plan(config: Config, target: Scheduler) -> ProfilePlan:
    """The plan of a config on its target; computed once per compile and handed to the target."""
    facts = derive(config)
    found = target.recorded(config, facts)
    per_node = target.tasks_per_node(config)
    recorded = (
        found
        if isinstance(found, RecordedTasks)
        else RecordedTasks.from_tasks(found, per_node, config.setup.unit)
    )
    ranks = recorded_ranks(config, recorded)
    window, window_end = _window(config)
    env_vars = target.variables | facts.job_env.names()
    launch, brief = _launch(config, per_node, target.unit)
    target_window = target.opens_window(config)
    boxed = cuda_trace.time_boxed(config.capture) or target_window
    profile = nsys_cmd.profile_args(config, output=target.report_output(config), boxed=boxed)
    size = estimate_report_size(config)
    # The GPU-metrics data only counts where a collector runs.
    gpu_metrics = calibration()["gpu_metrics_bytes"] if config.capture.gpu_metrics else 0
    extra = gpu_metrics * recorded.collector_count
    total = round(size.bytes_per_report * len(recorded) + extra)
    shell = target.launch_shell(config)
    time_limit_s = config.job.time_limit_min * 60
    return ProfilePlan(
        world_size=config.cluster.world_size,
        nodes=config.cluster.nodes,
        tasks_per_node=per_node,
        launch=launch,
        launch_brief=brief,
        recorded=recorded,
        recorded_ranks=ranks,
        profile_args=tuple(profile),
        collector_args=facts.collector_args,
        env_vars=frozenset(env_vars),
        misleading_vars=tuple(sorted(target.misleading_variables.items())),
        in_container=target.in_container(config),
        window=window,
        window_end_s=window_end,
        time_limit_s=time_limit_s,
        size=size,
        total_bytes=total,
        slowdown=estimate_slowdown(
            kernels_per_second=config.workload.kernels_per_second,
            traces_cuda=config.setup.traces_cuda,
            recorded=ranks.total,
            world_size=config.cluster.world_size,
        ),
        facts=facts,
        program=(
            None if shell is None else workload_kind(config).program(config, shell, facts.steps)
        ),
        teardown=teardown(
            config, size.bytes_per_report, (window_start(config), window_end), time_limit_s
        ),
        analysis=analysis_job(config, len(recorded), total / len(recorded) if recorded else 0),
        trace=cuda_trace.trace_values(config, boxed),
        steps=step_detection(config),
        time_boxed=boxed,
        target_window=target_window,
        owned_switches=target.owned_switches(config),
        started=target.started_command(config) if shell is None else (),
    )
