"""The profile plan type (plan_types/plan.py): its report count, the nsys command line of its
first recorded task with that task's collectors, and the switches a target's injector owns left
out of what it is handed."""

from __future__ import annotations

import dataclasses

from nsysgen.profile.plan_types import AnalysisJob, ProfilePlan
from tests.profile.configs import planned


def program(plan: ProfilePlan) -> tuple[str, ...]:
    """The program as the launch starts it, ending the nsys command (the declared one)."""
    assert plan.program is not None
    return plan.program.command


def test_the_program_ends_the_command_arguments_and_all() -> None:
    _, plan = planned(
        "workload=fsdp", "workload.fsdp.script=/fsx/mine.py", "workload.fsdp.args=[--x]"
    )
    assert plan.nsys_command[-2:] == ("/fsx/mine.py", "--x")


def test_the_command_of_the_first_recorded_task_with_its_collectors() -> None:
    _, plan = planned("capture.ranks=one_per_node", "capture.gpu_metrics=true")
    assert plan.reports == len(plan.recorded) == 2
    assert plan.recorded[0].collectors
    assert plan.nsys_command == (
        "nsys",
        "profile",
        *plan.profile_args,
        "--gpu-metrics-devices=all",
        *program(plan),
    )


def test_a_first_task_without_collectors_runs_the_plain_switches() -> None:
    # A target that runs the collectors in no task (a plug-in target may choose so).
    _, plan = planned("capture.ranks=[1,2]", "capture.gpu_metrics=true")
    quiet = dataclasses.replace(
        plan, recorded=dataclasses.replace(plan.recorded, collects=lambda t, n, lo: False)
    )
    assert quiet.nsys_command == ("nsys", "profile", *plan.profile_args, *program(plan))
    empty = dataclasses.replace(plan, recorded=dataclasses.replace(plan.recorded, listed=()))
    assert empty.reports == 0
    assert empty.nsys_command == ("nsys", "profile", *plan.profile_args, *program(plan))


def test_switches_the_injector_owns_are_not_handed_over() -> None:
    _, plan = planned()
    owned = dataclasses.replace(plan, owned_switches=("--output", "--delay"))
    assert owned.handed_over(("--delay=2", "--trace=cuda", "--output=x", "--outputs=y")) == (
        "--trace=cuda",
        "--outputs=y",
    )
    assert "--output" not in " ".join(owned.nsys_command)
    assert plan.handed_over(("--delay=2",)) == ("--delay=2",)


def test_the_analysis_job_counts_its_workers() -> None:
    assert AnalysisJob(16, 3, 4, 8, 30, 100.0).workers == 12
