"""What Slurm runs and names: its tasks, their variables, the reports they write, and which of
them record."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from nsysgen.model import Config, TargetSettings
from nsysgen.profile.plan_types import Facts, RecordedTasks, TaskSet, expand_name, report_path
from nsysgen.targets.expect import RUN_FOLDER

WRAPPER = "nsys-exec"
# job_script=yours: what the user's own job script sources before its srun line.
ENV_FILE = "nsysgen-env.sh"
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
# SLURMD_NODENAME is the node that runs the task; HOSTNAME is the batch host for every task,
# so it must never name a report.
_PER_GPU_SUFFIX = (
    "_job%q{SLURM_JOB_ID}_rank%q{SLURM_PROCID}_node%q{SLURM_NODEID}_%q{SLURMD_NODENAME}"
)
# With one torchrun per node, SLURM_PROCID is the node index and the report holds every GPU.
_PER_NODE_SUFFIX = "_job%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}_%q{SLURMD_NODENAME}_allgpus"


@dataclass(frozen=True)
class SlurmSettings(TargetSettings):
    exclusive: bool
    # nsysgen: job.sbatch runs the job; yours: your own job script sources nsysgen-env.sh and
    # starts the program through nsys-exec (only the profiling parts are compiled).
    job_script: Literal["nsysgen", "yours"] = "nsysgen"
    sbatch: Mapping[str, str | int | bool] = field(default_factory=dict)


def own_script(config: Config) -> bool:
    """Slurm with target.job_script=yours: a job script of the user's own runs the job."""
    settings = config.target.settings
    return isinstance(settings, SlurmSettings) and settings.job_script == "yours"


def tasks_per_node(config: Config) -> int:
    """srun's tasks on a node: one per GPU, or one launcher (torchrun) per node."""
    return config.setup.tasks_per_node


def tasks_text(config: Config) -> str:
    per_node = tasks_per_node(config)
    shape = f"{per_node} per node, a task per GPU" if per_node > 1 else "one launcher per node"
    return f"{config.cluster.nodes * per_node} tasks on {config.cluster.nodes} nodes ({shape})"


def report_output(config: Config) -> str:
    """The -o value: unique per job, rank and node, in the run's own folder (job<ID>/ in the
    report folder, so that runs never mix); nsys appends .nsys-rep."""
    suffix = _PER_GPU_SUFFIX if config.setup.per_gpu else _PER_NODE_SUFFIX
    capture = config.capture
    path = report_path(capture.report_dir, capture.report_name, f"{config.job.name}{suffix}")
    folder, name = posixpath.split(path)
    return f"{folder}/{RUN_FOLDER}/{name}"


def _task_env(job: Mapping[str, str], task: int, node: int, local: int) -> dict[str, str]:
    """What task `task` sees: Slurm's variables, then the job's environment (`job`)."""
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
    env.update(job)
    return env


def recorded(config: Config, facts: Facts) -> RecordedTasks:
    """The recorded tasks as ranges of the selection policy; names expand on request."""
    selection = facts.selection
    template = report_output(config)
    has_collectors = bool(facts.collector_args)
    extra_collectors = facts.extra_collectors
    per_node = tasks_per_node(config)
    job = dict(facts.job_env.pairs())  # once: names may be expanded for every task

    def name_of(task: int, node: int, local: int) -> str:
        env = _task_env(job, task, node, local)
        return expand_name(template, env, host=f"<host{node}>", pid=f"<pid{local}>")

    def collects(task: int, node: int, local: int) -> bool:
        return extra_collectors or (has_collectors and selection.collectors.contains(task, local))

    unit = config.setup.unit
    profiled = selection.profiled
    if profiled.kind == "listed":
        listed = tuple(
            (task, task // per_node, task % per_node)
            for task in profiled.tasks
            if task < config.cluster.nodes * per_node
        )
        return RecordedTasks(per_node, unit, name_of, collects, listed=listed)
    locals_ = tuple(range(per_node)) if profiled.kind == "all" else (0,)
    return RecordedTasks(
        per_node, unit, name_of, collects, 0, config.cluster.nodes, locals_=locals_
    )


def describe(tasks: TaskSet, unit: str) -> str:
    """`unit`: what one task is (Setup.unit)."""
    if tasks.kind == "all":
        return f"every {unit}"
    if tasks.kind == "first_on_node":
        return "local rank 0 of every node"
    return f"{unit}{'s' if len(tasks.tasks) > 1 else ''} {', '.join(map(str, tasks.tasks))}"


def in_container(config: Config) -> bool:
    return config.cluster.container_runtime == "pyxis" and bool(config.workload.container_image)
