"""`plan` says what the compiled files will do: the size of a report that holds a whole node,
the command a task really runs when the target's injector owns some switches, and where the
reports land."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from nsysgen.profile import pause
from nsysgen.profile.estimate import calibration
from tests.conftest import RunCli

IMAGE = "workload.container_image=registry.example/train:1"
COMMAND = "workload.command.argv=[python,/fsx/train.py]"


def _plan(run_cli: RunCli, *overrides: str) -> dict[str, Any]:
    result = run_cli("plan", "--json", *overrides)
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert isinstance(data, dict)
    return data


def _kernel_bytes(plan: dict[str, Any]) -> float:
    return float(plan["bytes_per_report"]) - calibration()["base_cuda_bytes"]


def test_a_whole_node_report_holds_every_gpu_of_the_node(run_cli: RunCli) -> None:
    base = ("workload=command", COMMAND, "capture.duration=60")
    one = _plan(run_cli, *base, "workload.launch=per_gpu")
    node = _plan(run_cli, *base, "workload.launch=per_node")
    assert round(_kernel_bytes(node) / _kernel_bytes(one)) == 8  # p5: 8 GPUs a node
    assert "x 8 GPUs of a node in one report" in node["estimate_basis"]
    assert "GPUs of a node" not in one["estimate_basis"]
    # ... and the pause at the close is predicted from the whole report.
    close = pause.CLOSE_BASE_S + pause.CLOSE_S_PER_MB * node["bytes_per_report"] / 1e6
    assert node["pause_at_window_edges"]["close_s"] == round(close, 1)
    assert node["pause_at_window_edges"]["gpus_per_report"] == 8
    text = " ".join(run_cli("plan", *base, "workload.launch=per_node").out.split())
    assert "a report of 8 GPUs' processes counted as one flush" in text


def test_the_software_cuda_trace_is_sized_as_a_cuda_trace(run_cli: RunCli) -> None:
    base = ("workload=fsdp", "capture.duration=60")
    assert (
        _plan(run_cli, *base, "capture.trace=[cuda-sw,nvtx]", "nsight=2026.4.1")["bytes_per_report"]
        == _plan(run_cli, *base, "nsight=2026.4.1")["bytes_per_report"]
    )


def test_the_reports_line_adds_the_gpu_metrics(run_cli: RunCli) -> None:
    result = run_cli("plan", "workload=fsdp", "capture.gpu_metrics=true")
    line = " ".join(result.out.split())
    assert " of GPU metrics = ~" in line
    plan = _plan(run_cli, "workload=fsdp", "capture.gpu_metrics=true")
    assert plan["total_bytes"] > plan["reports"] * plan["bytes_per_report"]


def test_a_sweep_counts_whole_node_recordings_in_nodes(run_cli: RunCli) -> None:
    result = run_cli("plan", "-m", "workload=fsdp,nccl")
    assert result.code == 0, result.err
    rows = {line.split()[0]: line for line in result.out.splitlines()[1:] if line.strip()}
    assert "1 of 2 nodes (16 ranks)" in rows["workload-fsdp"]
    assert "1 of 16 ranks" in rows["workload-nccl"]


@pytest.mark.parametrize(
    ("capture", "coordinated"), [("capture=window", True), ("capture=steps", False)]
)
def test_the_operators_command_is_the_one_plan_shows(
    run_cli: RunCli, tmp_path: Path, capture: str, coordinated: bool
) -> None:
    """The Nsight Operator 26 names and uploads reports itself and, in Coordinator Mode, opens
    the window: plan's command leaves out what it owns, exactly as the Helm values do."""
    overrides = ("target=eks", "workload=fsdp", IMAGE, capture)
    plan = _plan(run_cli, *overrides)
    assert run_cli(*overrides, f"output_dir={tmp_path}").code == 0
    [values_file] = tmp_path.glob("*/values-injector.yaml")
    tool = yaml.safe_load(values_file.read_text())["nsight-injector"]["nsightToolConfig"]
    assert tool["coordinator"] is coordinated
    command = plan["nsys_command"]
    flags = shlex.split(tool["nsightToolArgs"])
    assert command[:2] == ["nsys", "profile"] and command[2 : 2 + len(flags)] == flags
    # The program as the injector sees it: the very process its include pattern matches.
    program = " ".join(command[2 + len(flags) :])
    assert program.startswith("/usr/bin/python3 /usr/local/bin/torchrun --nproc_per_node=8 ")
    assert re.fullmatch(tool["injectionIncludePatterns"][0], program), program
    switches = {arg.split("=")[0] for arg in command}
    assert "--output" not in switches
    if coordinated:
        assert not switches & {"--delay", "--duration", "--kill"}
    text = " ".join(run_cli("plan", *overrides).out.split())
    assert "in minio://nsight-reports/<report_uuid>" in text


def test_slurm_reports_land_in_the_runs_folder(run_cli: RunCli) -> None:
    text = " ".join(run_cli("plan", "workload=fsdp").out.split())
    assert "in /fsx/nsight-reports/fsdp-p5-slurm/job%q{SLURM_JOB_ID}" in text


def test_an_nvtx_window_ends_with_its_range(run_cli: RunCli) -> None:
    text = " ".join(run_cli("plan", "workload=fsdp", "capture=nvtx").out.split())
    assert "ends at the range's end" in text
    assert "--capture-range-end=stop" in text and "when it closes" in text


def test_nccl_tests_run_one_gpu_a_task_only(run_cli: RunCli, tmp_path: Path) -> None:
    # nccl-tests get -g 1: one task a node would leave the node's other GPUs idle.
    result = run_cli("workload=nccl", "workload.launch=per_node", f"output_dir={tmp_path}")
    assert result.code == 2
    assert "workload.launch: workload kind nccl does not run per_node (allowed: per_gpu)" in (
        result.err
    )
    assert list(tmp_path.iterdir()) == []


def test_a_commands_own_process_count_sizes_its_node_report(run_cli: RunCli) -> None:
    argv = "workload.command.argv=[torchrun,--nproc_per_node,'4',/fsx/train.py]"
    four = _plan(run_cli, "workload=command", argv, "workload.launch=per_node")
    assert "x 4 GPUs of a node in one report" in four["estimate_basis"]
    assert four["pause_at_window_edges"]["gpus_per_report"] == 4


@pytest.mark.parametrize(
    ("overrides", "paid_by"),
    [
        (
            ("workload=fsdp",),
            "paid by the 8 recorded rank(s), and through every collective the other 8",
        ),
        (
            ("workload=nccl",),
            "paid by the 1 recorded rank(s), and through every collective the other 15",
        ),
        (("target=eks", "workload=fsdp", IMAGE), "paid by all 16 ranks (all recorded)"),
    ],
)
def test_the_slowdown_counts_the_ranks_a_report_records(
    run_cli: RunCli, overrides: tuple[str, ...], paid_by: str
) -> None:
    assert paid_by in " ".join(run_cli("plan", *overrides).out.split())
