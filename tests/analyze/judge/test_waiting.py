"""Own work told from waiting (issue 39 item 1): every figure blames the rank that was late.

Real proof: the H200 exports in tests/data/gpu/steps17 (two ranks on one GPU, gloo all-reduce,
rank 1 sleeping 40 ms at the start of every step in the "slow" job; bench/gpu/x2.py and
bench/gpu/RESULTS.md). Synthetic proof: NCCL jobs of 8, 64 and 1,024 ranks built here, one rank
planted late by its own compute, the others' NCCL kernels waiting for it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nsysgen.analyze.judge.late_ranks import find
from nsysgen.analyze.judge.regress import compare, comparison
from nsysgen.analyze.judge.stragglers import Thresholds, measure
from nsysgen.analyze.judge.summary import build
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read.ranks import assign_ranks
from nsysgen.analyze.read.report import Reduced, read_export
from tests.analyze.export_tables import TABLES
from tests.conftest import REPO

DEVICE = REPO / "tests" / "data" / "gpu" / "steps17"
MS = 1_000_000
PARTS = (
    "compute_busy_ms",
    "comm_wait_ms",
    "comm_transfer_ms",
    "other_ms",
    "host_gap_ms",
    "idle_ms",
)


def analyse(reduced: list[Reduced]) -> Summary:
    """The reduction's summary, without the pictures and files (what summary.json holds)."""
    ranks = assign_ranks([r.tables for r in reduced])
    thresholds = Thresholds()
    lateness = measure(ranks)
    stragglers = find(ranks, lateness, thresholds)
    calls = [c for r in reduced for c in r.calls]
    names = [r.name for r in reduced]
    return build(ranks, lateness, stragglers, calls, thresholds, len(ranks), names)


def device(job: str) -> Summary:
    return analyse([read_export(p) for p in sorted(DEVICE.glob(f"s17-{job}_*.sqlite"))])


def ms(entry: Mapping[str, Any], key: str) -> float:
    value = entry[key]
    assert isinstance(value, float), (key, entry)
    return value


def assert_parts_add_up(summary: Summary) -> None:
    for rank in summary.ranks:
        for step in rank["steps"]:
            if step["source"] == "gpu":
                total = sum(ms(step, p) for p in PARTS)
                assert total == pytest.approx(step["step_ms"], abs=1e-3), (rank["rank"], step)


def test_steps17_every_figure_names_rank_1_and_says_rank_0_waited() -> None:
    summary = device("slow")
    assert_parts_add_up(summary)
    verdict = summary.verdict
    assert (verdict["late_rank"], verdict["kind"], verdict["steps"]) == (
        1,
        "slow rank",
        [9, 12, 13, 14],
    )
    assert (verdict["waited"], verdict["judged_steps"], verdict["by_ms"]) == ([0], 6, 48.279)
    assert verdict["text"].startswith(
        "rank 1 late on 4 of 6 judged steps (9, 12, 13, 14) by 48.3 ms on average (the job's "
        "median step 127.4 ms, 84.4 ms had it been on time); rank 0 waited"
    )
    # Per step over the ranks: rank 1 late, rank 0 waiting for it (step 11: rank 0 really was
    # late there, the profiler's start on a shared GPU; bench/gpu/RESULTS.md).
    late = {s["step"]: (s["late_rank"], s["waited"]) for s in summary.by_step if s["judged"]}
    assert {step: late[step] for step in (9, 12, 13, 14)} == {s: (1, [0]) for s in (9, 12, 13, 14)}
    assert late[11] == (0, [1])
    rank0, rank1 = ({s["step"]: s for s in r["steps"]} for r in summary.ranks)
    for step in (9, 12, 13, 14):
        # Rank 0's wait is its own part of the step, not idle time; rank 1 never waited there.
        assert rank0[step]["waited_for"] == 1 and ms(rank0[step], "comm_wait_ms") > 25
        assert rank1[step]["comm_wait_ms"] == 0.0 and rank1[step]["waited_for"] is None
        # Rank 1's own delay (its sleep before launching) is its host gap, inside its step:
        # the late rank no longer looks faster than the rank that waited for it.
        assert ms(rank1[step], "host_gap_ms") > ms(rank0[step], "host_gap_ms") + 25
    medians = [r["medians_without_window_edges"] for r in summary.ranks]
    assert ms(medians[0], "comm_wait_ms") > 25 and medians[1]["comm_wait_ms"] == 0.0
    assert ms(medians[1], "step_ms") >= ms(medians[0], "step_ms") - 5  # no longer 53 vs 94 ms


def test_steps17_clean_run_blames_nobody() -> None:
    summary = device("clean")
    assert_parts_add_up(summary)
    assert summary.verdict["late_rank"] is None
    assert summary.verdict["text"].startswith("no rank late on the 6 judged steps of 2 ranks")
    assert all(s["late_rank"] is None for s in summary.by_step if s["judged"])


def test_steps17_baseline_verdict_names_rank_1_and_rank_0_waited(tmp_path: Path) -> None:
    clean, slow = device("clean"), device("slow")
    changes = compare(clean, slow, 0.10, 0.1)
    found = comparison(changes, slow, tmp_path / "clean", 10.0)
    assert found["regressed"]
    assert found["text"].startswith("REGRESSED job median step time: ")
    assert "rank 1 late on 4 of 6 judged steps" in found["text"]
    assert "rank 0 waited" in found["text"]
    by_name = {c.what: c for c in changes}
    # Rank 0's step grew by waiting only: reported as such, never as rank 0's regression.
    rank0 = by_name["rank 0 median step time"]
    assert not rank0.regressed and rank0.note.startswith("waited for rank 1 (")
    assert rank0.line().lstrip().startswith("waited  rank 0 median step time")
    # Rank 1's grew in its own work: the GPU waiting for its CPU (the injected sleep).
    rank1 = by_name["rank 1 median step time"]
    assert rank1.regressed and rank1.cause.startswith("its own work grew: host gaps +")
    assert not any(c.regressed and c.what.startswith("rank 0") for c in changes)


# --- synthetic NCCL jobs ------------------------------------------------------------------------

PID = 777
TID = (PID << 24) | 1


def nccl_rank(path: Path, rank: int, late_rank: int | None, late_ms: int, steps: int = 5) -> Path:
    """One rank's export: per step, one compute kernel (10 ms, the late rank's `late_ms` more)
    then one NCCL all-reduce ending at the same moment on every rank (2 ms of transfer after the
    last arrival): an early rank's kernel starts earlier and waits. Each rank's clock is offset."""
    db = sqlite3.connect(path)
    db.executescript(
        TABLES + "INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'ncclDevKernel_AllReduce_Sum_f32');"
    )
    offset = rank * 7_777 * MS
    extra = late_ms if rank == late_rank else 0
    rows, api, kernels = [], [], []
    for step in range(steps):
        t0 = offset + step * 100 * MS
        rows.append((t0, t0 + 5 * MS, 59, f"step {step}", TID, None, 0, None))
        compute_end = t0 + (1 + 10 + extra) * MS
        nccl_end = (
            t0 + (1 + 10 + late_ms + 2) * MS if late_rank is not None else compute_end + 2 * MS
        )
        for corr, (launch, start, end, name) in enumerate(
            [(t0 + MS // 10, t0 + MS, compute_end, 1), (t0 + MS // 5, compute_end, nccl_end, 2)],
            start=step * 10,
        ):
            api.append((launch, launch + 10_000, TID, corr, 0))
            kernels.append((start, end, 0, 7, corr, PID << 24, name))
    db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)", api)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?)", kernels)
    db.commit()
    db.close()
    return path


def nccl_job(folder: Path, ranks: int, late_rank: int | None, late_ms: int) -> Summary:
    folder.mkdir()
    exports = [
        nccl_rank(folder / f"synth_job1_rank{r}.sqlite", r, late_rank, late_ms)
        for r in range(ranks)
    ]
    return analyse([read_export(e) for e in exports])


@pytest.mark.parametrize(
    "ranks",
    [8, pytest.param(64, marks=pytest.mark.slow), pytest.param(1024, marks=pytest.mark.slow)],
    ids=lambda n: f"{n}-ranks",
)
def test_planted_straggler_is_named_and_the_others_waited(tmp_path: Path, ranks: int) -> None:
    late_rank = ranks * 5 // 8 + 1
    summary = nccl_job(tmp_path / "slow", ranks, late_rank, 8)
    assert_parts_add_up(summary)
    verdict = summary.verdict
    assert (verdict["late_rank"], verdict["steps"], verdict["waited_count"]) == (
        late_rank, [1, 2, 3], ranks - 1
    )  # fmt: skip
    assert len(verdict["waited"]) == min(6, ranks - 1)
    for step in summary.by_step:
        # Its GPU ran the step's compute 1.8x as long: 8 ms of the path; without it, 13 ms.
        assert (step["late_rank"], step["late_ms"], step["late_count"]) == (late_rank, 8.0, 1)
        assert step["what_if_step_ms"] == 13.0 and step["job_step_ms"] == 21.0
        assert step["waited_count"] == ranks - 1 and len(step["waited"]) <= 8
    for rank in summary.ranks:
        medians = rank["medians_without_window_edges"]
        if rank["rank"] == late_rank:  # its own compute: 8 ms more, no wait
            assert (medians["compute_busy_ms"], medians["comm_wait_ms"]) == (18.0, 0.0)
        else:  # 8 ms of its NCCL kernel waiting, 2 ms transfer
            assert (medians["comm_wait_ms"], medians["comm_transfer_ms"]) == (8.0, 2.0)
            assert {s["waited_for"] for s in rank["steps"]} == {late_rank}


def test_synthetic_baseline_blames_the_planted_rank(tmp_path: Path) -> None:
    clean = nccl_job(tmp_path / "clean", 8, None, 0)
    slow = nccl_job(tmp_path / "slow", 8, 5, 8)
    assert clean.verdict["late_rank"] is None
    changes = compare(clean, slow, 0.10, 0.1)
    found = comparison(changes, slow, tmp_path / "clean", 10.0)
    assert found["text"] == (
        "REGRESSED job median step time: 13.0 -> 21.0 ms (+61.5 %): rank 5 late on 3 of 3 "
        "judged steps (1, 2, 3) by 8.0 ms on average (the job's median step 21.0 ms, 13.0 ms had "
        "it been on time); ranks 0, 1, 2, 3, 4, 6 and 1 more waited (lost 8.0 ms a step: "
        "exposed wait and compute slowed by waiting)"
    )
    regressed = sorted(c.what for c in changes if c.regressed)
    assert regressed == ["job median step time", "rank 5 median step time"]
    waited = [c for c in changes if c.note]
    assert len(waited) == 14 and all(c.note.startswith("waited for rank 5") for c in waited)
