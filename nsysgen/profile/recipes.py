"""Which `nsys recipe` runs fit a capture: what was traced, what the workload does, and what the
chosen nsys version offers."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from nsysgen.model import Config
from nsysgen.profile.plan_types import RecipeRun
from nsysgen.profile.workloads.command import CommandSettings
from nsysgen.profile.workloads.registry import workload_kind

# A command's launcher of ranks that talk through NCCL (torchrun's, deepspeed's, accelerate's
# workers; `python -m torch.distributed.run`).
_NCCL_LAUNCHERS = ("torchrun", "deepspeed", "accelerate")
_NCCL_MODULES = ("torch.distributed.run", "torch.distributed.launch")


def uses_nccl(config: Config) -> bool:
    """The workload's ranks talk through NCCL: its kind's, or a command that launches them."""
    if workload_kind(config).uses_nccl:
        return True
    settings = config.workload.settings
    if not isinstance(settings, CommandSettings):
        return False
    return any(
        PurePosixPath(arg).name in _NCCL_LAUNCHERS or arg in _NCCL_MODULES for arg in settings.argv
    )


def _fitting(config: Config) -> list[str]:
    traced = set(config.capture.trace)
    cuda, nvtx = "cuda" in traced, "nvtx" in traced
    picks = []
    if nvtx:
        picks.append("nvtx_sum")
    if "osrt" in traced:
        picks.append("osrt_sum")
    if cuda:
        picks += [
            "cuda_api_sum",
            "cuda_gpu_kern_sum",
            "cuda_gpu_mem_time_sum",
            "cuda_gpu_time_util_map",
        ]
    if cuda and nvtx:
        picks.append("nvtx_gpu_proj_sum")
    if cuda and uses_nccl(config):
        picks += ["nccl_sum", "nccl_gpu_time_util_map"]
    if config.capture.nccl_trace:
        picks.append("nccl_straggler")  # reads advanced NCCL tracing only (nsys 2026.4.1+)
    if config.capture.gpu_metrics:
        picks.append("gpu_metric_util_map")
    if config.capture.efa_metrics:
        picks.append("network_map_aws")
    return [recipe for recipe in picks if recipe in config.nsight.recipes]


def recipe_runs(config: Config) -> list[RecipeRun]:
    names = _fitting(config) if config.capture.recipes == "auto" else list(config.capture.recipes)
    runs = [RecipeRun(name, (), name) for name in names if name != "cuda_gpu_kern_pace"]
    if "cuda" in config.capture.trace and "cuda_gpu_kern_pace" in config.nsight.recipes:
        for kernel in config.capture.pace_kernels:
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", kernel)
            runs.append(
                RecipeRun("cuda_gpu_kern_pace", ("--name", kernel), f"cuda_gpu_kern_pace-{slug}")
            )
    return runs
