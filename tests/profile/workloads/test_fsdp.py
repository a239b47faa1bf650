"""PyTorch FSDP (workloads/fsdp.py): its script and arguments under one torchrun per node, with
the step helper's variables, folder and files where capture=steps marks the steps."""

from __future__ import annotations

from nsysgen.profile.plan_types import SITE_FILE, SITE_HELPER_FILE, LaunchShell, Program
from nsysgen.profile.workloads.fsdp import WORKLOAD, FsdpSettings
from nsysgen.profile.workloads.steps import step_facts
from tests.profile.configs import config

SHELL = LaunchShell(nnodes="${N}", job_id="${J}", head_node="${H}")
SETTINGS = (
    "workload=fsdp",
    "workload.fsdp.script=/fsx/t.py",
    "workload.fsdp.args=[--a,'--b=2']",
    "workload.fsdp.rdzv_port=29600",
)


def test_the_script_under_torchrun_in_a_window() -> None:
    chosen = config(*SETTINGS)
    assert WORKLOAD.program(chosen, SHELL, step_facts(chosen)) == Program(
        command=(
            "torchrun",
            "--nproc_per_node=8",
            "--nnodes=${N}",
            "--rdzv_id=${J}",
            "--rdzv_backend=c10d",
            "--rdzv_endpoint=${H}:29600",
            "/fsx/t.py",
            "--a",
            "--b=2",
        ),
        needs_head_node=True,
    )


def test_the_step_helper_goes_with_it_in_capture_steps() -> None:
    chosen = config(*SETTINGS, "capture=steps", "capture.ranks=[0]")
    program = WORKLOAD.program(chosen, SHELL, step_facts(chosen))
    assert program.command[-3:] == ("/fsx/t.py", "--a", "--b=2")
    assert dict(program.env)["NSYSGEN_PROFILE_RANKS"] == "0,1,2,3,4,5,6,7"
    assert program.site and program.files == (SITE_FILE, SITE_HELPER_FILE)


def test_its_block_and_what_it_can_do() -> None:
    assert config(*SETTINGS).workload.settings == FsdpSettings(
        source=None, loop_line=None, step_expr=None, script="/fsx/t.py", args=("--a", "--b=2"),
        rdzv_port=29600,
    )  # fmt: skip
    assert (WORKLOAD.launches, WORKLOAD.step_methods) == (("per_node",), ("hook", "patch"))
