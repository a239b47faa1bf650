"""A job script of the user's own (nsysgen/targets/slurm/own.py): the lines it needs, with the
folder quoted, the shape its srun must have, the signal and container notes only where they
apply, and nsysgen-env.sh defining only NSYSGEN_ names (besides nsysgen's environment
defaults), with the program's own names renamed to them."""

from __future__ import annotations

import re

import pytest

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import build_config
from nsysgen.model import Config
from nsysgen.output.render import render
from nsysgen.profile.plan_types import ProfilePlan
from nsysgen.targets.slurm.own import env_file, own_program, own_script_change
from nsysgen.targets.slurm.sbatch import program

YOURS = "target.job_script=yours"
# A name a line of bash defines: NAME=, export NAME=, mapfile -t NAME.
DEFINED = re.compile(r"(?m)^\s*(?:export\s+|mapfile\s+-t\s+)?([A-Za-z_]\w*)(?:=|\s+<)")


@pytest.fixture(scope="module")
def composer() -> Composer:
    return Composer()


def built(composer: Composer, *overrides: str) -> tuple[Config, ProfilePlan]:
    config, plan, _ = build_config(composer.compose([YOURS, *overrides]), False)
    return config, plan


def test_the_program_names_nsysgen_env_sh_defines(composer: Composer) -> None:
    _, plan = built(composer, "workload=nemo", "capture=steps")
    assert program(plan).command[-1] == "${nemo_overrides[@]}"  # as job.sbatch names it
    assert own_program(plan).command[-1] == "${NSYSGEN_NEMO_OVERRIDES[@]}"
    assert own_program(plan).command[:-1] == program(plan).command[:-1]


def test_a_bare_metal_job_needs_two_lines_and_its_shape(composer: Composer) -> None:
    config, plan = built(composer, "cluster=local", "workload=fsdp")
    lines = own_script_change(config, plan, "/my folder")
    assert lines[0] == "source '/my folder/nsysgen-env.sh'"
    assert lines[1].startswith('srun [your srun options] "$NSYSGEN_EXEC" torchrun ')
    assert '"--rdzv_endpoint=${NSYSGEN_HEAD_NODE}:29500"' in lines[1]
    assert lines[2:] == ["# the srun must run 2 tasks on 2 nodes (one launcher per node)"]


def test_a_signal_and_a_container_add_their_notes(composer: Composer) -> None:
    config, plan = built(composer)
    assert own_script_change(config, plan, "/f")[2:] == [
        "# the srun must run 16 tasks on 2 nodes (8 per node, a task per GPU)",
        "# add `#SBATCH --signal=TERM@60` (time for nsys to write before the limit)",
        "# in a container, mount /fsx at the same path (nsys, this folder and the reports are "
        "there)",
    ]


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        (["cluster=local", "workload=fsdp"], ["NSYSGEN_ENV", "NSYSGEN_EXEC", "NSYSGEN_HEAD_NODE"]),
        (["workload=nemo", "capture=steps"],
         ["NSYSGEN_ENV", "NSYSGEN_EXEC", "NSYSGEN_NEMO_OVERRIDES"]),
        (["workload=fsdp", "capture=steps"],
         ["NSYSGEN_ENV", "NSYSGEN_EXEC", "NSYSGEN_HEAD_NODE", "NSYSGEN_PROFILE_FIRST_STEP",
          "NSYSGEN_PROFILE_LAST_STEP", "NSYSGEN_PROFILE_RANKS"]),
    ],
    ids=["torchrun", "nemo", "steps"],
)  # fmt: skip
def test_nsysgen_env_sh_defines_only_its_own_names(
    composer: Composer, overrides: list[str], names: list[str]
) -> None:
    config, plan = built(composer, *overrides)
    spec = env_file(config, plan)
    assert spec.path == "nsysgen-env.sh" and not spec.executable  # sourced, never run
    text = render([spec], "nsysgen")[0].text
    defaults = {name for name, _ in spec.context["defaults"]}
    assert sorted(set(DEFINED.findall(text)) - defaults) == names
