"""The assertions of the GPU proofs, over a summary.json that bench/gpu/prove.py wrote.

prove.py runs them on the GPU machine at the end of a run; tests/analyze/test_gpu_results.py
runs them in CI over the committed results, so a rerun that breaks a claim fails in both places.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def check_step_window(summary: dict[str, Any]) -> list[str]:
    problems = []
    for shape in ("compute", "launch"):
        result = summary.get(f"issue6_{shape}")
        if result is None:
            continue
        steps = list(result["steps_in_window_report"].values())
        if steps != [[40, 41, 42, 43, 44]]:
            problems.append(f"issue 6 {shape}: steps in the report {steps}, not exactly 40..44")
        sizes = result["report_bytes"]
        if not sizes["window_40_44"] < sizes["whole_run"] / 4:
            problems.append(f"issue 6 {shape}: window report not much smaller: {sizes}")
    return problems


def check_nccl(summary: dict[str, Any]) -> list[str]:
    result = summary.get("issue8_nccl")
    if result is None:
        return []
    calls = sum(result["sizes"]["calls_per_size"].values())
    problems = []
    reports = result["reports"]
    if len(reports) != 1 or "_rank0_" not in reports[0]:
        problems.append(f"issue 8: expected one report, of rank 0; got {reports}")
    if result["kernels"]["nccl"] != calls:
        problems.append(f"issue 8: {result['kernels']['nccl']} NCCL kernels for {calls} calls")
    return problems


def check_fsdp(summary: dict[str, Any]) -> list[str]:
    problems = []
    node = summary.get("issue9_fsdp-node-all")
    if node is None:
        return []
    (report,) = node["reports"]
    if not report["report"].endswith("_node0_gpunode1_allgpus.nsys-rep"):
        problems.append(f"issue 9: node report name {report['report']}")
    if sorted(report["steps_per_pid"].values()) != [[10, 11, 12, 13, 14]] * 2:
        problems.append(f"issue 9: node report steps {report['steps_per_pid']}")
    if report["kernels"]["pids"] != 2 or report["kernels"]["nccl"] == 0:
        problems.append(f"issue 9: node report kernels {report['kernels']}")
    per_gpu = summary["issue9_fsdp-gpu-all"]["reports"]
    names = sorted(r["report"].split("_job")[1].split("_", 1)[1] for r in per_gpu)
    if names != ["rank0_node0_gpunode1.nsys-rep", "rank1_node0_gpunode1.nsys-rep"]:
        problems.append(f"issue 9: per-GPU report names {names}")
    for report in per_gpu:
        if list(report["steps_per_pid"].values()) != [[10, 11, 12, 13, 14]]:
            problems.append(f"issue 9: {report['report']} steps {report['steps_per_pid']}")
        if report["kernels"]["nccl"] == 0:
            problems.append(f"issue 9: {report['report']} has no NCCL kernels")
    collectors = [r["report"] for r in per_gpu if r["gpu_metrics"]]
    if len(collectors) != 1 or "_rank0_" not in collectors[0]:
        problems.append(f"issue 9: GPU metrics in {collectors}, expected rank 0's report only")
    return problems


def check(summary: dict[str, Any]) -> list[str]:
    return check_step_window(summary) + check_nccl(summary) + check_fsdp(summary)


if __name__ == "__main__":
    found = check(json.loads(Path(sys.argv[1]).read_text()))
    print("\n".join(found) or "all GPU claims hold")
    raise SystemExit(1 if found else 0)
