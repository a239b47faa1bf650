"""Per rank x step analysis (issue 17): GPU projection, stragglers, summary.json, --baseline.

Synthetic SQLite databases built here (the tables and columns nsys exports) pin the arithmetic;
the device reports in tests/data/gpu/steps17 (2 ranks on one H200, gloo, clean / one rank 40 ms
late on every step / rank 0 late on steps 11 and 14) pin the behaviour on real data, and their
nsys stats figures (cuda_gpu_kern_sum, nvtx_gpu_proj_sum) the agreement within 1 %.
"""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import struct
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from nsysgen.analyze.judge import stragglers
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read.report import read_export
from nsysgen.analyze.render import steps_plot as analyze_steps_plot
from nsysgen.analyze.render.plot import save
from tests.analyze.export_tables import TABLES
from tests.conftest import REPO, CliResult

RunCli = Callable[..., CliResult]
DEVICE = REPO / "tests" / "data" / "gpu" / "steps17"
MS = 1_000_000
PID = 4242
TID = (PID << 24) | 7  # globalTid: the pid above the low 24 bits, as nsys serialises it


def make_db(
    path: Path,
    steps: list[tuple[int, int, int]],
    kernels: list[tuple[int, int, int, str]] = (),  # type: ignore[assignment]
    ranges: list[tuple[str, int, int]] = (),  # type: ignore[assignment]
) -> Path:
    """A minimal nsys export: steps (n, start, end) and other NVTX ranges on one thread,
    kernels (api_start, start, end, name) launched by CUDA API calls on that thread."""
    db = sqlite3.connect(path)
    db.executescript(TABLES)
    for n, start, end in steps:
        db.execute(
            "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL, 0, NULL)",
            (start, end, f"step {n}", TID),
        )
    for name, start, end in ranges:
        db.execute(
            "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL, 0, NULL)",
            (start, end, name, TID),
        )
    names: dict[str, int] = {}
    for corr, (api, start, end, name) in enumerate(kernels):
        if name not in names:
            names[name] = len(names) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (names[name], name))
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, 0)",
            (api, api + 1000, TID, corr),
        )
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, ?, ?, ?)",
            (start, end, corr, PID << 24, names[name]),
        )
    db.commit()
    db.close()
    return path


def test_step_is_projected_onto_the_gpu_with_exposed_comm_and_idle(tmp_path: Path) -> None:
    # CPU range 0..10 ms; its kernels run 5..30 ms: compute 5..15, NCCL 12..22 (3 ms under
    # compute, 7 exposed), nothing 22..25 (idle: the next kernel was launched at 3 ms),
    # compute 25..30. Before 5 ms the GPU had nothing: until the first launch returned
    # (1.001 ms) a host gap, then idle. A kernel launched after the step (at 11 ms) belongs to
    # no step.
    db = make_db(
        tmp_path / "r_rank3.sqlite",
        steps=[(0, 0, 10 * MS)],
        kernels=[
            (1 * MS, 5 * MS, 15 * MS, "gemm"),
            (2 * MS, 12 * MS, 22 * MS, "ncclDevKernel_AllReduce"),
            (3 * MS, 25 * MS, 30 * MS, "gemm"),
            (11 * MS, 31 * MS, 40 * MS, "gemm"),
        ],
    )
    (tables,) = read_export(db, "r_rank3").tables
    assert tables.rank == 3 and tables.pid == PID
    (row,) = tables.steps
    # The step on the GPU's timeline starts when the CPU entered it; nsys's projection at the
    # first kernel.
    assert (row.source, row.cpu_ms, row.step_ms, row.gpu_ms) == ("gpu", 10.0, 30.0, 25.0)
    assert (row.compute_ms, row.nccl_ms, row.compute_busy_ms) == (15.0, 10.0, 15.0)
    assert (row.exposed_comm_ms, row.other_ms, row.kernels) == (7.0, 0.0, 3)
    assert (row.host_gap_ms, row.idle_ms) == (1.001, 6.999)
    parts = (row.compute_busy_ms, row.exposed_comm_ms, row.other_ms, row.host_gap_ms, row.idle_ms)
    assert sum(p or 0.0 for p in parts) == pytest.approx(row.step_ms)
    assert (tables.kernel_ms_total, tables.nccl_ms_total, tables.kernels_total) == (34.0, 10.0, 4)


def two_rank_job(folder: Path, late_rank: int, late_steps: set[int], late_ms: int) -> None:
    """Two ranks, 6 steps of 20 ms, one all-reduce each. A late rank launches its work
    `late_ms` later; the all-reduce ends on both ranks once it has arrived, so the other's NCCL
    kernel lasts `late_ms` longer. Rank 1's clock is 500 s off, which must change nothing."""
    folder.mkdir()
    for rank in (0, 1):
        offset = rank * 500_000 * MS
        kernels, steps = [], []
        for step in range(6):
            t0 = offset + step * 100 * MS

            def delay(r: int, step: int = step) -> int:
                # Warm-up: on the first step rank 0 arrives 30 ms late, which is never reported.
                warm = 30 if (step == 0 and r == 0) else 0
                return warm + (late_ms if step in late_steps and r == late_rank else 0)

            own, end = delay(rank), 14 + max(delay(0), delay(1))
            steps.append((step, t0, t0 + 20 * MS))
            kernels.append((t0 + MS, t0 + (2 + own) * MS, t0 + (12 + own) * MS, "gemm"))
            kernels.append((t0 + 2 * MS, t0 + (12 + own) * MS, t0 + end * MS, "ncclKernel_x"))
        make_db(folder / f"job_rank{rank}.sqlite", steps, kernels)


@pytest.mark.parametrize(
    ("late_steps", "expected"),
    [
        (set(), []),
        ({2}, [{"rank": 1, "steps": [2], "mean_lateness_ms": 9.0, "kind": "hiccup"}]),
        # Late on the last step too, which the window's close pauses: never judged.
        ({1, 2, 3, 4, 5}, [{"rank": 1, "steps": [1, 2, 3, 4], "kind": "slow rank"}]),
    ],
)
@pytest.mark.slow
def test_stragglers_from_nccl_kernel_durations(
    tmp_path: Path, run_cli: RunCli, late_steps: set[int], expected: list[dict[str, object]]
) -> None:
    two_rank_job(tmp_path / "job", late_rank=1, late_steps=late_steps, late_ms=9)
    result = run_cli("analyze", str(tmp_path / "job"), "--output", str(tmp_path / "out"))
    assert result.code == 0, result.err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    found = [{k: s[k] for k in e} for s, e in zip(summary["stragglers"], expected, strict=True)]
    assert found == expected and len(summary["stragglers"]) == len(expected)
    assert summary["first_step_ignored"] == 0 and summary["last_step_ignored"] == 5
    assert summary["window_edges"] == {
        "open": 0, "close": 5, "in_stragglers": False, "in_medians": False
    }  # fmt: skip
    rank0 = summary["ranks"][0]["steps"]
    # Rank 0 waited for rank 1 on the late steps: its exposed comm is the 2 ms transfer + 9.
    assert [s["wait_ms"] for s in rank0][1:] == [
        9.0 if s in late_steps else 0.0 for s in range(1, 6)
    ]
    assert rank0[2]["exposed_comm_ms"] == (11.0 if 2 in late_steps else 2.0)
    for name in ("steps.csv", "ranks.csv", "stragglers.csv", "heatmap_lateness.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    rows = list(csv.DictReader((tmp_path / "out" / "steps.csv").read_text().splitlines()))
    assert len(rows) == 12 and rows[0]["source"] == "gpu"
    assert [r["window_edge"] for r in rows[:6]] == ["open", "", "", "", "", "close"]


@pytest.mark.slow
def test_cpu_only_reports_use_the_collective_ranges(tmp_path: Path, run_cli: RunCli) -> None:
    # No kernels: the step is the CPU range; the rank with the shorter "barrier" range arrived
    # last (rank 0 sleeps 30 ms before the barrier on step 3).
    folder = tmp_path / "cpu"
    folder.mkdir()
    for rank in (0, 1):
        steps, ranges = [], []
        for step in range(5):
            t0 = step * 100 * MS
            wait = 30 if (step == 3 and rank == 1) else 0
            work = 50 + (30 if (step == 3 and rank == 0) else 0)
            steps.append((step, t0, t0 + (work + wait + 1) * MS))
            ranges.append(("barrier", t0 + work * MS, t0 + (work + wait + 1) * MS))
        make_db(folder / f"cpu_rank{rank}.sqlite", steps, ranges=ranges)
    result = run_cli("analyze", str(folder), "--output", str(tmp_path / "out"))
    assert result.code == 0, result.err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [(s["rank"], s["steps"], s["kind"]) for s in summary["stragglers"]] == [
        (0, [3], "hiccup")
    ]
    step3 = summary["ranks"][1]["steps"][3]
    assert (step3["source"], step3["exposed_comm_ms"], step3["idle_ms"]) == ("cpu", 31.0, None)


@pytest.mark.slow
def test_baseline_gate(tmp_path: Path, run_cli: RunCli) -> None:
    two_rank_job(tmp_path / "old", late_rank=1, late_steps=set(), late_ms=0)
    two_rank_job(tmp_path / "new", late_rank=1, late_steps={1, 2, 3, 4, 5}, late_ms=9)
    old = tmp_path / "old-out"
    assert run_cli("analyze", str(tmp_path / "old"), "--output", str(old)).code == 0
    same = run_cli(
        "analyze", str(tmp_path / "old"), "--output", str(tmp_path / "o2"), "--baseline", str(old)
    )
    assert same.code == 0, same.out
    assert "0 regressed" in same.out
    worse = run_cli(
        "analyze", str(tmp_path / "new"), "--output", str(tmp_path / "o3"), "--baseline", str(old)
    )
    assert worse.code == 1, worse.out
    # Rank 0 now waits 9 ms a step for rank 1: the job's step regressed, caused by rank 1;
    # rank 0's own figures grew by waiting only, which is not rank 0's regression.
    assert (
        "regression: REGRESSED job median step time: 14.0 -> 23.0 ms (+64.3 %): rank 1 late "
        "on 4 of 4 judged steps (1, 2, 3, 4) by 9.0 ms on average (the job's median step 23.0 "
        "ms, 14.0 ms had it been on time); rank 0 waited"
    ) in worse.out
    assert "REGRESSED  job median step time: 14.000 -> 23.000 ms (+64.3 %)" in worse.out
    assert (
        "waited  rank 0 median exposed comm: 2.000 -> 11.000 ms (+450.0 %): waited for rank 1 "
        "(+9.0 ms a step lost waiting)"
    ) in worse.out
    assert "REGRESSED  rank 0" not in worse.out
    compared = json.loads((tmp_path / "o3" / "summary.json").read_text())["baseline"]
    assert compared["regressed"] and compared["text"].startswith("REGRESSED job median step")
    lenient = run_cli(
        "analyze", str(tmp_path / "new"), "--output", str(tmp_path / "o4"),
        "--baseline", str(old), "--regression-threshold", "500",
    )  # fmt: skip
    assert lenient.code == 0, lenient.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "{tmp}/nowhere"], "--baseline {tmp}/nowhere: no summary.json there"),
        (["--baseline", "{tmp}/bad.json"], "not an nsysgen analyze summary"),
        (["--straggler-min-ms", "-1"], "must be >= 0"),
        (["--world-size", "0"], "--world-size 0: must be at least 1"),
    ],
)
def test_bad_gate_inputs_exit_2_and_write_nothing(
    tmp_path: Path, run_cli: RunCli, args: list[str], message: str
) -> None:
    two_rank_job(tmp_path / "job", late_rank=1, late_steps=set(), late_ms=0)
    (tmp_path / "bad.json").write_text('{"schema": "other"}')
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = run_cli("analyze", str(tmp_path / "job"), "--output", str(tmp_path / "out"), *argv)
    assert result.code == 2
    assert message.replace("{tmp}", str(tmp_path)) in result.err
    assert not (tmp_path / "out").exists()


def device_summary(tmp_path: Path, run_cli: RunCli, job: str) -> dict[str, Any]:
    folder = tmp_path / job
    folder.mkdir()
    for report in DEVICE.glob(f"s17-{job}_*.sqlite"):
        shutil.copy(report, folder / report.name)
    result = run_cli("analyze", str(folder), "--output", str(tmp_path / f"out-{job}"))
    assert result.code == 0, result.err
    summary: dict[str, Any] = json.loads((tmp_path / f"out-{job}" / "summary.json").read_text())
    return summary


@pytest.mark.slow
def test_device_runs_name_the_injected_stragglers(tmp_path: Path, run_cli: RunCli) -> None:
    assert device_summary(tmp_path, run_cli, "clean")["stragglers"] == []
    slow = device_summary(tmp_path, run_cli, "slow")["stragglers"]
    # Rank 1 slept 40 ms on every step. Rank 0 is also named once (step 11), where the report
    # shows rank 1 waiting 63 ms for it (bench/gpu/RESULTS.md).
    assert [(s["rank"], s["kind"]) for s in slow] == [(1, "slow rank"), (0, "hiccup")]
    assert slow[0]["steps"] == [9, 12, 13, 14]  # 15: the window's close, not judged
    hiccup = device_summary(tmp_path, run_cli, "hiccup")["stragglers"]
    assert hiccup[0] == {
        "rank": 0,
        "steps": [11, 14],
        "mean_lateness_ms": 30.936,
        "kind": "hiccup",
        "late_on_fraction_of_steps": 0.333,  # 2 of 6 judged steps (7 less the last)
        "evidence": ["collectives"],
    }


@pytest.mark.slow
@pytest.mark.parametrize("job", ["clean", "slow", "hiccup"])
def test_device_figures_agree_with_nsys_stats(tmp_path: Path, run_cli: RunCli, job: str) -> None:
    assert_agrees_with_nsys_stats(device_summary(tmp_path, run_cli, job), DEVICE / "nsys-stats")


def assert_agrees_with_nsys_stats(summary: dict[str, Any], stats_dir: Path) -> None:
    """Each rank's kernel total and every step's GPU time, against nsys's own cuda_gpu_kern_sum
    and nvtx_gpu_proj_sum of the same report (CSV files named after the report in stats_dir)."""
    for rank in summary["ranks"]:
        stats = stats_dir / rank["report"]
        kern = list(csv.DictReader(Path(f"{stats}_cuda_gpu_kern_sum.csv").read_text().splitlines()))
        total_ms = sum(int(r["Total Time (ns)"]) for r in kern) / MS
        assert rank["totals"]["kernel_ms"] == pytest.approx(total_ms, rel=0.01)
        assert rank["totals"]["kernels"] == sum(int(r["Instances"]) for r in kern)
        proj = {
            r["Range"].lstrip(":"): int(r["Total Proj Time (ns)"]) / MS
            for r in csv.DictReader(Path(f"{stats}_nvtx_gpu_proj_sum.csv").read_text().splitlines())
        }
        for step in rank["steps"]:
            assert step["gpu_ms"] == pytest.approx(proj[f"step {step['step']}"], rel=0.01)


@pytest.mark.slow
def test_pictures_stay_bounded_at_scale(tmp_path: Path) -> None:
    """1000 steps on 300 ranks: the heatmap and the bars keep their size (16 x 10 inches at the
    most) and a readable number of tick labels, instead of a 50,000-pixel-wide image."""
    ranks = [
        {
            "rank": rank,
            "steps": [
                {
                    "step": s,
                    "step_ms": 10.0 + (rank == 7),
                    "source": "gpu",
                    "exposed_comm_ms": 1.0,
                    "late_ms": float(rank == 7),
                    "wait_ms": float(rank != 7),
                }
                for s in range(1000)
            ],
            "medians_without_window_edges": {
                "compute_busy_ms": 8.0,
                "exposed_comm_ms": 1.0,
                "other_ms": 0.5,
                "idle_ms": 0.5,
                "step_ms": 10.0,
            },
        }
        for rank in range(300)
    ]
    summary = Summary.from_json({"ranks": ranks, "thresholds": stragglers.Thresholds().as_dict()})
    for picture in (
        save(partial(analyze_steps_plot.exposed_figure, summary), tmp_path / "exposed.png"),
        save(partial(analyze_steps_plot.lateness_figure, summary), tmp_path / "late.png"),
        save(partial(analyze_steps_plot.breakdown_figure, summary), tmp_path / "bars.png"),
    ):
        width, height = struct.unpack(">II", picture.read_bytes()[16:24])  # the PNG's IHDR
        assert width <= 16 * 110 and height <= 10 * 110, (picture.name, width, height)


def test_the_merge_walk_finds_the_step_bisect_finds() -> None:
    """Kernels are put into steps by one walk over both sorted lists; it must pick what a
    binary search picks: the last range starting at or before the moment, if still open (the
    later step at a shared edge), none in a gap, before the first or after the last."""
    import bisect
    import random

    from nsysgen.analyze.read.steps import _in_steps

    def reference(spans: list[tuple[int, int, int]], moment: int) -> int | None:
        i = bisect.bisect_right([s[0] for s in spans], moment) - 1
        return i if i >= 0 and spans[i][0] <= moment <= spans[i][1] else None

    rng = random.Random(7)
    for _ in range(300):
        spans: list[tuple[int, int, int]] = []
        t = 0
        for step in range(rng.randint(0, 8)):
            t += rng.choice([0, 0, 1, 5])  # shared edges, gaps
            length = rng.randint(0, 6)
            spans.append((t, t + length, step))
            t += length
        moments = sorted(rng.randint(-2, t + 3) for _ in range(30))
        expected = [reference(spans, m) for m in moments]
        assert _in_steps(spans, moments) == expected, (spans, moments)
