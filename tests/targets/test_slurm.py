"""The Slurm target (nsysgen/targets/slurm/__init__.py): the folder's files for nsysgen's job
script, for the user's own (nsysgen-env.sh instead of job.sbatch) and with an upload, the README
listing exactly them; the wrapper's shape check only for a job script of the user's own; the
HyperPod lint; and the notes printed only for a job script of one's own."""

from __future__ import annotations

import pytest

from nsysgen.profile.lints import run_lints
from nsysgen.targets.slurm import TARGET, _wrapper, artifacts
from nsysgen.targets.slurm.own import OWN_SHELL, SHELL
from nsysgen.targets.slurm.tasks import SlurmSettings
from tests.profile.configs import planned

COMMON = ["analyze.sbatch", "nsys-exec", "install-nsight.sh", "recipes.sh", "nsysgen-expect.json"]


@pytest.mark.parametrize(
    ("overrides", "paths"),
    [
        ([], ["job.sbatch", *COMMON, "README.md"]),
        (["target.job_script=yours"], ["nsysgen-env.sh", *COMMON, "README.md"]),
        (["workload=fsdp", "capture.s3_uri=s3://b-1/p"],
         ["job.sbatch", *COMMON, "upload-reports.sh", "README.md"]),
        (["workload=nemo", "capture=steps"],
         ["job.sbatch", *COMMON[:4], "nemo-overrides.txt", COMMON[4], "README.md"]),
    ],
    ids=["default", "own-script", "upload", "nemo"],
)  # fmt: skip
def test_the_folders_files_and_the_readme_lists_them(
    overrides: list[str], paths: list[str]
) -> None:
    config, plan = planned(*overrides)
    specs = artifacts(config, plan)
    assert [spec.path for spec in specs] == paths
    assert specs[-1].comment == "<!--"
    assert specs[-1].context["files"] == sorted(paths[:-1])


def test_the_wrapper_checks_the_shape_only_of_ones_own_srun() -> None:
    config, plan = planned()
    context = _wrapper(config, plan).context
    assert (context["shape"], context["uses_local_id"], context["site_dir"]) == (None, False, None)
    config, plan = planned("target.job_script=yours", "capture.ranks=one_per_node")
    context = _wrapper(config, plan).context
    assert context["shape"] == (16, 2, 8)  # tasks, nodes, tasks per node
    assert context["uses_local_id"] and context["profiled_text"] == "local rank 0 of every node"
    config, plan = planned("workload=fsdp", "capture=steps")
    assert _wrapper(config, plan).context["site_dir"] == "nsysgen-site"


def test_hyperpod_refuses_gres_and_pmix() -> None:
    config, plan = planned("cluster=p4de", "cluster.slurm.platform=hyperpod")
    findings = run_lints(config, plan, TARGET.lints)
    assert [(f.lint, f.severity, f.path) for f in findings] == [
        ("NSG011", "error", "cluster.slurm.gres"),
        ("NSG011", "error", "cluster.slurm.mpi"),
    ]
    config, plan = planned(
        "cluster=p4de", "cluster.slurm.platform=hyperpod", "cluster.slurm.gres=false",
        "cluster.slurm.mpi=null",
    )  # fmt: skip
    assert run_lints(config, plan, TARGET.lints) == []


def test_a_short_limit_warns_that_the_early_signal_may_come_before_the_capture() -> None:
    """Slurm sends --signal up to a minute early: on a 2-minute job, at once (NSG026)."""
    config, plan = planned("workload=fsdp", "capture.duration=0", "job.time_limit_min=2")
    (finding,) = [f for f in run_lints(config, plan, TARGET.lints) if f.lint == "NSG026"]
    assert (finding.severity, finding.path) == ("warning", "job.time_limit_min")
    assert finding.message == (
        "Slurm may send --signal=TERM@60 up to a minute before that (sbatch(1)): with a time "
        "limit of 2 min it can come as the job starts, before the capture opens (about 30 s "
        "after launch), and the report then holds nothing (allowed: job.time_limit_min >= 4)"
    )
    # The limit it allows is enough, whatever the report's size at that limit.
    config, plan = planned("workload=fsdp", "capture.duration=0", "job.time_limit_min=4")
    assert [f for f in run_lints(config, plan, TARGET.lints) if f.lint == "NSG026"] == []


def test_notes_and_shell_only_for_ones_own_job_script() -> None:
    config, plan = planned()
    assert TARGET.notes(config, plan, "/f") == ()
    assert TARGET.launch_shell(config) == SHELL
    assert isinstance(config.target.settings, SlurmSettings)
    config, plan = planned("target.job_script=yours")
    notes = TARGET.notes(config, plan, "/f")
    assert notes[:3] == (
        "your job script: source the setup's environment, then start the program through",
        "nsys-exec in its srun line (as this folder's README says):",
        "  source /f/nsysgen-env.sh",
    )
    assert TARGET.launch_shell(config) == OWN_SHELL
