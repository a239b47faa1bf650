"""Issue 17 across ranks on two GPUs with NCCL: the per rank x step analysis over real reports.

bench/gpu/x2.sh ran tests/workloads/gpu_train.py --shape=launch --ddp --allreduce=explicit on
the nvidia-h200-x2 machine (one rank per H200, one NCCL all-reduce of the gradients per step),
compiled by nsysgen (capture=steps 8..15, ranks=all, generated wrapper and training-loop patch,
the stand-in srun), three jobs: clean; rank 1 sleeping 40 ms at the start of every step; rank 0
sleeping 40 ms at the start of steps 11 and 14. bench/gpu/x2_collect.py put the exports, trimmed
to the tables the analysis reads (bench/gpu/x2.py `trim`) and xz-compressed, in
tests/data/gpu/nccl17 with the nsys 2025.3.1 `nsys stats` CSVs of the full exports.

Unlike the gloo run of tests/analyze/test_steps.py (two ranks sharing one GPU), the evidence
here is the NCCL kernels' durations. The device tests are skipped while that data is absent;
the trim test runs on the issue-8 exports that are in the repository.
"""

from __future__ import annotations

import importlib.util
import json
import lzma
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from nsysgen.analyze.report import read_export
from tests.analyze.test_steps import assert_agrees_with_nsys_stats
from tests.conftest import REPO, RunCli

DATA = REPO / "tests" / "data" / "gpu" / "nccl17"
GPU = REPO / "tests" / "data" / "gpu"
MS = 1_000_000
FIRST, LAST = 8, 15
JUDGED = list(range(FIRST + 1, LAST + 1))  # the first recorded step is never judged
DELAY_MS = 40.0
HICCUP_STEPS = [11, 14]
needs_data = pytest.mark.skipif(
    not any(DATA.glob("x2-*.sqlite.xz")),
    reason="no 2-GPU NCCL device data yet: tests/data/gpu/nccl17 is written by "
    "bench/gpu/x2_collect.py from a run of bench/gpu/x2.sh on nvidia-h200-x2",
)


def load_x2() -> ModuleType:
    spec = importlib.util.spec_from_file_location("x2", REPO / "bench/gpu/x2.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def device_summary(tmp_path: Path, run_cli: RunCli, job: str) -> dict[str, Any]:
    folder = tmp_path / job
    folder.mkdir()
    for packed in sorted(DATA.glob(f"x2-{job}_*.sqlite.xz")):
        (folder / packed.stem).write_bytes(lzma.decompress(packed.read_bytes()))
    assert len(list(folder.iterdir())) == 2, "one report per rank"
    out = tmp_path / f"out-{job}"
    result = run_cli("analyze", str(folder), "--output", str(out), "--serial")
    assert result.code == 0, result.err
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def step(summary: dict[str, Any], rank: int, number: int) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        s for s in summary["ranks"][rank]["steps"] if s["step"] == number
    ]
    assert len(found) == 1
    return found[0]


@needs_data
@pytest.mark.slow
def test_clean_run_names_no_straggler(tmp_path: Path, run_cli: RunCli) -> None:
    summary = device_summary(tmp_path, run_cli, "clean")
    assert summary["stragglers"] == []
    # The evidence is NCCL: one all-reduce kernel per rank and step, matched across the ranks,
    # each rank on its own GPU.
    assert [r["rank"] for r in summary["ranks"]] == [0, 1]
    assert sorted(r["device"] for r in summary["ranks"]) == [0, 1]
    for rank in summary["ranks"]:
        assert [s["step"] for s in rank["steps"]] == list(range(FIRST, LAST + 1))
        assert rank["totals"]["nccl_kernels"] == LAST - FIRST + 1
    assert summary["collectives_matched"] == LAST - FIRST + 1
    assert summary["steps_with_unequal_collective_counts"] == []


@needs_data
@pytest.mark.slow
def test_rank_late_on_every_step_is_the_slow_rank(tmp_path: Path, run_cli: RunCli) -> None:
    summary = device_summary(tmp_path, run_cli, "slow")
    (straggler,) = summary["stragglers"]
    assert {k: straggler[k] for k in ("rank", "steps", "kind", "evidence")} == {
        "rank": 1,
        "steps": JUDGED,
        "kind": "slow rank",
        "evidence": ["collectives"],
    }
    assert straggler["late_on_fraction_of_steps"] == 1.0
    assert straggler["mean_lateness_ms"] == pytest.approx(DELAY_MS, rel=0.25)
    # Rank 0 waited for it in its all-reduce on every judged step.
    for number in JUDGED:
        assert step(summary, 0, number)["wait_ms"] == pytest.approx(DELAY_MS, rel=0.25)
        assert step(summary, 1, number)["wait_ms"] == 0.0


@needs_data
@pytest.mark.slow
def test_rank_late_on_two_steps_is_a_hiccup_on_exactly_those(
    tmp_path: Path, run_cli: RunCli
) -> None:
    summary = device_summary(tmp_path, run_cli, "hiccup")
    (straggler,) = summary["stragglers"]
    assert {k: straggler[k] for k in ("rank", "steps", "kind", "evidence")} == {
        "rank": 0,
        "steps": HICCUP_STEPS,
        "kind": "hiccup",
        "evidence": ["collectives"],
    }
    assert straggler["mean_lateness_ms"] == pytest.approx(DELAY_MS, rel=0.25)
    for number in HICCUP_STEPS:
        assert step(summary, 1, number)["wait_ms"] == pytest.approx(DELAY_MS, rel=0.25)


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("job", ["clean", "slow", "hiccup"])
def test_device_figures_agree_with_nsys_stats(tmp_path: Path, run_cli: RunCli, job: str) -> None:
    assert_agrees_with_nsys_stats(device_summary(tmp_path, run_cli, job), DATA / "nsys-stats")


@pytest.mark.parametrize("name", ["nccl-allreduce.sqlite", "nccl-allreduce-blobs.sqlite"])
def test_trimmed_export_reads_like_the_full_one(tmp_path: Path, name: str) -> None:
    """bench/gpu/x2.py's trim keeps everything the analysis reads, on full nsys 2025.3.1 exports
    with NCCL kernels, NCCL's NVTX ranges and (blobs) their payloads."""
    x2 = load_x2()
    full, trimmed = GPU / name, tmp_path / "trimmed.sqlite"
    counts = x2.trim(full, trimmed)
    assert set(counts) <= set(x2.KEEP)
    assert read_export(trimmed, "r").tables == read_export(full, "r").tables
    calls = read_export(full, "r").calls
    assert read_export(trimmed, "r").calls == calls and calls
    if "blobs" in name:
        assert all(c.size_bytes for c in calls)  # the message sizes come from the payloads
    assert trimmed.stat().st_size < full.stat().st_size / 2
