"""The report size model (estimate.py): the seconds a capture records by its mode, the GPUs one
report holds (a node's launcher: every GPU, or a command's own --nproc_per_node), and the bytes
the calibrated model gives for them."""

from __future__ import annotations

import pytest

from nsysgen.profile import nccl_run
from nsysgen.profile.estimate import (
    calibration,
    captured_seconds,
    estimate_report_size,
    gpus_per_report,
)
from tests.profile.configs import config


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (("capture.duration=45",), (45.0, "45 s window")),
        (
            ("workload=fsdp", "capture.duration=0"),
            (3570.0, "up to 3570 s (delay to the job's time limit)"),
        ),
        (
            ("cluster=local", "capture.duration=0"),
            (3598.0, "up to 3598 s (delay to the job's time limit)"),
        ),
        (
            ("workload=fsdp", "capture=steps"),
            (10.0, "5 steps x 2.0 s (workload.estimate.step_seconds)"),
        ),
        (("capture=nvtx",), (60.0, "60 s assumed for one NVTX range")),
    ],
    ids=["fixed-window", "to-the-limit", "no-link-figures", "steps", "nvtx"],
)
def test_the_seconds_a_capture_records(
    overrides: tuple[str, ...], expected: tuple[float, str]
) -> None:
    assert captured_seconds(config(*overrides)) == expected


def test_an_open_window_on_nccl_tests_ends_with_their_slow_run() -> None:
    default = config()  # nccl-tests on 2 x p5, from 2 s to the end of the program
    run = nccl_run.estimate(default)
    assert run is not None
    seconds, why = captured_seconds(default)
    assert seconds == run.slow_seconds - 2
    assert why.startswith(f"{seconds:.0f} s: from the delay to nccl-tests' end at half")
    # A delay past the run's end records nothing of it.
    assert captured_seconds(config("capture.delay=30"))[0] == 0.0


COMMAND = ("workload=command", "workload.launch=per_node")


@pytest.mark.parametrize(
    ("overrides", "gpus"),
    [
        (("workload=nccl",), 1),
        (("workload=fsdp",), 8),
        ((*COMMAND, "workload.command.argv=[torchrun,'--nproc_per_node=4',t.py]"), 4),
        ((*COMMAND, "workload.command.argv=[torchrun,--nproc-per-node,'2',t.py]"), 2),
        ((*COMMAND, "workload.command.argv=[torchrun,'--nproc_per_node=gpu',t.py]"), 8),
        ((*COMMAND, "workload.command.argv=[torchrun,--nproc_per_node]"), 8),
    ],
    ids=["per-gpu", "torchrun-per-node", "own-count", "own-count-apart", "not-a-count", "no-value"],
)
def test_the_gpus_one_report_holds(overrides: tuple[str, ...], gpus: int) -> None:
    assert gpus_per_report(config(*overrides)) == gpus


def test_a_cuda_report_grows_with_the_kernels_of_every_gpu_it_holds() -> None:
    model = calibration()
    size = estimate_report_size(config("workload=fsdp"))  # 60 s x 5000 kernels/s x 8 GPUs
    assert size.bytes_per_report == round(
        model["base_cuda_bytes"] + model["bytes_per_kernel"] * 2_400_000
    )
    assert size.basis.startswith(
        "60 s window; 2,400,000 kernels at workload.estimate.kernels_per_second=5000 (one GPU) "
        "x 8 GPUs of a node in one report; "
    )


def test_a_cpu_only_report_grows_with_the_seconds_and_gpu_metrics_are_named() -> None:
    model = calibration()
    plain = estimate_report_size(config("capture.trace=[nvtx]", "capture.duration=45"))
    assert plain.bytes_per_report == round(
        model["base_cpu_bytes"] + model["bytes_per_cpu_second"] * 45
    )
    assert plain.basis.startswith("45 s window; ")
    metrics = estimate_report_size(
        config("capture.trace=[nvtx]", "capture.duration=45", "capture.gpu_metrics=true")
    )
    # The GPU-metrics data is counted per collector by the plan, not in every report.
    assert metrics.bytes_per_report == plain.bytes_per_report
    assert metrics.basis == (
        f"{plain.basis}; +{model['gpu_metrics_bytes']:,.0f} B for a report with GPU metrics"
    )
