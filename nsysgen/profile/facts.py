"""What a config implies whatever the target, derived once for the plan (`Facts`): the job's
environment, how capture=steps records the steps, the files the program reads, the recipe
runs, which tasks record and which run the node-wide collectors. Targets read these from the
plan and derive none of them again."""

from __future__ import annotations

from nsysgen.model import Config
from nsysgen.profile import nsys_cmd
from nsysgen.profile.environment import job_env
from nsysgen.profile.plan_types import Facts
from nsysgen.profile.ranks import select
from nsysgen.profile.recipes import recipe_runs
from nsysgen.profile.workloads.registry import workload_kind
from nsysgen.profile.workloads.steps import step_facts


def derive(config: Config) -> Facts:
    steps = step_facts(config)
    workload = workload_kind(config)
    return Facts(
        job_env=job_env(config),
        own_job_env=job_env(config, own_job=True),
        steps=steps,
        files=workload.files(config, steps),
        overrides=workload.overrides(config),
        recipes=tuple(recipe_runs(config)),
        selection=select(config),
        collector_args=tuple(nsys_cmd.collector_args(config)),
        extra_collectors=nsys_cmd.extra_collectors(config),
    )
