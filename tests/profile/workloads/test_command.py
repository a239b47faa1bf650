"""Any program as the user's job runs it (workloads/command.py): its argv as written, with the
helper's window (hook) or its own cudaProfilerApi window (native), whose steps nsysgen cannot
tell."""

from __future__ import annotations

import re

from nsysgen.profile.plan_types import LaunchShell
from nsysgen.profile.workloads.base import HELPER_STEPS
from nsysgen.profile.workloads.command import PROGRAM_STEPS, WORKLOAD, CommandSettings
from nsysgen.profile.workloads.steps import step_facts, step_ranges
from tests.profile.configs import config

SHELL = LaunchShell(nnodes="${N}", job_id="${J}", head_node="${H}")
ARGV = "workload.command.argv=[deepspeed,train.py,'--lr=1e-4']"


def test_the_program_is_its_argv_with_the_helpers_window() -> None:
    chosen = config("workload=command", "capture=steps", ARGV)
    steps = step_facts(chosen)
    program = WORKLOAD.program(chosen, SHELL, steps)
    assert program.command == ("deepspeed", "train.py", "--lr=1e-4")
    assert program.site and program.env == steps.env and program.files == steps.files
    assert not program.needs_head_node


def test_its_own_window_leaves_the_program_alone_and_its_steps_unchecked() -> None:
    chosen = config("workload=command", "capture=steps", "capture.step_method=native", ARGV)
    program = WORKLOAD.program(chosen, SHELL, step_facts(chosen))
    assert (program.env, program.site, program.files) == ((), False, ())
    assert step_ranges(chosen) == PROGRAM_STEPS
    assert re.search(PROGRAM_STEPS.regex, "step 3") is None  # matches no range at all
    assert step_ranges(config("workload=command", "capture=steps")) == HELPER_STEPS


def test_its_block_is_typed() -> None:
    settings = config("workload=command", ARGV).workload.settings
    assert settings == CommandSettings(
        source=None, loop_line=None, step_expr=None, argv=("deepspeed", "train.py", "--lr=1e-4")
    )
    assert WORKLOAD.step_methods == ("hook", "native") and not WORKLOAD.uses_nccl
