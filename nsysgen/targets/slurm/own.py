"""target.job_script=yours: a job script of the user's own runs the job. It sources
nsysgen-env.sh and starts the program through nsys-exec; nsysgen compiles only those parts."""

from __future__ import annotations

import dataclasses

from nsysgen.model import Config
from nsysgen.output.render import ArtifactSpec, ShellExpr, shjoin, shquote
from nsysgen.profile.plan_types import NEMO_OVERRIDES_FILE, LaunchShell, ProfilePlan, Program
from nsysgen.targets.slurm.sbatch import program
from nsysgen.targets.slurm.tasks import ENV_FILE, WRAPPER, tasks_text

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


def own_program(plan: ProfilePlan) -> Program:
    """The program as a job script of the user's own starts it, after sourcing nsysgen-env.sh:
    with the prefixed names that file defines (the plan's program reads OWN_SHELL)."""
    prog = program(plan)
    command = tuple(
        ShellExpr(_OWN_NAMES[word]) if isinstance(word, ShellExpr) and word in _OWN_NAMES else word
        for word in prog.command
    )
    return dataclasses.replace(prog, command=command)


def own_script_change(config: Config, plan: ProfilePlan, folder: str) -> list[str]:
    """The lines a job script of the user's own needs (`folder`: where this setup's folder is
    on the cluster), and what else it must hold, as printed at compile time and in the README."""
    command = shjoin(own_program(plan).command)
    lines = [
        f"source {shquote(folder + '/' + ENV_FILE)}",
        f'srun [your srun options] "$NSYSGEN_EXEC" {command}',
    ]
    notes = [f"the srun must run {tasks_text(config)}"]
    signal = plan.teardown.early_signal
    if signal:
        notes.append(f"add `#SBATCH --signal={signal}` (time for nsys to write before the limit)")
    if plan.in_container or config.cluster.container_runtime == "pyxis":
        notes.append(
            f"in a container, mount {config.cluster.shared_fs} at the same path (nsys, this "
            "folder and the reports are there)"
        )
    return [*lines, *[f"# {note}" for note in notes]]


def env_file(config: Config, plan: ProfilePlan) -> ArtifactSpec:
    prog = own_program(plan)
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
            "defaults": list(plan.facts.own_job_env.pairs()),
            "nodes": config.cluster.nodes,
            "needs_head_node": prog.needs_head_node,
            "nemo_overrides": NEMO_OVERRIDES_FILE in prog.files,
            "wrapper": WRAPPER,
            "command": prog.command,
            "report_dir": config.capture.report_dir,
            "tasks_text": tasks_text(config),
        },
    )
