"""nccl-tests (workloads/nccl.py): the benchmark binary with its size range, factor, checks and
iterations, one GPU a task, and no files or steps of its own."""

from __future__ import annotations

from nsysgen.profile.plan_types import LaunchShell, Program, StepFacts
from nsysgen.profile.workloads.nccl import WORKLOAD, NcclSettings, size_bytes
from tests.profile.configs import config

SHELL = LaunchShell(nnodes="${N}", job_id="${J}", head_node="${H}")


def test_the_binary_and_its_arguments() -> None:
    chosen = config(
        "workload.nccl.binary=all_gather_perf",
        "workload.nccl.build_dir=/opt/nt",
        "workload.nccl.min_bytes=1M",
        "workload.nccl.max_bytes=1G",
        "workload.nccl.step_factor=4",
        "workload.nccl.iterations=20",
        "workload.nccl.check=0",
    )
    assert WORKLOAD.program(chosen, SHELL, StepFacts()) == Program(
        command=(
            "/opt/nt/all_gather_perf",
            "-b",
            "1M",
            "-e",
            "1G",
            "-f",
            "4",
            "-g",
            "1",
            "-c",
            "0",
            "-n",
            "20",
        ),
        nccl_tests_log=True,  # the analysis job reads its result table from the log
    )


def test_its_capabilities_and_its_own_rule() -> None:
    """What nsysgen asks of the plug-in instead of its name: it runs nccl-tests (no collective
    timeout to weigh, its run's length estimated), its `auto` window, and its sizes' order."""
    assert WORKLOAD.runs_nccl_tests and WORKLOAD.auto_window == (2, 0)
    assert size_bytes("1M") == 1 << 20 and size_bytes("512") == 512
    backwards = config("workload.nccl.min_bytes=1G", "workload.nccl.max_bytes=1M")
    (issue,) = WORKLOAD.checks(backwards)
    assert (
        issue.path == "workload.nccl.min_bytes" and "nccl-tests would run no size" in issue.message
    )
    assert list(WORKLOAD.checks(config())) == []


def test_no_files_no_steps_one_gpu_a_task() -> None:
    chosen = config()
    assert WORKLOAD.files(chosen, StepFacts(files=("helper.py",))) == ()
    assert WORKLOAD.overrides(chosen) == ()
    assert (WORKLOAD.step_capture, WORKLOAD.step_ranges, WORKLOAD.launches) == (
        False,
        None,
        ("per_gpu",),
    )
    assert chosen.workload.settings == NcclSettings(
        "all_reduce_perf", "/opt/nccl-tests/build", "8", "2G", 2, 100, 1
    )
