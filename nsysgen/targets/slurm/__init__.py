"""Slurm target: an sbatch file, the per-rank nsys wrapper, and the shared artifacts."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping

from nsysgen.errors import Issue
from nsysgen.model import Block, Config, TargetSettings, typed_block
from nsysgen.output.render import ArtifactSpec
from nsysgen.profile.plan_types import (
    SITE_DIR,
    Facts,
    JobEnv,
    LaunchShell,
    Lint,
    ProfilePlan,
    RecordedTasks,
)
from nsysgen.shipped.verify.report import HELPER_LOG
from nsysgen.targets.common import install_script, recipes_script, upload_script, workload_files
from nsysgen.targets.expect import verify_files
from nsysgen.targets.slurm.own import OWN_SHELL, SHELL, env_file, own_script_change
from nsysgen.targets.slurm.sbatch import analyze_sbatch, job_sbatch, program
from nsysgen.targets.slurm.tasks import (
    ENV_FILE,
    SLURM_TASK_VARS,
    WRAPPER,
    SlurmSettings,
    describe,
    in_container,
    own_script,
    recorded,
    report_output,
    tasks_per_node,
)


def _wrapper(config: Config, plan: ProfilePlan) -> ArtifactSpec:
    selection = plan.facts.selection
    collectors = list(plan.collector_args)
    per_gpu = config.setup.per_gpu
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
            "profiled_text": describe(selection.profiled, config.setup.unit),
            "collectors_text": describe(selection.collectors, config.setup.unit),
            "uses_local_id": uses_local_id,
            "per_gpu": per_gpu,
            # Where the step helper is: the zero-patch one on PYTHONPATH, a patched loop's
            # through NSYSGEN_HELPER_DIR.
            "site_dir": SITE_DIR if program(plan).site or plan.facts.steps.helper_dir else None,
            "on_path": program(plan).site,
            # The step helper writes what it says beside nsys's temp files (verify reads it).
            "helper_log": HELPER_LOG if config.capture.mode == "steps" else None,
            # A job script of the user's own starts it: the srun's shape is checked.
            "shape": (
                (
                    config.cluster.nodes * plan.tasks_per_node,
                    config.cluster.nodes,
                    plan.tasks_per_node,
                )
                if own_script(config)
                else None
            ),
        },
    )


def _readme(config: Config, plan: ProfilePlan, files: list[str], shared: list[str]) -> ArtifactSpec:
    per_gpu = config.setup.per_gpu
    selection, facts = plan.facts.selection, plan.facts
    return ArtifactSpec(
        path="README.md",
        template="slurm/README.md.j2",
        comment="<!--",
        context={
            "config": config,
            "files": files,
            "shared": shared,
            "per_gpu": per_gpu,
            "profiled_text": describe(selection.profiled, config.setup.unit),
            "collectors_text": describe(selection.collectors, config.setup.unit),
            "collector_args": list(plan.collector_args),
            "report_pattern": report_output(config) + ".nsys-rep",
            "step_env": dict(program(plan).env),
            "steps": plan.steps,
            "recipe_folders": [run.folder for run in facts.recipes],
            "signal": plan.teardown.early_signal,
            "write_s": plan.teardown.write_s,
            "own_script": (
                own_script_change(config, plan, "/path/of/this/folder")
                if own_script(config)
                else None
            ),
            "env_file": ENV_FILE,
            "job_env": facts.own_job_env if own_script(config) else facts.job_env,
        },
    )


def artifacts(config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
    launch = env_file(config, plan) if own_script(config) else job_sbatch(config, plan)
    specs = [
        launch,
        analyze_sbatch(config, plan),
        _wrapper(config, plan),
        install_script(config),
        recipes_script(config, plan),
        *workload_files(config, plan),
        *verify_files(config, plan, TARGET),
    ]
    upload = upload_script(config)
    if upload is not None:
        specs.append(upload)
    shared = sorted(s.path for s in specs if s.shared)
    specs.append(_readme(config, plan, sorted(s.path for s in specs), shared))
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


def _signal_too_early(config: Config, plan: ProfilePlan) -> Iterator[tuple[str, str]]:
    early = plan.teardown.too_early
    if early is None:
        return
    when = f"{early.earliest_s} s after the start" if early.earliest_s else "as the job starts"
    opens = f" (about {early.opens_s:g} s after launch)" if early.opens_s else ""
    yield (
        "job.time_limit_min",
        f"Slurm may send --signal={plan.teardown.early_signal} up to a minute before that "
        f"(sbatch(1)): with a time limit of {config.job.time_limit_min} min it can come {when}, "
        f"before the capture opens{opens}, and the report then holds nothing (allowed: "
        f"job.time_limit_min >= {early.limit_min})",
    )


SIGNAL_LINT = Lint(
    "NSG026",
    "Slurm's early signal may come before the capture opens (a short time limit)",
    "raise job.time_limit_min: Slurm sends --signal up to a minute early",
    "warning",
    _signal_too_early,
)


class Slurm:
    name = "slurm"
    unit = "task"
    variables = SLURM_TASK_VARS
    misleading_variables: Mapping[str, str] = {
        "HOSTNAME": "%q{HOSTNAME} is the batch host in every Slurm task, "
        "not the node that runs it (allowed: %q{SLURMD_NODENAME})"
    }
    lints = (HYPERPOD_LINT, SIGNAL_LINT)
    schema = None

    def settings(self, block: Block) -> TargetSettings:
        settings: SlurmSettings = typed_block(SlurmSettings, block)
        return settings

    def tasks_per_node(self, config: Config) -> int:
        return tasks_per_node(config)

    def report_output(self, config: Config) -> str:
        return report_output(config)

    def started_command(self, config: Config) -> tuple[str, ...]:
        return ()  # the launch shell starts the program (the plan's `program`)

    def launch_shell(self, config: Config) -> LaunchShell:
        # nsysgen-env.sh runs in the user's shell: its names are prefixed (own.py).
        return OWN_SHELL if own_script(config) else SHELL

    def recorded(self, config: Config, facts: Facts) -> RecordedTasks:
        return recorded(config, facts)

    def in_container(self, config: Config) -> bool:
        return in_container(config)

    def opens_window(self, config: Config) -> bool:
        return False  # nsys opens and closes it, as capture.* says

    def owned_switches(self, config: Config) -> tuple[str, ...]:
        return ()  # srun runs the nsys command nsysgen writes, whole

    def checks(self, config: Config, env: JobEnv) -> Iterator[Issue]:
        return iter(())

    def artifacts(self, config: Config, plan: ProfilePlan) -> list[ArtifactSpec]:
        return artifacts(config, plan)

    def inputs(self, config: Config) -> Mapping[str, str]:
        return {}  # a user's own job script is never read

    def prerequisites(self, config: Config) -> tuple[tuple[str, str, str], ...]:
        return ()  # install-nsight.sh installs what the job needs; the README says the rest

    def unconfirmed(self, config: Config, plan: ProfilePlan) -> tuple[tuple[str, str], ...]:
        return ()  # Slurm and nsys's own switches are documented

    def notes(self, config: Config, plan: ProfilePlan, folder: str) -> tuple[str, ...]:
        if not own_script(config):
            return ()
        shared = posixpath.normpath(config.cluster.shared_fs)
        elsewhere = () if (folder + "/").startswith(shared.rstrip("/") + "/") else (
            f"warning: {folder} is a path on this machine, not under cluster.shared_fs="
            f"{shared}: copy the folder to the cluster's shared filesystem (as nsysgen "
            f"compiles it there: output_dir={shared}/...) and source it from there",
        )  # fmt: skip
        return (
            "your job script: source the setup's environment, then start the program through",
            "nsys-exec in its srun line (as this folder's README says):",
            *(f"  {line}" for line in own_script_change(config, plan, folder)),
            *elsewhere,
        )


TARGET = Slurm()
