"""Slurm target: an sbatch file, the per-rank nsys wrapper, and the shared artifacts."""

from __future__ import annotations

from typing import Any

from nsysgen import nsys_cmd
from nsysgen.common_artifacts import install_script, recipes_script, workload_files
from nsysgen.model import Config
from nsysgen.ranks import RankSelection, TaskSet, select, tasks_per_node
from nsysgen.recipes import recipe_runs
from nsysgen.render import ArtifactSpec
from nsysgen.targets.base import Target
from nsysgen.teardown import sbatch_options as teardown_options
from nsysgen.teardown import write_seconds
from nsysgen.workloads import ShellExpr, program

WRAPPER = "nsys-exec"


def sbatch_directives(config: Config) -> list[tuple[str, str]]:
    """#SBATCH options, sorted by name so that diffs stay small."""
    cluster, settings = config.cluster, config.target.settings
    hours, minutes = divmod(config.job.time_limit_min, 60)
    options: dict[str, Any] = {
        "job-name": config.job.name,
        "nodes": cluster.nodes,
        "ntasks-per-node": tasks_per_node(config),
        "time": f"{hours:02d}:{minutes:02d}:00",
        # Relative to the submit directory, which exists (a missing log dir fails the job).
        "output": "%x_%j.out",
        **teardown_options(config),
        **settings["sbatch"],
    }
    if cluster.slurm_gres:
        options["gres"] = f"gpu:{cluster.gpus_per_node}"
    if cluster.partition:
        options["partition"] = cluster.partition
    if settings["exclusive"]:
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
        # Inherited SLURM_NTASKS would otherwise override --ntasks-per-node (CLUSTERS.md 6).
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


def _wrapper(config: Config, selection: RankSelection) -> ArtifactSpec:
    collectors = nsys_cmd.collector_args(config)
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
            "profile_args": nsys_cmd.profile_args(config),
            "collector_args": collectors,
            "profiled": selection.profiled,
            "collectors": selection.collectors,
            "profiled_text": describe(selection.profiled, per_gpu),
            "collectors_text": describe(selection.collectors, per_gpu),
            "uses_local_id": uses_local_id,
            "per_gpu": per_gpu,
        },
    )


def _sbatch(config: Config, selection: RankSelection) -> ArtifactSpec:
    prog = program(config)
    per_gpu = config.workload.launch == "per_gpu"
    return ArtifactSpec(
        path="job.sbatch",
        template="slurm/job.sbatch.j2",
        executable=False,
        context={
            "job_name": config.job.name,
            "directives": sbatch_directives(config),
            "env": [*config.cluster.env, *prog.env],
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


def _readme(config: Config, selection: RankSelection, files: list[str]) -> ArtifactSpec:
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
            "collector_args": nsys_cmd.collector_args(config),
            "report_pattern": nsys_cmd.report_output(config) + ".nsys-rep",
            "step_env": dict(program(config).env),
            "recipe_folders": [run.folder for run in recipe_runs(config)],
            "signal": teardown_options(config).get("signal"),
            "write_s": write_seconds(config),
        },
    )


def plan(config: Config) -> list[ArtifactSpec]:
    selection = select(config)
    specs = [
        _sbatch(config, selection),
        _wrapper(config, selection),
        install_script(config),
        recipes_script(config),
        *workload_files(config),
        *_verify_files(config),
    ]
    specs.append(_readme(config, selection, sorted(s.path for s in specs)))
    return specs


TARGET = Target(name="slurm", plan=plan)


def _verify_files(config: Config) -> list[ArtifactSpec]:
    # Imported here: verify_expect reads the plan, which imports the targets.
    from nsysgen.verify_expect import verify_files

    return verify_files(config)
