"""What every workload plug-in shares (workloads/base.py): the ranks that mark the step window
(every worker of a recorded node under a per-node launcher), torchrun's rendezvous on the head
node as shell words, the helper's program, and the defaults a plug-in inherits."""

from __future__ import annotations

import pytest

from nsysgen.output.render import ShellExpr
from nsysgen.profile.plan_types import LaunchShell, Program, StepFacts
from nsysgen.profile.workloads.base import Defaults, helper_program, torchrun, window_ranks
from tests.profile.configs import config

SHELL = LaunchShell(nnodes="${N}", job_id="${J}", head_node="${H}")


@pytest.mark.parametrize(
    ("overrides", "ranks"),
    [
        (("capture.ranks=[9,0]",), "9,0"),
        (("capture.ranks=one_per_node",), "one_per_node"),
        (("capture.ranks=all",), "all"),
        (("workload=fsdp", "capture.ranks=one_per_node"), "all"),
        (("workload=fsdp", "capture.ranks=[0,9]"), "all"),  # both nodes: every rank
        (("workload=fsdp", "capture.ranks=[9]"), "8,9,10,11,12,13,14,15"),
        (
            ("workload=fsdp", "capture.ranks=[3]", "cluster.nodes=3", "cluster.gpus_per_node=2"),
            "2,3",
        ),
    ],
    ids=[
        "per-gpu-listed",
        "per-gpu-policy",
        "per-gpu-all",
        "per-node-policy",
        "per-node-every-node",
        "per-node-one-node",
        "per-node-small-nodes",
    ],
)
def test_the_ranks_that_mark_the_window(overrides: tuple[str, ...], ranks: str) -> None:
    assert window_ranks(config(*overrides)) == ranks


def test_torchrun_rendezvous_on_the_head_node_read_at_run_time() -> None:
    words = torchrun(config("workload=fsdp", "cluster.gpus_per_node=4"), SHELL, 29400)
    assert words == (
        "torchrun",
        "--nproc_per_node=4",
        "--nnodes=${N}",
        "--rdzv_id=${J}",
        "--rdzv_backend=c10d",
        "--rdzv_endpoint=${H}:29400",
    )
    # The job's values are shell words, expanded at run time; the rest is quoted.
    assert [isinstance(word, ShellExpr) for word in words] == [
        False,
        False,
        True,
        True,
        False,
        True,
    ]


def test_the_helpers_program_carries_the_step_window() -> None:
    steps = StepFacts("hook", (("NSYSGEN_PROFILE_FIRST_STEP", "3"),), True, True, ("f1", "f2"))
    assert helper_program(("python3", "t.py"), steps, head_node=True) == Program(
        ("python3", "t.py"), (("NSYSGEN_PROFILE_FIRST_STEP", "3"),), True, True, ("f1", "f2")
    )
    assert helper_program(("a",), StepFacts(), head_node=False) == Program(("a",))


def test_the_defaults_a_plug_in_inherits() -> None:
    plain = config()
    assert Defaults().files(plain, StepFacts(files=("x", "y"))) == ("x", "y")
    assert Defaults().overrides(plain) == ()
    assert (Defaults.step_methods, Defaults.native, Defaults.native_ranges) == ((), None, None)
