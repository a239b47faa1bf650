"""Slurm target: an sbatch file, the per-rank nsys wrapper, and the shared artifacts."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from nsysgen.errors import Issue
from nsysgen.model import Block, Config, TargetSettings, settings_as
from nsysgen.output.render import ArtifactSpec, ShellExpr, shjoin, shquote
from nsysgen.profile import nsys_cmd
from nsysgen.profile.analysis_job import analysis_job, human_seconds
from nsysgen.profile.environment import job_env
from nsysgen.profile.estimate import human_bytes
from nsysgen.profile.lints import Lint
from nsysgen.profile.plan import ProfilePlan, RecordedTasks, expand_name
from nsysgen.profile.ranks import RankSelection, TaskSet, select, tasks_per_node
from nsysgen.profile.recipes import recipe_runs
from nsysgen.profile.teardown import sbatch_options as teardown_options
from nsysgen.profile.teardown import write_seconds
from nsysgen.profile.workloads import SITE_DIR, LaunchShell, Program, program, typed_block
from nsysgen.targets.common import install_script, recipes_script, upload_script, workload_files
from nsysgen.targets.expect import RUN_FOLDER, verify_files

WRAPPER = "nsys-exec"
# job_script=yours: what the user's own job script sources before its srun line.
ENV_FILE = "nsysgen-env.sh"
# What torchrun (one per node) reads from the job; head_node is set by job.sbatch.
SHELL = LaunchShell(
    nnodes="${SLURM_JOB_NUM_NODES}", job_id="${SLURM_JOB_ID}", head_node="${head_node}"
)
# The same, where a job script of the user's own sources nsysgen-env.sh: that file runs in the
# user's shell, so every name it defines is nsysgen's own (a user's $head_node stays theirs).
OWN_SHELL = LaunchShell(
    nnodes="${SLURM_JOB_NUM_NODES}", job_id="${SLURM_JOB_ID}", head_node="${NSYSGEN_HEAD_NODE}"
)
# The shell variables the program's command names, as nsysgen-env.sh names them.
_OWN_NAMES = {"${nemo_overrides[@]}": "${NSYSGEN_NEMO_OVERRIDES[@]}"}
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


def _tasks_text(config: Config) -> str:
    per_node = tasks_per_node(config)
    shape = f"{per_node} per node, a task per GPU" if per_node > 1 else "one launcher per node"
    return f"{config.cluster.nodes * per_node} tasks on {config.cluster.nodes} nodes ({shape})"


def own_program(config: Config) -> Program:
    """The program as a job script of the user's own starts it, after sourcing nsysgen-env.sh:
    with the prefixed names that file defines."""
    prog = program(config, OWN_SHELL)
    command = tuple(
        ShellExpr(_OWN_NAMES[word]) if isinstance(word, ShellExpr) and word in _OWN_NAMES else word
        for word in prog.command
    )
    return dataclasses.replace(prog, command=command)


def own_script_change(config: Config, plan: ProfilePlan, folder: str) -> list[str]:
    """The lines a job script of the user's own needs (`folder`: where this setup's folder is
    on the cluster), and what else it must hold, as printed at compile time and in the README."""
    command = shjoin(own_program(config).command)
    lines = [
        f"source {shquote(folder + '/' + ENV_FILE)}",
        f'srun [your srun options] "$NSYSGEN_EXEC" {command}',
    ]
    notes = [f"the srun must run {_tasks_text(config)}"]
    signal = teardown_options(config, plan).get("signal")
    if signal:
        notes.append(f"add `#SBATCH --signal={signal}` (time for nsys to write before the limit)")
    if in_container(config) or config.cluster.container_runtime == "pyxis":
        notes.append(
            f"in a container, mount {config.cluster.shared_fs} at the same path (nsys, this "
            "folder and the reports are there)"
        )
    return [*lines, *[f"# {note}" for note in notes]]


def report_output(config: Config) -> str:
    """The -o value: unique per job, rank and node, in the run's own folder (job<ID>/ in the
    report folder, so that runs never mix); nsys appends .nsys-rep."""
    suffix = _PER_GPU_SUFFIX if config.workload.launch == "per_gpu" else _PER_NODE_SUFFIX
    folder, name = posixpath.split(nsys_cmd.report_path(config, f"{config.job.name}{suffix}"))
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


def recorded(config: Config) -> RecordedTasks:
    """The recorded tasks as ranges of the selection policy; names expand on request."""
    selection = select(config)
    template = report_output(config)
    has_collectors = bool(nsys_cmd.collector_args(config))
    extra_collectors = nsys_cmd.extra_collectors(config)
    per_node = tasks_per_node(config)
    job = dict(job_env(config).pairs())  # once: names may be expanded for every task

    def name_of(task: int, node: int, local: int) -> str:
        env = _task_env(job, task, node, local)
        return expand_name(template, env, host=f"<host{node}>", pid=f"<pid{local}>")

    def collects(task: int, node: int, local: int) -> bool:
        return extra_collectors or (has_collectors and selection.collectors.contains(task, local))

    unit = "rank" if config.workload.launch == "per_gpu" else "node"
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


def sbatch_directives(config: Config, plan: ProfilePlan) -> list[tuple[str, str]]:
    """#SBATCH options, sorted by name so that diffs stay small."""
    cluster, settings = config.cluster, settings_as(config.target.settings, SlurmSettings)
    hours, minutes = divmod(config.job.time_limit_min, 60)
    options: dict[str, Any] = {
        "job-name": config.job.name,
        "nodes": cluster.nodes,
        "ntasks-per-node": tasks_per_node(config),
        "time": f"{hours:02d}:{minutes:02d}:00",
        # Relative to the submit directory, which exists (a missing log dir fails the job).
        "output": "%x_%j.out",
        **teardown_options(config, plan),
        **settings.sbatch,
    }
    if cluster.slurm_gres:
        options["gres"] = f"gpu:{cluster.gpus_per_node}"
    if cluster.partition:
        options["partition"] = cluster.partition
    if settings.exclusive:
        options["exclusive"] = True
    directives = []
    for name in sorted(options):
        value = options[name]
        if value is True:
            directives.append((name, ""))
        elif value is not False:
            directives.append((name, _directive_value(str(value))))
    return directives


def _directive_value(value: str) -> str:
    """A value as sbatch reads it from an #SBATCH line: whitespace ends a word and `#` starts a
    comment unless inside double quotes. The schema refuses `"` and `\\` in values (sbatch
    versions differ in escaping them), and hygiene refuses line breaks, so quoting is enough."""
    return f'"{value}"' if any(c.isspace() or c == "#" for c in value) or not value else value


def srun_args(config: Config) -> list[str]:
    cluster, workload = config.cluster, config.workload
    args = ["--label"]
    if workload.launch == "per_node":
        # Inherited SLURM_NTASKS would otherwise override --ntasks-per-node.
        args += [ShellExpr("--ntasks=${SLURM_JOB_NUM_NODES}"), "--ntasks-per-node=1"]
    elif cluster.slurm_mpi:
        args.append(f"--mpi={cluster.slurm_mpi}")
    if cluster.container_runtime == "pyxis" and workload.container_image:
        args += [
            f"--container-image={workload.container_image}",
            # nsys, this folder and the reports all live on the shared filesystem.
            f"--container-mounts={cluster.shared_fs}:{cluster.shared_fs}",
            "--no-container-remap-root",
        ]
    return args


def describe(tasks: TaskSet, per_gpu: bool) -> str:
    unit = "rank" if per_gpu else "node"
    if tasks.kind == "all":
        return f"every {unit}"
    if tasks.kind == "first_on_node":
        return "local rank 0 of every node"
    return f"{unit}{'s' if len(tasks.tasks) > 1 else ''} {', '.join(map(str, tasks.tasks))}"


def _wrapper(config: Config, selection: RankSelection, plan: ProfilePlan) -> ArtifactSpec:
    collectors = list(plan.collector_args)
    per_gpu = config.workload.launch == "per_gpu"
    uses_local_id = "first_on_node" in (
        selection.profiled.kind,
        selection.collectors.kind if collectors else "",
    )
    return ArtifactSpec(
        path=WRAPPER,
        template="slurm/nsys-exec.j2",
        executable=True,
        context={
            "job_name": config.job.name,
            "version": config.nsight.version,
            "nsys": config.nsys_path,
            "report_dir": config.capture.report_dir,
            "profile_args": list(plan.profile_args),
            "collector_args": collectors,
            "profiled": selection.profiled,
            "collectors": selection.collectors,
            "profiled_text": describe(selection.profiled, per_gpu),
            "collectors_text": describe(selection.collectors, per_gpu),
            "uses_local_id": uses_local_id,
            "per_gpu": per_gpu,
            "site_dir": SITE_DIR if program(config, SHELL).site else None,
            # A job script of the user's own starts it: the srun's shape is checked.
            "shape": (
                (
                    config.cluster.nodes * tasks_per_node(config),
                    config.cluster.nodes,
                    tasks_per_node(config),
                )
                if own_script(config)
                else None
            ),
        },
    )


def in_container(config: Config) -> bool:
    return config.cluster.container_runtime == "pyxis" and bool(config.workload.container_image)


def _sbatch(config: Config, selection: RankSelection, plan: ProfilePlan) -> ArtifactSpec:
    prog = program(config, SHELL)
    per_gpu = config.workload.launch == "per_gpu"
    return ArtifactSpec(
        path="job.sbatch",
        template="slurm/job.sbatch.j2",
        executable=False,
        context={
            "job_name": config.job.name,
            "directives": sbatch_directives(config, plan),
            "env": [*job_env(config).pairs(), *prog.env],
            "srun_args": srun_args(config),
            "command": prog.command,
            "needs_head_node": prog.needs_head_node,
            "nemo_overrides": "nemo-overrides.txt" in prog.files,
            "wrapper": WRAPPER,
            "report_dir": config.capture.report_dir,
            "launch_text": (
                f"one task per GPU ({config.cluster.gpus_per_node} per node)"
                if per_gpu
                else "one torchrun per node driving every GPU of the node"
            ),
            "profiled_text": describe(selection.profiled, per_gpu),
        },
    )


def _readme(
    config: Config, selection: RankSelection, plan: ProfilePlan, files: list[str]
) -> ArtifactSpec:
    per_gpu = config.workload.launch == "per_gpu"
    return ArtifactSpec(
        path="README.md",
        template="slurm/README.md.j2",
        comment="<!--",
        context={
            "config": config,
            "files": files,
            "per_gpu": per_gpu,
            "profiled_text": describe(selection.profiled, per_gpu),
            "collectors_text": describe(selection.collectors, per_gpu),
            "collector_args": list(plan.collector_args),
            "report_pattern": report_output(config) + ".nsys-rep",
            "step_env": dict(program(config, SHELL).env),
            "steps": plan.steps,
            "recipe_folders": [run.folder for run in recipe_runs(config)],
            "signal": teardown_options(config, plan).get("signal"),
            "write_s": write_seconds(plan),
            "own_script": (
                own_script_change(config, plan, "/path/of/this/folder")
                if own_script(config)
                else None
            ),
            "env_file": ENV_FILE,
            "job_env": job_env(config, own_job=own_script(config)),
        },
    )


def _analyze_sbatch(config: Config, plan: ProfilePlan) -> ArtifactSpec:
    """analyze.sbatch: a Dask cluster over its own allocation, recipes and nsysgen analyze on
    it; sized from the `analysis` block or the report count and size model."""
    reports, total = plan.reports, plan.total_bytes
    per_report = total / reports if reports else 0
    job = analysis_job(config, reports, per_report)
    hours, minutes = divmod(job.time_limit_min, 60)
    options: dict[str, str] = {
        "job-name": f"{config.job.name}-analyze",
        "nodes": str(job.nodes),
        "ntasks-per-node": "1",
        "cpus-per-task": str(job.workers_per_node),
        "time": f"{hours:02d}:{minutes:02d}:00",
        "output": "%x_%j.out",
    }
    if config.cluster.partition:
        options["partition"] = config.cluster.partition
    return ArtifactSpec(
        path="analyze.sbatch",
        template="slurm/analyze.sbatch.j2",
        context={
            "job_name": config.job.name,
            "directives": [(k, _directive_value(v)) for k, v in sorted(options.items())],
            "nodes": job.nodes,
            "workers_per_node": job.workers_per_node,
            "memory_gb": job.worker_memory_gb,
            "reports": reports,
            "world_size": plan.world_size,
            "report_size": human_bytes(per_report),
            "estimate": human_seconds(job.estimate_s),
            "version": config.nsight.version,
            "python": config.analysis.python,
            "nsys": config.nsys_path,
            "report_dir": config.capture.report_dir,
            "nccl_tests": config.workload.kind == "nccl",
        },
    )


def _env_file(config: Config) -> ArtifactSpec:
    prog = own_program(config)
    return ArtifactSpec(
        path=ENV_FILE,
        template="slurm/nsysgen-env.sh.j2",
        context={
            "job_name": config.job.name,
            "env_file": ENV_FILE,
            # Only what profiling needs: cluster.env is the job's own business, set by its
            # script (nsysgen's job.sbatch exports it; a user's script has its own).
            "env": list(prog.env),
            # nsysgen's defaults, which the job script's own value of a name wins over.
            "defaults": list(job_env(config, own_job=True).pairs()),
            "nodes": config.cluster.nodes,
            "needs_head_node": prog.needs_head_node,
            "nemo_overrides": "nemo-overrides.txt" in prog.files,
            "wrapper": WRAPPER,
            "command": prog.command,
            "report_dir": config.capture.report_dir,
            "tasks_text": _tasks_text(config),
        },
    )


def artifacts(config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
    selection = select(config)
    launch = _env_file(config) if own_script(config) else _sbatch(config, selection, plan)
    specs = [
        launch,
        _analyze_sbatch(config, plan),
        _wrapper(config, selection, plan),
        install_script(config),
        recipes_script(config),
        *workload_files(config),
        *verify_files(config, plan, TARGET),
    ]
    upload = upload_script(config)
    if upload is not None:
        specs.append(upload)
    specs.append(_readme(config, selection, plan, sorted(s.path for s in specs)))
    return specs


def _hyperpod_flags(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    if config.cluster.slurm_platform != "hyperpod":
        return
    if config.cluster.slurm_gres:
        yield (
            "cluster.slurm.gres",
            "HyperPod clusters reject --gres=gpu unless GPU GRES was enabled on them",
        )
    if config.cluster.slurm_mpi == "pmix":
        yield ("cluster.slurm.mpi", "HyperPod clusters reject --mpi=pmix unless pmix was enabled")


HYPERPOD_LINT = Lint(
    "NSG011",
    "`--gres` / `--mpi=pmix` on HyperPod (`cluster.slurm.platform=hyperpod`)",
    "set cluster.slurm.gres=false and cluster.slurm.mpi=null on HyperPod",
    "error",
    _hyperpod_flags,
)


class Slurm:
    name = "slurm"
    unit = "task"
    variables = SLURM_TASK_VARS
    misleading_variables: Mapping[str, str] = {
        "HOSTNAME": "%q{HOSTNAME} is the batch host in every Slurm task, "
        "not the node that runs it (allowed: %q{SLURMD_NODENAME})"
    }
    lints = (HYPERPOD_LINT,)
    schema = None

    def settings(self, block: Block) -> TargetSettings:
        settings: SlurmSettings = typed_block(SlurmSettings, block)
        return settings

    def tasks_per_node(self, config: Config) -> int:
        return tasks_per_node(config)

    def report_output(self, config: Config) -> str:
        return report_output(config)

    def recorded(self, config: Config) -> RecordedTasks:
        return recorded(config)

    def in_container(self, config: Config) -> bool:
        return in_container(config)

    def opens_window(self, config: Config) -> bool:
        return False  # nsys opens and closes it, as capture.* says

    def owned_switches(self, config: Config) -> tuple[str, ...]:
        return ()  # srun runs the nsys command nsysgen writes, whole

    def checks(self, config: Config) -> Iterator[Issue]:
        return iter(())

    def artifacts(self, config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
        return artifacts(config, plan)

    def inputs(self, config: Config) -> Mapping[str, str]:
        return {}  # a user's own job script is never read

    def prerequisites(self, config: Config) -> tuple[tuple[str, str, str], ...]:
        return ()  # install-nsight.sh installs what the job needs; the README says the rest

    def notes(self, config: Config, plan: ProfilePlan, folder: str) -> tuple[str, ...]:
        if not own_script(config):
            return ()
        return (
            "your job script: source the setup's environment, then start the program through",
            "nsys-exec in its srun line (as this folder's README says):",
            *(f"  {line}" for line in own_script_change(config, plan, folder)),
        )


TARGET = Slurm()
