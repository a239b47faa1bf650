"""Megatron-LM (workloads/megatron.py): its own window by --profile for the iterations its log
numbers FIRST..LAST (start FIRST-1), --profile-ranks with every worker of the recorded nodes
unless that is every rank, and no window arguments when the helper marks the steps."""

from __future__ import annotations

from nsysgen.profile.plan_types import LaunchShell, StepFacts
from nsysgen.profile.workloads.megatron import (
    MEGATRON_STEPS,
    WORKLOAD,
    MegatronSettings,
    megatron_args,
    native_window,
)
from nsysgen.profile.workloads.steps import step_facts, step_ranges
from tests.profile.configs import config

SHELL = LaunchShell(nnodes="${N}", job_id="${J}", head_node="${H}")
STEPS = ("workload=megatron", "capture=steps")


def test_the_window_in_megatrons_numbers() -> None:
    chosen = config(*STEPS, "capture.first_step=5", "capture.last_step=7")
    assert native_window(chosen, StepFacts(method="native", ranks="all")) == (4, 7, None)
    assert native_window(chosen, StepFacts(method="native", ranks="8,9")) == (4, 7, (8, 9))
    assert native_window(chosen, StepFacts(method="hook", ranks="all")) is None


def test_profile_arguments_name_the_recorded_nodes_workers() -> None:
    every = config(*STEPS)  # rank 0 of 2 nodes: node 0's 8 workers
    assert megatron_args(every, step_facts(every)) == (
        "--profile",
        "--profile-step-start=9",
        "--profile-step-end=14",
        "--profile-ranks",
        *map(str, range(8)),
    )
    both = config(*STEPS, "capture.ranks=[0,8]")  # every node: every rank, no list
    assert megatron_args(both, step_facts(both)) == (
        "--profile",
        "--profile-step-start=9",
        "--profile-step-end=14",
    )
    hook = config(*STEPS, "capture.step_method=hook")
    assert megatron_args(hook, step_facts(hook)) == ()


def test_the_program_ends_with_the_window_arguments() -> None:
    chosen = config(*STEPS, "capture.ranks=all", "workload.megatron.args=[--bf16]")
    program = WORKLOAD.program(chosen, SHELL, step_facts(chosen))
    assert program.command[5:] == (
        "--rdzv_endpoint=${H}:29500",
        "/opt/Megatron-Bridge/3rdparty/Megatron-LM/pretrain_gpt.py",
        "--bf16",
        "--profile",
        "--profile-step-start=9",
        "--profile-step-end=14",
    )
    assert (program.env, program.site, program.files) == ((), False, ())


def test_its_block_and_how_its_reports_show_steps() -> None:
    settings = config("workload=megatron").workload.settings
    assert isinstance(settings, MegatronSettings) and "--train-iters=100" in settings.args
    assert step_ranges(config(*STEPS)) == MEGATRON_STEPS  # no range per iteration
    assert WORKLOAD.step_methods == ("native", "hook")
    assert WORKLOAD.native is not None and WORKLOAD.native.at_step == "iteration + 1"
