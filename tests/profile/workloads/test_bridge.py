"""Megatron Bridge (workloads/bridge.py): its recipe script under torchrun, and with its own
window the profiling.* overrides for iterations FIRST..LAST (start FIRST-1) and the ranks, an
empty list for every rank."""

from __future__ import annotations

from nsysgen.profile.plan_types import LaunchShell
from nsysgen.profile.workloads.bridge import WORKLOAD, BridgeSettings, bridge_overrides
from nsysgen.profile.workloads.steps import step_facts
from tests.profile.configs import config

SHELL = LaunchShell(nnodes="${N}", job_id="${J}", head_node="${H}")
STEPS = ("workload=bridge", "capture=steps")


def overrides(*extra: str) -> tuple[str, ...]:
    chosen = config(*STEPS, *extra)
    return bridge_overrides(chosen, step_facts(chosen))


def test_its_own_window_for_the_steps_and_ranks() -> None:
    assert overrides("capture.ranks=[3]") == (
        "profiling.use_nsys_profiler=true",
        "profiling.profile_step_start=9",
        "profiling.profile_step_end=14",
        "profiling.profile_ranks=[0,1,2,3,4,5,6,7]",  # every worker of node 0
    )
    assert overrides("capture.ranks=all")[-1] == "profiling.profile_ranks=[]"
    assert overrides("capture.step_method=hook") == ()  # the helper's window instead


def test_the_program_runs_the_recipe_with_the_windows_overrides_last() -> None:
    chosen = config(*STEPS, "capture.ranks=all", "workload.bridge.recipe=qwen3_8b")
    program = WORKLOAD.program(chosen, SHELL, step_facts(chosen))
    assert program.command[:6] == (
        "torchrun",
        "--nproc_per_node=8",
        "--nnodes=${N}",
        "--rdzv_id=${J}",
        "--rdzv_backend=c10d",
        "--rdzv_endpoint=${H}:29500",
    )
    assert program.command[6:] == (
        "/opt/Megatron-Bridge/scripts/training/run_recipe.py",
        "--recipe=qwen3_8b",
        "train.train_iters=100",
        "train.global_batch_size=64",
        "train.micro_batch_size=1",
        "profiling.use_nsys_profiler=true",
        "profiling.profile_step_start=9",
        "profiling.profile_step_end=14",
        "profiling.profile_ranks=[]",
    )
    assert program.needs_head_node and program.env == () and program.files == ()


def test_its_block_is_typed() -> None:
    settings = config("workload=bridge").workload.settings
    assert isinstance(settings, BridgeSettings)
    assert (settings.rdzv_port, settings.overrides[0]) == (29500, "train.train_iters=100")
    assert WORKLOAD.native is not None and WORKLOAD.native.first == 1
