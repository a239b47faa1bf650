"""Issue 17 on real CPU reports: a generated job on the local 2-node Slurm cluster, every rank
recorded by nsys 2023.4.4, NVTX steps ending in a file barrier; one rank sleeps on two steps.
`nsysgen analyze` must give the per-rank step table and name that rank and those steps."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

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
    (straggler,) = summary["stragglers"]
    assert (straggler["rank"], straggler["steps"], straggler["kind"]) == (9, [3, 6], "hiccup")
    # Rank 1 waited in its barrier for the 150 ms sleep, give or take scheduling.
    assert 100 < straggler["mean_lateness_ms"] < 200
