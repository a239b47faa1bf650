"""What a profile will do, before the job runs: the facts `nsysgen plan` shows and lints check.

Everything here is computed from the config, per task of the job (a rank, or a node with one
torchrun per node, or a pod on EKS), with the same code the artifacts are rendered from.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from nsysgen import nsys_cmd
from nsysgen.estimate import SizeEstimate, estimate_report_size
from nsysgen.model import Config
from nsysgen.overhead import SlowdownEstimate, estimate_slowdown
from nsysgen.ranks import iter_tasks, select, tasks_per_node
from nsysgen.targets import eks

# Variables Slurm sets in every task. HOSTNAME is set too, but
# to the batch host for every task, so it is modelled as such.
SLURM_TASK_VARS = frozenset(
    {
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_NODEID",
        "SLURM_JOB_ID",
        "SLURM_STEP_ID",
        "SLURM_NTASKS",
        "SLURM_STEP_NUM_TASKS",
        "SLURM_JOB_NUM_NODES",
        "SLURM_NNODES",
        "SLURM_STEP_NUM_NODES",
        "SLURM_STEP_TASKS_PER_NODE",
        "SLURM_TASKS_PER_NODE",
        "SLURMD_NODENAME",
        "SLURM_JOB_NODELIST",
        "SLURM_GPUS_ON_NODE",
        "SLURM_STEP_GPUS",
        "SLURM_JOB_NAME",
        "SLURM_SUBMIT_DIR",
        "CUDA_VISIBLE_DEVICES",
        "HOSTNAME",
        "SLURM_NTASKS_PER_NODE",
    }
)
# What the training operator and the kubelet set in a PyTorchJob pod.
EKS_POD_VARS = frozenset(
    {
        "HOSTNAME",
        "PET_NNODES",
        "PET_NODE_RANK",
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
        "PET_NPROC_PER_NODE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
    }
)
_PLACEHOLDER = re.compile(r"%q\{([^}]*)\}|%[hpn%]")
_COLLECTOR_FLAGS = ("--enable", "--gpu-metrics-device", "--gpu-metrics-devices")


@dataclass(frozen=True)
class RecordedTask:
    task: int  # global rank (per GPU), node index (per node), or pod index (EKS)
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

    def node_reports(self, node: int) -> list[RecordedTask]:
        return [r for r in self.recorded if r.node == node]


def expand_name(template: str, env: dict[str, str], host: str, pid: str) -> str:
    """nsys's -o placeholders: %q{VAR} (left as is when unset), %h, %p, %n, %%."""

    def replace(match: re.Match[str]) -> str:
        text = match.group(0)
        if match.group(1) is not None:
            return env.get(match.group(1), text)
        return {"%h": host, "%p": pid, "%n": "1", "%%": "%"}[text]

    return _PLACEHOLDER.sub(replace, template)


def _slurm_env(config: Config, task: int, node: int, local: int) -> dict[str, str]:
    env = {name: f"<{name}>" for name in SLURM_TASK_VARS}
    env.update(
        {
            "SLURM_PROCID": str(task),
            "SLURM_LOCALID": str(local),
            "SLURM_NODEID": str(node),
            "SLURM_JOB_ID": "<jobid>",
            "SLURMD_NODENAME": f"<host{node}>",
            "HOSTNAME": "<host0>",  # the batch host, in every task
        }
    )
    env.update(dict(config.cluster.env))
    return env


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


def _recorded_slurm(config: Config) -> Iterator[RecordedTask]:
    selection = select(config)
    template = nsys_cmd.report_output(config)
    has_collectors = bool(nsys_cmd.collector_args(config))
    extra_collectors = any(a.split("=")[0] in _COLLECTOR_FLAGS for a in config.capture.extra_args)
    for task, node, local in iter_tasks(config):
        if not selection.profiled.contains(task, local):
            continue
        env = _slurm_env(config, task, node, local)
        name = expand_name(template, env, host=f"<host{node}>", pid=f"<pid{local}>")
        collectors = extra_collectors or (
            has_collectors and selection.collectors.contains(task, local)
        )
        yield RecordedTask(task, node, local, name, collectors)


def _recorded_eks(config: Config) -> Iterator[RecordedTask]:
    labelled = eks.profiled_replicas(config)
    template = eks.report_output(config)
    for node in range(config.cluster.nodes):
        replica = "Master" if node == 0 else "Worker"
        if replica not in labelled:
            continue
        pod = f"{config.job.name}-{replica.lower()}-{0 if node == 0 else node - 1}"
        injector = {
            "{PROCESS_NAME}": "python3",
            "{NVDT_PROCESS_NAME}": "python3",
            "%{POD_FULLNAME}": f"{config.target.settings['namespace']}_{pod}",
            "%{NVDT_POD_FULLNAME}": f"{config.target.settings['namespace']}_{pod}",
            "%{CONTAINER_NAME}": "pytorch",
            "%{NVDT_CONTAINER_NAME}": "pytorch",
            "{TIMESTAMP}": "<ms>",
            "{UID}": "<uid>",
        }
        name = template
        for placeholder, value in injector.items():
            name = name.replace(placeholder, value)
        name = expand_name(name, {"HOSTNAME": pod}, host=pod, pid="pid0")
        yield RecordedTask(node, node, 0, name, bool(nsys_cmd.collector_args(config)))


def build_plan(config: Config) -> ProfilePlan:
    on_eks = config.target.name == "eks"
    recorded = tuple(_recorded_eks(config) if on_eks else _recorded_slurm(config))
    window, window_end = _window(config)
    per_node = 1 if on_eks else tasks_per_node(config)
    env_vars = (EKS_POD_VARS if on_eks else SLURM_TASK_VARS) | {n for n, _ in config.cluster.env}
    if config.workload.launch == "per_gpu":
        launch = f"one task per GPU: {per_node} tasks per node, a task is a global rank"
    else:
        unit = "pod" if on_eks else "task"
        launch = (
            f"one torchrun per node: 1 {unit} per node driving {config.cluster.gpus_per_node}"
            f" GPUs; a report covers the whole node"
        )
    profile = nsys_cmd.profile_args(config, output=eks.report_output(config) if on_eks else None)
    return ProfilePlan(
        world_size=config.cluster.world_size,
        nodes=config.cluster.nodes,
        tasks_per_node=per_node,
        launch=launch,
        recorded=recorded,
        profile_args=tuple(profile),
        collector_args=tuple(nsys_cmd.collector_args(config)),
        env_vars=frozenset(env_vars),
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
