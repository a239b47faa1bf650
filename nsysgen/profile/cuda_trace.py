"""Which CUDA trace a capture uses, and the --trace values nsys gets.

From nsys 2026.x (the catalog's `blackwell_cuda_trace: hardware`), `--trace=cuda` on a Blackwell
GPU is the CUDA hardware trace, and `cuda-sw` the software (CUPTI) one. Captures that start or
stop while the program runs (a delayed or bounded window, a cudaProfilerApi or NVTX range,
Coordinator Mode) have come back from the hardware trace with no kernels at all ("incomplete
CUPTI events dropped", measured with nsys 2026.3.1 under the Nsight Operator) and with crashes
in cudaMemcpyAsync (NVIDIA's srt-slurm); `cuda-sw` gave every kernel. So such captures trace
`cuda-sw` there unless the user asks for the hardware trace (capture.cuda_trace=hardware), which
lint NSG021 then questions.
"""

from __future__ import annotations

from nsysgen.model import Capture, Config


def blackwell(config: Config) -> bool:
    return config.cluster.blackwell


def time_boxed(capture: Capture) -> bool:
    """Whether the capture starts or stops while the program runs (anything but a capture of
    the whole program)."""
    return capture.mode != "window" or bool(capture.delay_s or capture.duration)


def hardware_by_default(config: Config) -> bool:
    """Whether `--trace=cuda` records the CUDA hardware trace on this cluster and version."""
    return blackwell(config) and config.nsight.blackwell_cuda_trace == "hardware"


def _cuda_value(config: Config, boxed: bool) -> str:
    """The --trace value that records CUDA as capture.cuda_trace asks."""
    choice = config.capture.cuda_trace
    hardware = hardware_by_default(config)
    if choice == "auto":
        choice = "software" if hardware and boxed else "default"
    if choice == "software":
        return "cuda-sw" if hardware else "cuda"
    if choice == "hardware":
        return "cuda" if hardware else "cuda-hw"
    return "cuda"


def trace_values(config: Config, boxed: bool | None = None) -> tuple[str, ...]:
    """capture.trace as nsys gets it: `cuda` as the CUDA trace choice says, `nccl` added for
    advanced NCCL tracing. `boxed`: whether the capture starts or stops while the program runs
    (None: as capture.* says; a target that opens the window itself says True)."""
    boxed = time_boxed(config.capture) if boxed is None else boxed
    values = [
        _cuda_value(config, boxed) if value == "cuda" else value for value in config.capture.trace
    ]
    if config.capture.nccl_trace and "nccl" not in values:
        values.append("nccl")
    return tuple(values)


def records_hardware(config: Config, boxed: bool | None = None) -> bool:
    """Whether the CUDA trace nsys gets is the hardware one."""
    values = trace_values(config, boxed)
    return "cuda-hw" in values or ("cuda" in values and hardware_by_default(config))
