"""Targets render the facts the plan carries (issue 41): change a fact in the plan and every
file that shows it changes with it, so no target derives it again from the config."""

from __future__ import annotations

import dataclasses

import pytest

from nsysgen.config.compose import Composer
from nsysgen.drivers.pipeline import build_config
from nsysgen.output.render import ArtifactSpec, render
from nsysgen.profile.plan_types import (
    EnvVar,
    JobEnv,
    ProfilePlan,
    RecipeRun,
    StepFacts,
    Teardown,
)
from nsysgen.targets import TARGETS

MARK = "NSYSGEN_TEST_MARK"


def rendered(*overrides: str, change: bool) -> str:
    """Every file of the folder as one text, from the plan as built or with its facts changed."""
    config, plan, _ = build_config(Composer().compose(list(overrides)))
    if change:
        plan = marked(plan)
    specs: list[ArtifactSpec] = TARGETS[config.target.name].artifacts(config, plan)
    return "\n".join(f.text for f in render(specs, "nsysgen"))


def marked(plan: ProfilePlan) -> ProfilePlan:
    """The plan with a marker in each fact a target renders."""
    facts = plan.facts
    env = JobEnv((*facts.job_env.variables, EnvVar(MARK, "job-env", "cluster.env.X", "test")), ())
    own = JobEnv((EnvVar(MARK, "own-env", "cluster.env.X", "test"),), ())
    steps = dataclasses.replace(facts.steps, env=((MARK, "step-env"),))
    program = plan.program and dataclasses.replace(plan.program, env=((MARK, "step-env"),))
    return dataclasses.replace(
        plan,
        facts=dataclasses.replace(
            facts,
            job_env=env,
            own_job_env=own,
            steps=steps,
            recipes=(RecipeRun("nvtx_sum", (), "marked-recipe-folder"),),
        ),
        program=program,
        teardown=Teardown(write_s=4321, early_signal="TERM@4321"),
    )


@pytest.mark.parametrize(
    ("overrides", "shown"),
    [
        (["workload=fsdp", "capture=steps"], ["job-env", "step-env", "TERM@4321", "4321"]),
        (
            ["workload=fsdp", "capture=steps", "target.job_script=yours"],
            ["own-env", "step-env", "TERM@4321"],
        ),
        (
            ["experiment=fsdp-p5-eks", "capture=steps", "capture.step_method=hook"],
            ["job-env", "step-env", "4321"],
        ),
    ],  # fmt: skip
    ids=["slurm", "slurm-own-script", "eks"],
)
def test_a_fact_changed_in_the_plan_changes_the_files(
    overrides: list[str], shown: list[str]
) -> None:
    plain, changed = rendered(*overrides, change=False), rendered(*overrides, change=True)
    assert "marked-recipe-folder" in changed and "marked-recipe-folder" not in plain
    for text in shown:
        assert text in changed and text not in plain, text


def test_the_plan_carries_the_step_facts_of_capture_steps() -> None:
    config, plan, _ = build_config(
        Composer().compose(["workload=fsdp", "capture=steps", "capture.step_method=hook"])
    )
    steps = plan.facts.steps
    assert steps == StepFacts(
        method="hook",
        env=steps.env,
        site=True,
        marks=True,
        files=("nsysgen-site/sitecustomize.py", "nsysgen-site/nsysgen_window.py"),
        ranks=steps.ranks,
        ranges=steps.ranges,
    )
    assert dict(steps.env)["NSYSGEN_PROFILE_FIRST_STEP"] == str(config.capture.first_step)
    assert plan.program is not None and plan.program.site and plan.program.env == steps.env
