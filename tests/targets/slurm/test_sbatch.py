"""The batch scripts' parts (nsysgen/targets/slurm/sbatch.py): #SBATCH directives sorted, with
the cluster's gres and partition, the target's own extra options (true as a bare flag, false
left out) and values quoted where sbatch would split them; srun's arguments per launch, MPI and
container; and analyze.sbatch's own allocation."""

from __future__ import annotations

import pytest

from nsysgen.targets.slurm.sbatch import (
    analyze_sbatch,
    directive_value,
    sbatch_directives,
    srun_args,
)
from tests.profile.configs import planned

CONTAINER = ["--container-image=/fsx/images/nccl-tests.sqsh", "--container-mounts=/fsx:/fsx",
             "--no-container-remap-root"]  # fmt: skip
HYPERPOD = [
    "cluster=p4de", "cluster.partition=gpu", "+target.sbatch.comment='a b#c'",
    "+target.sbatch.requeue=true", "+target.sbatch.hold=false", "target.exclusive=false",
    "job.time_limit_min=125",
]  # fmt: skip


def test_the_default_directives_and_srun_arguments() -> None:
    config, plan = planned()
    assert sbatch_directives(config, plan) == [
        ("exclusive", ""), ("gres", "gpu:8"), ("job-name", "nccl-p5-slurm"), ("nodes", "2"),
        ("ntasks-per-node", "8"), ("output", "%x_%j.out"), ("signal", "TERM@60"),
        ("time", "01:00:00"),
    ]  # fmt: skip
    assert srun_args(config) == ["--label", "--mpi=pmix", *CONTAINER]


def test_extra_options_partition_and_quoting() -> None:
    config, plan = planned(*HYPERPOD)
    directives = dict(sbatch_directives(config, plan))
    assert directives["comment"] == '"a b#c"'  # sbatch would end the word at the space
    assert directives["requeue"] == ""  # true: a bare flag
    assert "hold" not in directives and "exclusive" not in directives  # false: left out
    assert (directives["partition"], directives["time"]) == ("gpu", "02:05:00")
    assert [name for name, _ in sbatch_directives(config, plan)] == sorted(directives)


def test_a_launcher_per_node_asks_one_task_per_node() -> None:
    config, plan = planned("workload=fsdp", "cluster=local")
    assert srun_args(config) == [
        "--label",
        "--ntasks=${SLURM_JOB_NUM_NODES}",
        "--ntasks-per-node=1",
    ]
    assert dict(sbatch_directives(config, plan))["ntasks-per-node"] == "1"


def test_analyze_sbatch_has_its_own_allocation() -> None:
    config, plan = planned(*HYPERPOD)
    context = analyze_sbatch(config, plan).context
    assert context["directives"] == [
        ("cpus-per-task", "1"), ("job-name", "nccl-p4de-slurm-analyze"), ("nodes", "1"),
        ("ntasks-per-node", "1"), ("output", "%x_%j.out"), ("partition", "gpu"),
        ("time", "00:10:00"),
    ]  # fmt: skip
    assert context["nccl_tests"] is True and context["reports"] == plan.reports


@pytest.mark.parametrize(
    ("value", "written"), [("x", "x"), ("", '""'), ("a\tb", '"a\tb"'), ("#1", '"#1"')]
)
def test_a_directive_value_is_quoted_where_sbatch_would_split_it(value: str, written: str) -> None:
    assert directive_value(value) == written
