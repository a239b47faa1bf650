"""The `nsys profile` switches of a recorded rank (nsys_cmd.py): the window by capture mode, the
trace and sampling switches, the version's own switches, the user's extra_args last, and the
node-wide collectors apart from them."""

from __future__ import annotations

import pytest

from nsysgen.profile.nsys_cmd import collector_args, extra_collectors, profile_args, window_args
from tests.profile.configs import config

STEP_RANGE = ["--capture-range=cudaProfilerApi", "--capture-range-end=stop"]


@pytest.mark.parametrize(
    ("overrides", "args"),
    [
        ((), ["--delay=2"]),  # nccl-tests: from 2 s to their end
        (("workload=fsdp",), ["--delay=30", "--duration=60", "--kill=none"]),
        (("capture.delay=0", "capture.duration=0"), []),
        (("capture.delay=0", "capture.duration=10"), ["--duration=10", "--kill=none"]),
        (("workload=fsdp", "capture=steps"), STEP_RANGE),
        (
            ("capture=nvtx",),
            [
                "--capture-range=nvtx",
                "--nvtx-capture=profile",
                "--capture-range-end=stop",
                "--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0",
            ],
        ),
    ],
    ids=["delayed", "window", "whole-program", "bounded", "steps", "nvtx"],
)
def test_the_window_switches_by_capture_mode(overrides: tuple[str, ...], args: list[str]) -> None:
    assert window_args(config(*overrides)) == args


def test_an_nvtx_range_of_a_domain_is_named_range_at_domain() -> None:
    chosen = config("capture=nvtx", "capture.nvtx_range=train", "capture.nvtx_domain=mine")
    assert window_args(chosen)[1] == "--nvtx-capture=train@mine"


def test_the_switches_of_a_recorded_rank_in_order() -> None:
    assert profile_args(config(), "/fsx/r/%q{SLURM_PROCID}") == [
        "--trace=cuda,nvtx",
        "--sample=none",
        "--cpuctxsw=none",
        "--delay=2",
        "--cuda-event-trace=false",
        "--force-overwrite=true",
        "--output=/fsx/r/%q{SLURM_PROCID}",
    ]
    newest = config(
        "nsight=2026.4.1",
        "capture.nccl_trace=[default]",
        "capture.pytorch=[autograd-nvtx]",
        "capture.sample=process-tree",
        "capture.extra_args=['--stats=false']",
    )
    assert profile_args(newest, "OUT", boxed=False) == [
        "--trace=cuda,nvtx,nccl",
        "--sample=process-tree",
        "--cpuctxsw=none",
        "--delay=2",
        "--nccl-trace=default",
        "--pytorch=autograd-nvtx",
        "--cuda-event-trace=false",
        "--force-overwrite=true",
        "--output=OUT",
        "--stats=false",
    ]


def test_no_cuda_event_switch_where_nsys_lacks_it_or_cuda_is_not_traced() -> None:
    assert "--cuda-event-trace=false" not in profile_args(config("nsight=2023.4.4"), "OUT")
    assert "--cuda-event-trace=false" not in profile_args(config("capture.trace=[nvtx]"), "OUT")


def test_node_wide_collectors_are_apart_from_the_ranks_switches() -> None:
    both = config("capture.efa_metrics=true", "capture.gpu_metrics=true")
    assert collector_args(both) == ["--enable=efa_metrics", "--gpu-metrics-devices=all"]
    assert collector_args(config()) == []
    assert not any("metrics" in arg for arg in profile_args(both, "OUT"))


@pytest.mark.parametrize(
    ("extra", "collects"),
    [
        ("['--enable=nvml_metrics']", True),
        ("['--gpu-metrics-devices=all']", True),
        ("['--gpu-metrics-device=0']", True),
        ("['--kill=none', '--enabled=x']", False),
    ],
)
def test_extra_args_that_start_collectors_in_every_recorded_task(
    extra: str, collects: bool
) -> None:
    assert extra_collectors(config(f"capture.extra_args={extra}")) is collects
