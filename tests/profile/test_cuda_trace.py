"""Which CUDA trace nsys gets (cuda_trace.py): on Blackwell with nsys 2026.x a capture that
starts or stops while the program runs traces cuda-sw unless the hardware trace is asked for;
elsewhere `cuda` is the software trace and `hardware` means cuda-hw."""

from __future__ import annotations

import pytest

from nsysgen.profile.cuda_trace import records_hardware, time_boxed, trace_values
from tests.profile.configs import config

B200_2026 = ("cluster=p6-b200", "nsight=2026.4.1")


@pytest.mark.parametrize(
    ("overrides", "boxed", "trace", "hardware"),
    [
        ((*B200_2026, "capture.cuda_trace=auto"), True, ("cuda-sw", "nvtx"), False),
        ((*B200_2026, "capture.cuda_trace=auto"), False, ("cuda", "nvtx"), True),
        ((*B200_2026, "capture.cuda_trace=hardware"), True, ("cuda", "nvtx"), True),
        ((*B200_2026, "capture.cuda_trace=software"), False, ("cuda-sw", "nvtx"), False),
        (("cluster=p6-b200", "nsight=2025.3.1"), True, ("cuda", "nvtx"), False),
        (("nsight=2026.4.1", "capture.cuda_trace=auto"), True, ("cuda", "nvtx"), False),
        (("nsight=2025.3.1", "capture.cuda_trace=hardware"), True, ("cuda-hw", "nvtx"), True),
        (("nsight=2025.3.1", "capture.cuda_trace=software"), True, ("cuda", "nvtx"), False),
    ],
    ids=[
        "b200-auto-boxed",
        "b200-auto-whole-program",
        "b200-hardware",
        "b200-software",
        "b200-nsys-2025",
        "h100-nsys-2026",
        "h100-hardware",
        "h100-software",
    ],
)
def test_the_cuda_value_follows_gpu_version_choice_and_window(
    overrides: tuple[str, ...], boxed: bool, trace: tuple[str, ...], hardware: bool
) -> None:
    chosen = config(*overrides)
    assert trace_values(chosen, boxed) == trace
    assert records_hardware(chosen, boxed) is hardware


@pytest.mark.parametrize(
    ("overrides", "boxed"),
    [
        (("capture.delay=0", "capture.duration=0"), False),
        (("capture.delay=5", "capture.duration=0"), True),
        (("capture.delay=0", "capture.duration=60"), True),
        (("workload=fsdp", "capture=steps"), True),
        (("capture=nvtx",), True),
    ],
    ids=["whole-program", "delayed", "bounded", "steps", "nvtx"],
)
def test_only_a_window_of_the_whole_program_is_not_time_boxed(
    overrides: tuple[str, ...], boxed: bool
) -> None:
    chosen = config(*B200_2026, *overrides)
    assert time_boxed(chosen.capture) is boxed
    # Without `boxed`, trace_values reads it from capture.* the same way.
    assert trace_values(chosen) == (("cuda-sw" if boxed else "cuda"), "nvtx")


def test_advanced_nccl_tracing_adds_nccl_once() -> None:
    assert trace_values(config("nsight=2026.4.1", "capture.nccl_trace=[default]")) == (
        "cuda",
        "nvtx",
        "nccl",
    )
    listed = config("nsight=2026.4.1", "capture.nccl_trace=[default]", "capture.trace=[nccl,cuda]")
    assert trace_values(listed) == ("nccl", "cuda")
