"""The batch scripts: job.sbatch (nsysgen's own job script) and analyze.sbatch."""

from __future__ import annotations

from typing import Any

from nsysgen.model import Config, settings_as
from nsysgen.output.render import ArtifactSpec, ShellExpr
from nsysgen.profile.plan_types import NEMO_OVERRIDES_FILE, ProfilePlan, Program
from nsysgen.targets.slurm.tasks import WRAPPER, SlurmSettings, describe, tasks_per_node
from nsysgen.units import human_bytes, rounded_seconds


def program(plan: ProfilePlan) -> Program:
    """The program as Slurm's launch starts it (the plan holds it for every Slurm job)."""
    assert plan.program is not None, "Slurm.launch_shell always gives the plan a program"
    return plan.program


def sbatch_directives(config: Config, plan: ProfilePlan) -> list[tuple[str, str]]:
    """#SBATCH options, sorted by name so that diffs stay small."""
    cluster, settings = config.cluster, settings_as(config.target.settings, SlurmSettings)
    hours, minutes = divmod(config.job.time_limit_min, 60)
    signal = plan.teardown.early_signal
    options: dict[str, Any] = {
        "job-name": config.job.name,
        "nodes": cluster.nodes,
        "ntasks-per-node": tasks_per_node(config),
        "time": f"{hours:02d}:{minutes:02d}:00",
        # Relative to the submit directory, which exists (a missing log dir fails the job).
        "output": "%x_%j.out",
        # Time for nsys to write before the limit (nsysgen/profile/teardown.py).
        **({"signal": signal} if signal else {}),
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
            directives.append((name, directive_value(str(value))))
    return directives


def directive_value(value: str) -> str:
    """A value as sbatch reads it from an #SBATCH line: whitespace ends a word and `#` starts a
    comment unless inside double quotes. The schema refuses `"` and `\\` in values (sbatch
    versions differ in escaping them), and hygiene refuses line breaks, so quoting is enough."""
    return f'"{value}"' if any(c.isspace() or c == "#" for c in value) or not value else value


def srun_args(config: Config) -> list[str]:
    cluster, workload = config.cluster, config.workload
    args = ["--label"]
    if not config.setup.per_gpu:
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


def job_sbatch(config: Config, plan: ProfilePlan) -> ArtifactSpec:
    prog = program(plan)
    return ArtifactSpec(
        path="job.sbatch",
        template="slurm/job.sbatch.j2",
        executable=False,
        context={
            "job_name": config.job.name,
            "directives": sbatch_directives(config, plan),
            "env": [*plan.facts.job_env.pairs(), *prog.env],
            "srun_args": srun_args(config),
            "command": prog.command,
            "needs_head_node": prog.needs_head_node,
            "nemo_overrides": NEMO_OVERRIDES_FILE in prog.files,
            "wrapper": WRAPPER,
            "report_dir": config.capture.report_dir,
            "launch_text": plan.launch_brief,
            "profiled_text": describe(plan.facts.selection.profiled, config.setup.unit),
        },
    )


def analyze_sbatch(config: Config, plan: ProfilePlan) -> ArtifactSpec:
    """analyze.sbatch: a Dask cluster over its own allocation, recipes and nsysgen analyze on
    it; sized from the `analysis` block or the report count and size model (the plan's)."""
    reports, total = plan.reports, plan.total_bytes
    per_report = total / reports if reports else 0
    job = plan.analysis
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
            "directives": [(k, directive_value(v)) for k, v in sorted(options.items())],
            "nodes": job.nodes,
            "workers_per_node": job.workers_per_node,
            "memory_gb": job.worker_memory_gb,
            "reports": reports,
            "world_size": plan.world_size,
            "report_size": human_bytes(per_report),
            "estimate": rounded_seconds(job.estimate_s),
            "version": config.nsight.version,
            "python": config.analysis.python,
            "nsys": config.nsys_path,
            "report_dir": config.capture.report_dir,
            "nccl_tests": program(plan).nccl_tests_log,
        },
    )
