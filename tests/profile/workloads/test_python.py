"""A Python script (workloads/python.py): interpreter, script and arguments, one per task, with
the step helper's window in capture=steps."""

from __future__ import annotations

from nsysgen.profile.plan_types import LaunchShell, Program
from nsysgen.profile.workloads.python import WORKLOAD, PythonSettings
from nsysgen.profile.workloads.steps import step_facts
from tests.profile.configs import config

SHELL = LaunchShell(nnodes="${N}", job_id="${J}", head_node="${H}")
SCRIPT = (
    "workload=python",
    "workload.python.interpreter=/usr/bin/python3.12",
    "workload.python.args=[--epochs,'3']",
)


def test_the_interpreter_runs_the_script_with_its_arguments() -> None:
    chosen = config(*SCRIPT)
    assert WORKLOAD.program(chosen, SHELL, step_facts(chosen)) == Program(
        ("/usr/bin/python3.12", "/fsx/train.py", "--epochs", "3")
    )


def test_the_step_helper_goes_with_it_in_capture_steps() -> None:
    chosen = config(*SCRIPT, "capture=steps", "capture.ranks=[0,3]")
    steps = step_facts(chosen)
    program = WORKLOAD.program(chosen, SHELL, steps)
    assert program.command == ("/usr/bin/python3.12", "/fsx/train.py", "--epochs", "3")
    assert (program.env, program.site, program.files) == (steps.env, True, steps.files)
    assert dict(program.env)["NSYSGEN_PROFILE_RANKS"] == "0,3"
    assert not program.needs_head_node


def test_its_block_is_typed() -> None:
    settings = config(*SCRIPT).workload.settings
    assert isinstance(settings, PythonSettings)
    assert (settings.interpreter, settings.args) == ("/usr/bin/python3.12", ("--epochs", "3"))
    assert WORKLOAD.launches == ("per_gpu", "per_node") and not WORKLOAD.uses_nccl
