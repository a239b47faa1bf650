"""Every semantic check and error path: exit 2, each problem once with its path and the allowed
values, no traceback, nothing written. And the configs next to them that must pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.conftest import REPO, RunCli

LOCAL = ["cluster=local", "workload=python"]

# name -> (overrides, the exact problem lines expected)
INVALID = {
    "rank-outside-world": (
        ["capture.ranks=[0,16]", *LOCAL],
        [
            "capture.ranks[1]: rank 16 is outside the world size 16 (2 nodes x 8 GPUs) "
            "(allowed: 0..15)"
        ],
    ),
    "window-past-time-limit": (
        ["workload=fsdp", "capture.delay=300", "capture.duration=120", "job.time_limit_min=6"],
        [
            "capture.duration: [NSG003] the window ends 420 s after launch (delay 300 + duration 120), after "
            "the job's time limit of 360 s (job.time_limit_min=6) (allowed: delay + duration <= 360)"
        ],
    ),
    "delay-past-time-limit": (
        ["workload=fsdp", "capture.delay=600", "capture.duration=0", "job.time_limit_min=10"],
        [
            "capture.delay: [NSG003] the window opens 600 s after launch, at or after the job's time limit of "
            "600 s (allowed: delay < 600)"
        ],
    ),
    "efa-without-efa-devices": (
        ["capture.efa_metrics=true", *LOCAL],
        ["capture.efa_metrics: cluster local (local) has no EFA devices (allowed: false)"],
    ),
    "efa-without-plugin": (
        ["capture.efa_metrics=true", "nsight=2023.4.4"],
        [
            "capture.efa_metrics: nsys 2023.4.4 has no efa_metrics plugin (allowed: false, or an "
            "nsight version >= 2024.3 such as nsight=2024.4.1 or nsight=2025.3.1)"
        ],
    ),
    "gpu-metrics-without-node-flag": (
        ["capture.gpu_metrics=true", "nsight=2024.4.1"],
        [
            "capture.gpu_metrics: nsys 2024.4.1 (--gpu-metrics-device) cannot sample every GPU of a "
            "node from one rank (allowed: false, or nsight=2025.3.1)"
        ],
    ),
    "step-window-reversed": (
        ["workload=fsdp", "capture=steps", "capture.first_step=9", "capture.last_step=4"],
        [
            "capture.first_step: first step 9 is after last step 4 (allowed: first_step <= "
            "last_step; both steps are recorded)"
        ],
    ),
    "steps-on-nccl": (
        ["capture=steps"],
        [
            "capture.mode: workload nccl (nccl) has no training steps that call cudaProfilerStart "
            "(allowed: window, nvtx)"
        ],
    ),
    "steps-without-cuda": (
        ["workload=fsdp", "capture=steps", "capture.trace=[nvtx]"],
        [
            "capture.trace: capture by steps (cudaProfilerApi) needs 'cuda' traced (allowed: a list "
            "with 'cuda')"
        ],
    ),
    "nvtx-without-nvtx": (
        ["capture=nvtx", "capture.trace=[cuda]"],
        ["capture.trace: capture by NVTX range needs 'nvtx' traced (allowed: a list with 'nvtx')"],
    ),
    "trace-unknown-to-version": (
        ["nsight=2023.4.4", "capture.trace=[cuda,nvtx,cuda-hw]"],
        [
            "capture.trace[2]: 'cuda-hw' is not known to nsys 2023.4.4 (allowed: cuda, nvtx, cublas, "
            "cublas-verbose, cusparse, cusparse-verbose, mpi, oshmem, ucx, osrt, cudnn, opengl, "
            "opengl-annotations, openacc, openmp, nvvideo, vulkan, vulkan-annotations, python-gil, "
            "none)"
        ],
    ),
    "nccl-trace-value": (
        ["capture.trace=[cuda,nccl]"],
        [
            "capture.trace[1]: 'nccl' is not known to nsys 2025.3.1 (allowed: cuda, cuda-hw, nvtx, "
            "cublas, cublas-verbose, cusolver, cusolver-verbose, cusparse, cusparse-verbose, mpi, "
            "oshmem, ucx, osrt, cudnn, opengl, opengl-annotations, openacc, openmp, nvvideo, vulkan, "
            "vulkan-annotations, python-gil, gds, none)"
        ],
    ),
    "recipe-unknown-to-version": (
        ["nsight=2023.4.4", "capture.recipes=[nvtx_sum,network_map_aws]"],
        [
            "capture.recipes[1]: 'network_map_aws' is not known to nsys 2023.4.4 (allowed: "
            "cuda_api_sum, cuda_api_sync, cuda_gpu_kern_pace, cuda_gpu_kern_sum, cuda_gpu_mem_size_sum, "
            "cuda_gpu_mem_time_sum, cuda_gpu_time_util_map, cuda_memcpy_async, cuda_memcpy_sync, "
            "cuda_memset_sync, diff, dx12_mem_ops, gpu_gaps, gpu_metric_util_map, gpu_time_util, "
            "mpi_gpu_time_util_map, mpi_sum, nccl_gpu_proj_sum, nccl_gpu_time_util_map, nccl_sum, "
            "nic_metric_map, nvtx_gpu_proj_pace, nvtx_gpu_proj_sum, nvtx_gpu_proj_trace, nvtx_pace, "
            "nvtx_sum, osrt_sum, ucx_gpu_time_util_map)"
        ],
    ),
    "recipe-needing-arguments": (
        ["capture.recipes=[nvtx_pace]"],
        [
            "capture.recipes[0]: 'nvtx_pace' needs arguments that nsysgen does not pass yet "
            "(allowed: recipes without required arguments)"
        ],
    ),
    "reports-outside-shared-fs": (
        ["capture.report_dir=/home/me/reports"],
        [
            "capture.report_dir: [NSG007] /home/me/reports is outside the shared filesystem /fsx of cluster "
            "p5, so reports of other nodes would be lost (allowed: a path under /fsx)"
        ],
    ),
    "reports-beside-shared-fs": (
        ["capture.report_dir=/fsx2/reports"],
        [
            "capture.report_dir: [NSG007] /fsx2/reports is outside the shared filesystem /fsx of cluster "
            "p5, so reports of other nodes would be lost (allowed: a path under /fsx)"
        ],
    ),
    "schema-several-problems": (
        ["capture.delayy=5", "capture.sample=cpu", "cluster.nodes=0", "capture.ranks=[-1]"],
        [
            "capture.delayy: unknown key (did you mean delay?) (allowed keys: cpuctxsw, cuda_trace, delay, duration, "
            "efa_metrics, extra_args, first_step, gpu_metrics, last_step, mode, nccl_trace, "
            "nvtx_domain, nvtx_range, optimizer_steps, pace_kernels, pytorch, ranks, recipes, "
            "report_dir, report_name, s3_uri, sample, step_method, trace)",
            "capture.ranks[0]: -1 is less than the minimum of 0 (allowed: >= 0)",
            "capture.sample: 'cpu' is not allowed (allowed: 'none', 'process-tree', 'system-wide')",
            "cluster.nodes: 0 is less than the minimum of 1 (allowed: >= 1)",
        ],
    ),
    "schema-wrong-type": (
        ["capture.delay=soon"],
        ["capture.delay: 'soon' is not allowed (allowed: a whole number of seconds >= 0, or auto)"],
    ),
    "fsdp-per-gpu": (
        ["workload=fsdp", "workload.launch=per_gpu"],
        [
            "workload.launch: 'per_gpu' is not allowed (allowed: per_node (FSDP runs one torchrun "
            "per node))"
        ],
    ),
    "several-semantic-problems": (
        ["capture.ranks=[3,99]", "capture.efa_metrics=true", "capture.report_dir=/tmp/r", *LOCAL],
        [
            "capture.efa_metrics: cluster local (local) has no EFA devices (allowed: false)",
            "capture.ranks[1]: rank 99 is outside the world size 16 (2 nodes x 8 GPUs) "
            "(allowed: 0..15)",
            "capture.report_dir: [NSG007] /tmp/r is outside the shared filesystem /tmp/nsysgen-shared of "
            "cluster local, so reports of other nodes would be lost "
            "(allowed: a path under /tmp/nsysgen-shared)",
        ],
    ),
}

# Configs right next to the invalid ones, which must compile.
VALID = {
    "rank-at-world-edge": ["capture.ranks=[0,15]", *LOCAL],
    "window-at-time-limit": [
        "workload=fsdp",
        "capture.delay=300",
        "capture.duration=60",
        "job.time_limit_min=6",
    ],
    "efa-on-p4de": ["cluster=p4de", "capture.efa_metrics=true", "nsight=2024.4.1"],
    "gpu-metrics-2025": ["capture.gpu_metrics=true", "nsight=2025.3.1"],
    "one-step-window": [
        "workload=fsdp",
        "capture=steps",
        "capture.first_step=4",
        "capture.last_step=4",
    ],
    "nemo-steps": ["workload=nemo", "capture=steps"],
    "trace-known-to-2025": ["capture.trace=[cuda,nvtx,cuda-hw]"],
    "reports-on-shared-fs-root": ["capture.report_dir=/fsx"],
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_config_exits_2_and_writes_nothing(
    name: str, tmp_path: Path, run_cli: RunCli
) -> None:
    overrides, expected = INVALID[name]
    out = tmp_path / "out"
    result = run_cli(*overrides, f"output_dir={out}")
    assert result.code == 2, result
    lines = result.err.splitlines()
    count = len(expected)
    assert lines[0] == f"error: invalid config ({count} problem{'s' if count > 1 else ''})"
    assert [line.strip() for line in lines[1:-1]] == expected
    assert lines[-1].startswith("  groups: capture=")
    assert "Traceback" not in result.err
    assert not out.exists()


@pytest.mark.parametrize("name", sorted(VALID))
def test_neighbouring_valid_config_compiles(name: str, tmp_path: Path, run_cli: RunCli) -> None:
    result = run_cli(*VALID[name], f"output_dir={tmp_path}")
    assert result.code == 0, result.err


def test_invalid_config_leaves_previous_output_untouched(tmp_path: Path, run_cli: RunCli) -> None:
    assert run_cli("job.name=keep", f"output_dir={tmp_path}").code == 0
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    result = run_cli("job.name=keep", "capture.ranks=[99]", f"output_dir={tmp_path}")
    assert result.code == 2
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_every_schema_is_valid_2020_12() -> None:
    for path in sorted((REPO / "schemas").glob("*.json")):
        Draft202012Validator.check_schema(json.loads(path.read_text()))


@pytest.mark.slow
@pytest.mark.parametrize("group", ["cluster", "workload", "capture", "target", "nsight"])
def test_every_packaged_option_composes_and_validates(
    group: str, run_cli: RunCli, tmp_path: Path
) -> None:
    from nsysgen.config.compose import Composer
    from nsysgen.config.validate import schema_issues

    composer = Composer()
    for option in composer.group_options(group):
        extra = ["workload=fsdp"] if group == "capture" and option == "steps" else []
        composed = composer.compose([f"{group}={option}", *extra])
        assert schema_issues(composed.data) == [], (group, option)
