"""Issue 17 across ranks on two GPUs with NCCL: the per rank x step analysis over real reports.

bench/gpu/x2.sh ran tests/workloads/gpu_train.py --shape=launch --ddp --allreduce=explicit on
the nvidia-h200-x2 machine (one rank per H200, one NCCL all-reduce of the gradients per step),
compiled by nsysgen (capture=steps 8..15, ranks=all, generated wrapper and training-loop patch,
the stand-in srun), three jobs: clean; rank 1 sleeping 40 ms at the start of every step; rank 0
sleeping 40 ms at the start of steps 11 and 14. bench/gpu/x2_collect.py put the exports, trimmed
to the tables the analysis reads (bench/gpu/x2.py `trim`) and xz-compressed, in
tests/data/gpu/nccl17 with the nsys 2025.3.1 `nsys stats` CSVs of the full exports.

Unlike the gloo run of tests/analyze/read/test_steps.py (two ranks sharing one GPU), the evidence
here is the NCCL kernels' durations. That data cannot be made while one GPU is lent, so every
test runs on synthetic two-rank exports of the same three jobs, shaped like nsys 2025.3.1's
(bench/synth_export.py: NCCL kernels that end on both ranks once the last one arrived, NCCL's
NVTX payloads, each node's own clock), with the generator's own figures standing in for nsys
stats; the device variants run beside them once tests/data/gpu/nccl17 exists. The trim test
runs on the issue-8 exports that are in the repository.
"""

from __future__ import annotations

import importlib.util
import json
import lzma
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from nsysgen.analyze.read.report import read_export
from nsysgen.cli import main
from tests.analyze.read.test_steps import assert_agrees_with_nsys_stats
from tests.bench.synth import planted_job
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "gpu" / "nccl17"
GPU = REPO / "tests" / "data" / "gpu"
MS = 1_000_000
FIRST, LAST = 8, 15
# Neither edge of the window is judged: the first step holds the warm-up and the capture's open,
# the last its close (nsysgen/analyze/judge/stragglers.py).
JUDGED = list(range(FIRST + 1, LAST))
DELAY_MS = 40.0
HICCUP_STEPS = [11, 14]
# The device variant exists once tests/data/gpu/nccl17 does (bench/gpu/x2_collect.py writes it
# from a run of bench/gpu/x2.sh on nvidia-h200-x2): no test here can only skip.
HAVE_DEVICE_DATA = any(DATA.glob("x2-*.sqlite.xz"))


def load_x2() -> ModuleType:
    spec = importlib.util.spec_from_file_location("x2", REPO / "bench/gpu/x2.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def device_summary(tmp_path: Path, job: str) -> dict[str, Any]:
    folder = tmp_path / job
    folder.mkdir()
    for packed in sorted(DATA.glob(f"x2-{job}_*.sqlite.xz")):
        (folder / packed.stem).write_bytes(lzma.decompress(packed.read_bytes()))
    assert len(list(folder.iterdir())) == 2, "one report per rank"
    return _analyze(folder, tmp_path / f"out-{job}")


def _analyze(folder: Path, out: Path) -> dict[str, Any]:
    """`nsysgen analyze FOLDER --output OUT --serial`, as a user runs it (in this process)."""
    code = main(["analyze", str(folder), "--output", str(out), "--serial"])
    assert code == 0
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


# The x2 jobs, planted in synthetic exports shaped like theirs (bench/synth_export.py): two
# ranks, one per GPU, steps 8..15 of many short kernels and one NCCL all-reduce of the gradients
# each; rank 1 sleeping DELAY_MS at the start of every step, or rank 0 at steps 11 and 14.
PLANTED: dict[str, dict[int, dict[int, float]]] = {
    "clean": {},
    "slow": {1: dict.fromkeys(range(FIRST, LAST + 1), DELAY_MS)},
    "hiccup": {0: dict.fromkeys(HICCUP_STEPS, DELAY_MS)},
}
X2_SHAPE: dict[str, Any] = {
    "steps": range(FIRST, LAST + 1),
    "kernels": 120,
    "kernel_us": (10, 40),
    "sizes": (25 << 20,),  # DDP's default bucket: one all-reduce per step
}


@dataclass(frozen=True)
class Job:
    summary: dict[str, Any]
    truths: dict[int, Any]  # rank -> bench/synth_export.py's Truth: the figures as generated


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Job]:
    """The three jobs' synthetic exports, each analysed once for every test below."""
    jobs = {}
    for number, (job, late) in enumerate(PLANTED.items(), 1):
        base = tmp_path_factory.mktemp(job)
        truths = planted_job(base / "reports", 2, late, job=number, **X2_SHAPE)
        jobs[job] = Job(_analyze(base / "reports", base / "out"), truths)
    return jobs


def summary_of(source: str, job: str, synthetic: dict[str, Job], tmp_path: Path) -> dict[str, Any]:
    return synthetic[job].summary if source == "synthetic" else device_summary(tmp_path, job)


SOURCES = ["synthetic"] + (
    [pytest.param("device", marks=pytest.mark.slow)] if HAVE_DEVICE_DATA else []
)


@pytest.fixture(params=SOURCES)
def source(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.mark.slow  # the three jobs analysed once: about 8 s
def test_clean_run_names_no_straggler(
    source: str, synthetic: dict[str, Job], tmp_path: Path
) -> None:
    summary = summary_of(source, "clean", synthetic, tmp_path)
    assert summary["stragglers"] == []
    # The evidence is NCCL: one all-reduce kernel per rank and step, matched across the ranks,
    # each rank on its own GPU.
    assert [r["rank"] for r in summary["ranks"]] == [0, 1]
    assert sorted(r["device"] for r in summary["ranks"]) == [0, 1]
    for rank in summary["ranks"]:
        assert [s["step"] for s in rank["steps"]] == list(range(FIRST, LAST + 1))
        assert rank["totals"]["nccl_kernels"] == LAST - FIRST + 1
    assert summary["collectives_matched"] == LAST - FIRST + 1
    assert summary["collectives_matched_by"] == ["order in step"]
    assert summary["steps_with_unequal_collective_counts"] == []


@pytest.mark.slow  # the three jobs analysed once: about 8 s
def test_rank_late_on_every_step_is_the_slow_rank(
    source: str, synthetic: dict[str, Job], tmp_path: Path
) -> None:
    summary = summary_of(source, "slow", synthetic, tmp_path)
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


@pytest.mark.slow  # the three jobs analysed once: about 8 s
def test_rank_late_on_two_steps_is_a_hiccup_on_exactly_those(
    source: str, synthetic: dict[str, Job], tmp_path: Path
) -> None:
    summary = summary_of(source, "hiccup", synthetic, tmp_path)
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


if HAVE_DEVICE_DATA:

    @pytest.mark.slow
    @pytest.mark.parametrize("job", ["clean", "slow", "hiccup"])
    def test_device_figures_agree_with_nsys_stats(tmp_path: Path, job: str) -> None:
        assert_agrees_with_nsys_stats(device_summary(tmp_path, job), DATA / "nsys-stats")


@pytest.mark.slow
@pytest.mark.parametrize("job", ["clean", "slow", "hiccup"])
def test_synthetic_figures_agree_with_the_generated_ones(
    synthetic: dict[str, Job], job: str
) -> None:
    """What nsys stats checks on device data, checked against the generator's own figures:
    each rank's kernel and NCCL totals, and every step's time on the GPU (from the CPU's entry,
    a late rank's sleep included, to its last GPU work)."""
    summary, truths = synthetic[job].summary, synthetic[job].truths
    for rank in summary["ranks"]:
        truth = truths[rank["rank"]]
        totals = rank["totals"]
        assert totals["kernels"] == truth.kernels
        assert totals["kernel_ms"] == pytest.approx(truth.kernel_ns / MS, abs=1e-3)
        assert totals["nccl_kernels"] == truth.nccl_kernels
        assert totals["nccl_kernel_ms"] == pytest.approx(truth.nccl_ns / MS, abs=1e-3)
        for entry in rank["steps"]:
            assert entry["step_ms"] == pytest.approx(truth.step_ns[entry["step"]] / MS, rel=0.01)


def step(summary: dict[str, Any], rank: int, number: int) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        s for s in summary["ranks"][rank]["steps"] if s["step"] == number
    ]
    assert len(found) == 1
    return found[0]


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
