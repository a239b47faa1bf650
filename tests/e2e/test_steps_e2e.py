"""Issue 17 on real CPU reports: a generated job on the local 2-node Slurm cluster, every rank
recorded by nsys 2023.4.4, NVTX steps ending in a file barrier; one rank sleeps on two steps.
`nsysgen analyze` must give the per-rank step table and name that rank and those steps."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.realparts import LocalCluster

pytestmark = [pytest.mark.slurm, pytest.mark.nsys]


def test_cpu_reports_name_the_sleeping_rank(
    local_cluster: LocalCluster, nsys_2023: Path, run_cli: Callable[..., CliResult]
) -> None:
    name = "e2e-straggler"
    barriers = local_cluster.shared_fs / "jobs" / name / "barriers"
    folder = local_cluster.compile_program(
        name,
        # --idle: 16 ranks sleep through their steps instead of sharing 2 cores in busy
        # loops, which made unplanted ranks late by more than the straggler bar.
        ["--steps=8", "--step-seconds=0.05", "--idle", f"--barrier-dir={barriers}",
         "--sleep-rank=9", "--sleep-steps=3,6", "--sleep-ms=150"],
        "capture=window", "capture.delay=0", "capture.duration=0",
        "capture.trace=[nvtx]", "capture.ranks=[1,9]",
    )  # fmt: skip
    code, job_id, log = local_cluster.sbatch_wait(folder)
    assert code == 0, log
    reports = local_cluster.shared_fs / "nsight-reports" / name / f"job{job_id}"
    out = reports / "analysis"
    result = run_cli("analyze", str(reports), "--nsys", str(nsys_2023), "--output", str(out))
    assert result.code == 0, result.err
    summary = json.loads((out / "summary.json").read_text())
    print(json.dumps({k: summary[k] for k in ("stragglers", "first_step_ignored")}, indent=1))
    assert [r["rank"] for r in summary["ranks"]] == [1, 9]
    assert all(len(r["steps"]) == 8 for r in summary["ranks"])
    assert {s["source"] for r in summary["ranks"] for s in r["steps"]} == {"cpu"}
    stragglers = {s["rank"]: s for s in summary["stragglers"]}
    assert {3, 6} <= set(stragglers[9]["steps"]), stragglers
    # Rank 9 was late by each 150 ms sleep (rank 1 waited in its barrier), give or take
    # scheduling.
    late = _late_steps(summary, 9)
    assert all(100 < late[step] < 200 for step in (3, 6)), late
    # Sixteen ranks on two shared cores: scheduling may make a rank late by a few tens of ms
    # on another step (seen once in five CI runs), never by the planted sleep.
    noise = [
        ms
        for rank, straggler in stragglers.items()
        for step, ms in _late_steps(summary, rank).items()
        if step in straggler["steps"] and (rank, step) not in ((9, 3), (9, 6))
    ]
    assert all(ms < 100 for ms in noise), stragglers


def _late_steps(summary: dict[str, Any], rank: int) -> dict[int, float]:
    """Step -> how late the rank was there (ms), from summary.json."""
    [entry] = [r for r in summary["ranks"] if r["rank"] == rank]
    return {step["step"]: step["late_ms"] or 0.0 for step in entry["steps"]}
