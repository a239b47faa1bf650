"""The GPU proofs' claims hold in the committed results of the H200 runs (bench/gpu/RESULTS.md)."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

from tests.conftest import REPO

RESULTS = REPO / "bench" / "gpu" / "results"


def load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_results", REPO / "bench/gpu/check_results.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_gpu_results_hold_every_claim() -> None:
    checker = load_checker()
    prove = json.loads((RESULTS / "prove-2026-11-29.json").read_text())
    cost = json.loads((RESULTS / "cost-2026-11-29.json").read_text())
    assert checker.check(prove) == []
    assert checker.check(cost) == []
    assert "issue9_fsdp-node-all" in prove and "issue6_launch" in cost


def test_checker_catches_a_wrong_window() -> None:
    checker = load_checker()
    prove = json.loads((RESULTS / "prove-2026-11-29.json").read_text())
    prove["issue6_compute"]["steps_in_window_report"] = {"1": [39, 40, 41, 42, 43, 44]}
    prove["issue9_fsdp-gpu-all"]["reports"][1]["gpu_metrics"] = True
    problems = checker.check(prove)
    assert any("not exactly 40..44" in p for p in problems)
    assert any("GPU metrics in" in p for p in problems)


def test_session_scope_finding_is_in_the_ablation() -> None:
    ablation = json.loads((RESULTS / "ablation-2026-11-29.json").read_text())
    alone, every = ablation["session_scope"]["ranks=0"], ablation["session_scope"]["ranks=all"]
    counts_alone = sorted(p["kernels"] for p in alone["per_process"].values())
    counts_every = sorted(p["kernels"] for p in every["per_process"].values())
    assert counts_every == [265, 265]  # every worker marks the window: both complete
    assert counts_alone[0] < 265 <= counts_alone[1]  # rank 0 alone: rank 1 cut short
