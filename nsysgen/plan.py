"""What a profile will do, before the job runs: the facts `nsysgen plan` shows and lints check.

Everything here is computed from the config, per task of the job (a rank, or a node with one
torchrun per node, or a pod), with the same code the artifacts are rendered from: the target
(nsysgen/targets/) says which tasks record and what their reports are named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsysgen import nsys_cmd
from nsysgen.estimate import SizeEstimate, estimate_report_size
from nsysgen.model import Config
from nsysgen.overhead import SlowdownEstimate, estimate_slowdown

if TYPE_CHECKING:
    from nsysgen.targets.base import Target

_PLACEHOLDER = re.compile(r"%q\{([^}]*)\}|%[hpn%]")


@dataclass(frozen=True)
class RecordedTask:
    task: int  # global rank (per GPU), node index (per node), or pod index
    node: int
    local: int
    report: str  # the report path as nsys will name it (without .nsys-rep)
    collectors: bool


@dataclass(frozen=True)
class ProfilePlan:
    world_size: int
    nodes: int
    tasks_per_node: int
    launch: str  # what one task is
    recorded: tuple[RecordedTask, ...]
    profile_args: tuple[str, ...]  # of a recorded task without collectors
    collector_args: tuple[str, ...]
    env_vars: frozenset[str]  # the variables a task's environment holds
    misleading_vars: tuple[tuple[str, str], ...]  # set, but must not name a report: (name, why)
    in_container: bool  # the program and nsys run in a container
    window: str
    window_end_s: float | None  # seconds after launch, when known
    time_limit_s: int
    size: SizeEstimate
    slowdown: SlowdownEstimate  # outside the window (nsysgen/overhead.py)

    @property
    def nsys_command(self) -> tuple[str, ...]:
        """The nsys command line of the first recorded task (with its collectors, if any)."""
        first = self.recorded[0] if self.recorded else None
        extra = self.collector_args if first and first.collectors else ()
        return ("nsys", "profile", *self.profile_args, *extra, "<program>")


def expand_name(template: str, env: dict[str, str], host: str, pid: str) -> str:
    """nsys's -o placeholders: %q{VAR} (left as is when unset), %h, %p, %n, %%."""

    def replace(match: re.Match[str]) -> str:
        text = match.group(0)
        if match.group(1) is not None:
            return env.get(match.group(1), text)
        return {"%h": host, "%p": pid, "%n": "1", "%%": "%"}[text]

    return _PLACEHOLDER.sub(replace, template)


def _window(config: Config) -> tuple[str, float | None]:
    capture = config.capture
    if capture.mode == "window":
        if capture.duration:
            end = float((capture.delay or 0) + capture.duration)
            return f"from {capture.delay} s to {end:.0f} s after launch", end
        return f"from {capture.delay} s after launch to the end of the program", None
    if capture.mode == "steps":
        first, last = capture.first_step or 0, capture.last_step or 0
        step = config.workload.step_seconds
        end = (last + 1) * step
        return (
            f"training steps {first}..{last} (about {first * step:.0f} s to {end:.0f} s "
            f"after the loop starts, at workload.estimate.step_seconds={step})",
            end,
        )
    domain = f"@{capture.nvtx_domain}" if capture.nvtx_domain else ""
    return f"the first NVTX range {capture.nvtx_range}{domain}", None


def build_plan(config: Config, target: Target) -> ProfilePlan:
    """The plan of a config on its target; computed once per compile and handed to the target."""
    recorded = tuple(target.recorded(config))
    window, window_end = _window(config)
    per_node = target.tasks_per_node(config)
    env_vars = target.variables | {n for n, _ in config.cluster.env}
    if config.workload.launch == "per_gpu":
        launch = f"one task per GPU: {per_node} tasks per node, a task is a global rank"
    else:
        launch = (
            f"one torchrun per node: 1 {target.unit} per node driving "
            f"{config.cluster.gpus_per_node} GPUs; a report covers the whole node"
        )
    profile = nsys_cmd.profile_args(config, output=target.report_output(config))
    return ProfilePlan(
        world_size=config.cluster.world_size,
        nodes=config.cluster.nodes,
        tasks_per_node=per_node,
        launch=launch,
        recorded=recorded,
        profile_args=tuple(profile),
        collector_args=tuple(nsys_cmd.collector_args(config)),
        env_vars=frozenset(env_vars),
        misleading_vars=tuple(sorted(target.misleading_variables.items())),
        in_container=target.in_container(config),
        window=window,
        window_end_s=window_end,
        time_limit_s=config.job.time_limit_min * 60,
        size=estimate_report_size(config),
        slowdown=estimate_slowdown(
            kernels_per_second=config.workload.kernels_per_second,
            traces_cuda=any(t.startswith("cuda") for t in config.capture.trace),
            recorded=len(recorded),
            world_size=config.cluster.world_size,
        ),
    )
