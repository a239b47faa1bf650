"""analyze.sbatch for real: the local 2-node Slurm cluster and nsys 2023.4.4.

A generated job records all 4 ranks (2 per node, rank 3 late on two steps); the folder's
analyze.sbatch then runs on 2 nodes: a Dask scheduler and workers on both nodes, the folder's
nsysgen-verify.py first, the nvtx_sum recipe on that Dask cluster (`--mode dask-futures`),
`nsysgen analyze --scheduler-file`, and the cluster's shutdown. What it writes must be what
`nsysgen analyze --serial` writes from the same reports; with a report missing, verify stops it
before any analysis, and the cluster is shut down either way.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from nsysgen.analyze import record as analyze_record
from tests.conftest import RunCli
from tests.realparts import LocalCluster, job_processes

pytestmark = [pytest.mark.slurm, pytest.mark.nsys]

NAME = "e2e-analyze-sbatch"
# --idle: the steps sleep, so 4 ranks on 2 cores do not steal each other's time and no rank
# but the planted one is late by more than the straggler bar (25 % of a 50 ms step).
PROGRAM = ["--steps=8", "--step-seconds=0.05", "--idle", "--sleep-rank=3", "--sleep-steps=3,6",
           "--sleep-ms=150"]  # fmt: skip
# Dask's wait for the workers: long enough for a loaded machine, short enough to fail a test.
SUBMIT_ENV = {"NSYSGEN_DASK_WAIT_S": "120"}


@dataclass(frozen=True)
class Run:
    """One analyze.sbatch job: its id, final (state, exit code), log and output folder."""

    job_id: str
    state: tuple[str, str]
    log: str
    out: Path
    reports: Path

    def lines(self) -> list[str]:
        # pip's own notes (recipes.sh installing the recipes' packages) are not the job's.
        return [line for line in self.log.splitlines() if not line.startswith("WARNING: ")]


@dataclass(frozen=True)
class Profiled:
    folder: Path
    reports: Path


@pytest.fixture(scope="module")
def profiled(local_cluster: LocalCluster, nsys_2023: Path) -> Profiled:
    barriers = local_cluster.shared_fs / "jobs" / NAME / "barriers"
    folder = local_cluster.compile_program(
        NAME,
        [*PROGRAM, f"--barrier-dir={barriers}"],
        "cluster.gpus_per_node=2", "target.exclusive=false",
        "capture=window", "capture.delay=0", "capture.duration=0",
        "capture.trace=[nvtx]", "capture.ranks=all", "capture.recipes=[nvtx_sum]",
        "analysis.nodes=2", "analysis.workers_per_node=2", f"analysis.python={sys.executable}",
    )  # fmt: skip
    code, job_id, log = local_cluster.sbatch_wait(folder)
    assert code == 0, log
    reports = local_cluster.shared_fs / "nsight-reports" / NAME / f"job{job_id}"
    assert len(list(reports.glob("*.nsys-rep"))) == 4
    return Profiled(folder, reports)


def analyse(cluster: LocalCluster, folder: Path, reports: Path, out: Path) -> Run:
    """sbatch analyze.sbatch REPORTS OUT from the job's folder, wait for it to end."""
    script = folder / "analyze.sbatch"
    assert "#SBATCH --nodes=2\n" in script.read_text()
    job_id = cluster.submit(script, str(reports), str(out), env=SUBMIT_ENV)
    state = cluster.wait(job_id, timeout=400)
    log = cluster.log(folder, job_id)
    print(log)
    return Run(job_id, state, log, out, reports)


@pytest.fixture(scope="module")
def on_dask(local_cluster: LocalCluster, profiled: Profiled) -> Run:
    # An output folder with a space: the arguments reach every step intact.
    out = local_cluster.shared_fs / "analysis out" / NAME
    return analyse(local_cluster, profiled.folder, profiled.reports, out)


def test_the_job_succeeds_with_workers_on_both_nodes(on_dask: Run) -> None:
    assert on_dask.state == ("COMPLETED", "0:0"), on_dask.log
    # From the scheduler's own worker list, by the node each worker's Slurm task ran on
    # (SLURMD_NODENAME): the wait fails the job unless every node has its workers.
    assert "dask_cluster: 4 worker(s) on 2 node(s): node1 node2" in on_dask.lines()
    # The recipe's tasks and nsysgen's (one per report) both ran on that cluster.
    assert "dask_cluster: tasks done: mapper_func 4, run_task 4" in on_dask.lines()


def test_verify_runs_first_and_passes(on_dask: Run) -> None:
    # analyze.sbatch's own verify, then (recipes.sh verifies again) the recipes and analyze.
    lines = on_dask.lines()
    first = next(i for i, line in enumerate(lines) if line.startswith(f"verify: job {NAME} ("))
    ok = lines.index("verify: complete: 4 of 4 reports ok")
    wait = lines.index("dask_cluster: 4 worker(s) on 2 node(s): node1 node2")
    recipes = lines.index("recipes.sh: nvtx_sum")
    analysis = lines.index(
        "steps 0..7 on 4 rank(s); first and last step not judged (the window's open and close "
        "pause the recorded ranks)"
    )
    assert first < ok < wait < recipes < analysis
    assert not any(line.startswith("verify:") for line in lines[:first])


def test_outputs_equal_the_single_process_analysis(
    on_dask: Run, profiled: Profiled, nsys_2023: Path, run_cli: RunCli, tmp_path: Path
) -> None:
    # The same reports, exported afresh (no cached export), analysed in this one process.
    copy = tmp_path / "reports"
    copy.mkdir()
    for report in profiled.reports.glob("*.nsys-rep"):
        shutil.copy(report, copy)
    local = tmp_path / "local"
    # analyze.sbatch holds the sizes against the setup's fabric (its nsysgen-expect.json).
    expect = profiled.folder / "nsysgen-expect.json"
    result = run_cli("analyze", str(copy), "--nsys", str(nsys_2023), "--serial",
                     "--output", str(local), "--cluster", str(expect))  # fmt: skip
    assert result.code == 0, result.err

    def outputs(folder: Path) -> dict[str, bytes]:
        # Files only: analyze.sbatch's recipes/ is checked below.
        # Not the run record: it names the reports' keys, and these are other copies.
        return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix != ".png"
                and p.is_file() and p.name != analyze_record.RECORD}  # fmt: skip

    remote = outputs(on_dask.out)
    assert remote == outputs(local)
    assert {"summary.json", "steps.csv", "ranks.csv", "stragglers.csv"} <= set(remote)
    # What it printed, too (the paths it wrote, and the report's, aside).
    printed = [
        line for line in result.out.splitlines() if not line.startswith(("wrote ", "report: "))
    ]
    assert printed and all(line in on_dask.lines() for line in printed), printed
    # And the result is the program's: rank 3 late on steps 3 and 6.
    summary = json.loads((on_dask.out / "summary.json").read_text())
    assert [r["rank"] for r in summary["ranks"]] == [0, 1, 2, 3]
    assert [(s["rank"], s["steps"]) for s in summary["stragglers"]] == [(3, [3, 6])]
    recipe = on_dask.out / "recipes" / "nvtx_sum"
    assert {"all_stats.parquet", "nvtx_sum.nsys-analysis"} <= {p.name for p in recipe.iterdir()}


def test_the_cluster_is_shut_down(on_dask: Run) -> None:
    # The scheduler's and workers' steps ended on their own after the shutdown (else the
    # script ends them and says so), nothing of the job still runs, no scheduler file is left.
    assert "analyze.sbatch: Dask cluster shut down" in on_dask.lines()
    assert "Dask step(s)" not in on_dask.log
    assert "CANCELLED" not in on_dask.log and "Killed" not in on_dask.log
    assert job_processes(on_dask.job_id) == []
    assert not (on_dask.reports / f".dask-{on_dask.job_id}").exists()


def test_incomplete_reports_stop_before_any_analysis(
    local_cluster: LocalCluster, profiled: Profiled, tmp_path: Path
) -> None:
    reports = local_cluster.shared_fs / "incomplete" / NAME
    reports.mkdir(parents=True)
    for report in profiled.reports.glob("*.nsys-rep"):
        if "_rank3_" not in report.name:
            shutil.copy(report, reports)
    run = analyse(local_cluster, profiled.folder, reports, reports / "analysis")
    assert run.state == ("FAILED", "1:0"), run.log
    assert any(line.startswith("rank 3  node index 1  MISSING") for line in run.lines()), run.log
    assert "verify: INCOMPLETE: 1 of 4 reports missing or wrong, 0 unexpected" in run.lines()
    assert not run.out.exists()
    assert "run_task" not in run.log and "analyze.sbatch: outputs" not in run.log
    assert job_processes(run.job_id) == []
    assert not (reports / f".dask-{run.job_id}").exists()
