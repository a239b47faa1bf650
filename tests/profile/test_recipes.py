"""Which `nsys recipe` runs fit a capture (recipes.py): picked from what is traced, whether the
workload talks NCCL and the collectors, kept only where the nsys version has the recipe; a listed
cuda_gpu_kern_pace runs once per kernel in a folder named after it."""

from __future__ import annotations

from nsysgen.profile.plan_types import RecipeRun
from nsysgen.profile.recipes import recipe_runs
from tests.profile.configs import config

CUDA = ["cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_time_util_map"]
NCCL = ["nccl_sum", "nccl_gpu_time_util_map"]


def names(*overrides: str) -> list[str]:
    return [run.recipe for run in recipe_runs(config(*overrides))]


def test_auto_picks_what_the_trace_and_the_workload_give() -> None:
    assert names() == ["nvtx_sum", *CUDA, "nvtx_gpu_proj_sum", *NCCL]
    assert names("workload=python") == ["nvtx_sum", *CUDA, "nvtx_gpu_proj_sum"]
    assert names("capture.trace=[nvtx,osrt]") == ["nvtx_sum", "osrt_sum"]
    collectors = ("capture.gpu_metrics=true", "capture.efa_metrics=true")
    assert names("capture.trace=[cuda]", *collectors) == [
        *CUDA,
        *NCCL,
        "gpu_metric_util_map",
        "network_map_aws",
    ]


def test_auto_keeps_only_the_recipes_of_the_nsys_version() -> None:
    assert names("nsight=2026.4.1", "capture.nccl_trace=[default]")[-1] == "nccl_straggler"
    assert "nccl_straggler" not in names("nsight=2025.6.1", "capture.nccl_trace=[default]")
    assert "network_map_aws" not in names("nsight=2023.4.4", "capture.efa_metrics=true")


def test_listed_recipes_run_as_listed_and_pace_once_per_kernel() -> None:
    runs = recipe_runs(
        config(
            "capture.recipes=[nvtx_sum,cuda_gpu_kern_pace]",
            "capture.pace_kernels=['ncclDevKernel_AllReduce Sum<f32>', 'a/b']",
        )
    )
    assert runs == [
        RecipeRun("nvtx_sum", (), "nvtx_sum"),
        RecipeRun(
            "cuda_gpu_kern_pace",
            ("--name", "ncclDevKernel_AllReduce Sum<f32>"),
            "cuda_gpu_kern_pace-ncclDevKernel_AllReduce-Sum-f32-",
        ),
        RecipeRun("cuda_gpu_kern_pace", ("--name", "a/b"), "cuda_gpu_kern_pace-a-b"),
    ]


def test_no_kernel_pace_without_a_cuda_trace() -> None:
    assert names("capture.trace=[nvtx]", "capture.pace_kernels=[k1]") == ["nvtx_sum"]
    assert names("capture.pace_kernels=[k1]")[-1] == "cuda_gpu_kern_pace"


def test_a_command_that_launches_ranks_through_torchrun_gets_the_nccl_recipes() -> None:
    command = "workload=command"
    assert "nccl_sum" in names(
        command, 'workload.command.argv=[torchrun,"--nproc-per-node=8",t.py]'
    )
    assert "nccl_sum" in names(
        command, "workload.command.argv=[python3,-m,torch.distributed.run,t.py]"
    )
    assert "nccl_sum" not in names(command, "workload.command.argv=[/fsx/bin/train,--iters,'10']")
