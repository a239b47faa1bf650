"""A profiling campaign on the local Slurm cluster with real nsys 2023.4.4: a sweep of two points,
the first point run twice and then a third time, cut short by scancel; the second point once.
Every verb then works on one run: verify, recipes.sh, analyze.sbatch and `nsysgen analyze`
read the run they are given (the newest by default) and list the others without failing, and
no two runs' reports ever meet in one folder or one analysis."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from nsysgen.cli import main
from nsysgen.drivers.build import point_job_name
from tests.conftest import RunCli
from tests.realparts import ACTIVE, LocalCluster, python_workload

pytestmark = [pytest.mark.slurm, pytest.mark.nsys]

NAME = "cmp"
# 40 steps of 0.25 s (sleeping, not spinning: 2 cores host 4 ranks), a 6 s window from launch.
PROGRAM = ["--steps=40", "--step-seconds=0.25", "--idle"]


@dataclass(frozen=True)
class Campaign:
    point: Path  # the first sweep point's folder (three runs)
    other: Path  # the second point's folder (one run)
    reports: Path  # the first point's report folder: one folder per run
    complete: tuple[str, str]  # the first point's two complete runs (job ids)
    cut: str  # its third run, cancelled during the capture
    other_run: str


def run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=600, env={**_ENV, **env}
    )


_ENV: dict[str, str] = {}


def submit_and_wait(cluster: LocalCluster, folder: Path) -> str:
    """One complete run (sbatch_wait retries nsys 2023.4.4's own start-up fault once)."""
    code, job_id, log = cluster.sbatch_wait(folder)
    assert code == 0, log
    return job_id


def cut_short(cluster: LocalCluster, folder: Path, reports: Path) -> str:
    """A run cancelled once both recording tasks are capturing (nsys has made their .qdstrm)."""
    job_id = cluster.submit(folder / "job.sbatch")
    tasks = [reports / f"job{job_id}" / ".nsysgen" / f"task{t}" for t in (0, 3)]
    deadline = time.monotonic() + 300
    while not all(any(t.glob("*.qdstrm")) for t in tasks):
        assert cluster.state(job_id)[0] in ACTIVE, cluster.log(folder, job_id)
        assert time.monotonic() < deadline, "the cut-short run never started capturing"
        time.sleep(0.3)
    time.sleep(1.5)
    subprocess.run(["scancel", job_id], env=cluster.env, check=True)
    cluster.wait(job_id, timeout=120)
    return job_id


@pytest.fixture(scope="module")
def campaign(local_cluster: LocalCluster, nsys_2023: Path) -> Campaign:
    _ENV.update({**local_cluster.env, "NSYS": str(nsys_2023)})
    out = local_cluster.shared_fs / "jobs"
    markers = local_cluster.shared_fs / "jobs" / "cmp-markers"
    markers.mkdir(parents=True, exist_ok=True)
    code = main(
        [
            "-m",
            "cluster=local",
            f"cluster.shared_fs={local_cluster.shared_fs}",
            "nsight=2023.4.4",
            *python_workload(local_cluster, *PROGRAM, f"--marker-dir={markers}"),
            "cluster.gpus_per_node=2", "target.exclusive=false",
            "capture=window", "capture.delay=0", "capture.duration=6",
            "capture.trace=[nvtx,osrt]", "capture.recipes=[nvtx_sum]",
            f"analysis.python={sys.executable}", "analysis.nodes=1",
            "analysis.workers_per_node=1",
            f"job.name={NAME}", "job.time_limit_min=10",
            "capture.ranks=[0,3],[1]",
            f"output_dir={out}",
        ]
    )  # fmt: skip
    assert code == 0
    first, second = sorted(p for p in (out / NAME).iterdir() if p.is_dir())
    reports = Path(json.loads((first / "nsysgen-expect.json").read_text())["report_dir"])
    runs = (submit_and_wait(local_cluster, first), submit_and_wait(local_cluster, first))
    cut = cut_short(local_cluster, first, reports)
    other = submit_and_wait(local_cluster, second)
    return Campaign(first, second, reports, runs, cut, other)


def verify(campaign: Campaign, *extra: str) -> subprocess.CompletedProcess[str]:
    """The shared standalone verifier, as recipes.sh runs it (at the top of the tree)."""
    verifier = campaign.point.parent.parent / "nsysgen-verify.py"
    return run([sys.executable, str(verifier), str(campaign.point), *extra], campaign.point)


def test_each_run_has_its_own_folder(campaign: Campaign) -> None:
    a, b = campaign.complete
    runs = sorted(p.name for p in campaign.reports.iterdir() if p.name.startswith("job"))
    assert runs == sorted(f"job{j}" for j in (a, b, campaign.cut))
    for job in (a, b):
        names = sorted(p.name for p in (campaign.reports / f"job{job}").glob("*.nsys-rep"))
        assert [n.split(f"_job{job}_")[1].split("_")[0] for n in names] == ["rank0", "rank3"]
    # The other sweep point's runs are in its own report folder.
    other = campaign.reports.parent / point_job_name(NAME, campaign.other.name)
    assert [p.name for p in other.iterdir() if p.name.startswith("job")] == [
        f"job{campaign.other_run}"
    ]


def test_verify_checks_the_newest_run_and_lists_the_others(campaign: Campaign) -> None:
    a, b = campaign.complete
    newest = verify(campaign)
    print(newest.stdout)
    # The cut-short run is the newest: it is the one checked, and it is incomplete.
    assert newest.returncode == 1, newest.stdout + newest.stderr
    job = point_job_name(NAME, campaign.point.name)
    assert f"verify: job {job} ({campaign.cut})" in newest.stdout
    assert "likely cause: the job was cancelled" in newest.stdout or "MISSING" in newest.stdout
    assert (
        f"note: checked the newest run, job {campaign.cut}; other runs here, not read: "
        f"job {a} (2 of 2 reports), job {b} (2 of 2 reports) (pass --job-id ID to check one)"
    ) in newest.stdout
    chosen = verify(campaign, "--job-id", b)
    print(chosen.stdout)
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr
    assert "verify: complete: 2 of 2 reports ok" in chosen.stdout
    assert f"note: checked job {b}; other runs here, not read: job {a} " in chosen.stdout
    missing = verify(campaign, "--job-id", "999999")
    assert missing.returncode == 2 and "--job-id 999999: no run of it in" in missing.stderr


def test_recipes_stop_on_the_cut_run_and_read_one_complete_run(campaign: Campaign) -> None:
    a, b = campaign.complete
    script = str(campaign.point / "recipes.sh")
    python = {"NSYSGEN_RECIPE_PYTHON": sys.executable}
    stopped = run([script], campaign.point, **python)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "pick a complete run with --job-id ID" in stopped.stderr
    done = run([script, "--job-id", b], campaign.point, **python)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = campaign.reports / f"job{b}" / "recipes" / "nvtx_sum"
    assert (out / "all_stats.parquet").is_file()
    assert not (campaign.reports / f"job{a}" / "recipes").exists()
    # The range statistics hold run b's two reports only: a range at most twice, never four
    # times. (A step at the end of the time window may be in one rank's report only: the two
    # ranks start their windows a moment apart.)
    read = subprocess.run(
        [sys.executable, "-c", "import sys, pandas; d = pandas.read_parquet(sys.argv[1]); "
         "print(max(int(c) for c in d['Count']))", str(out / "all_stats.parquet")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert read.stdout.strip() == "2", read.stdout


def test_analyze_reads_one_run_and_says_which(
    campaign: Campaign, run_cli: RunCli, nsys_2023: Path, tmp_path: Path
) -> None:
    a, b = campaign.complete
    root = str(campaign.reports)
    newest = run_cli("analyze", root, "--nsys", str(nsys_2023), "--serial",
                     "--output", str(tmp_path / "newest"))  # fmt: skip
    assert newest.code == 0, newest.err
    assert (
        f"3 runs in {root}: analysing job{campaign.cut} (the newest); not read: job{a}, job{b} "
        "(--job-id ID for another)"
    ) in newest.out
    chosen = run_cli("analyze", root, "--job-id", b, "--nsys", str(nsys_2023), "--serial",
                     "--output", str(tmp_path / "b"))  # fmt: skip
    assert chosen.code == 0, chosen.err
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert [r["rank"] for r in summary["ranks"]] == [0, 3]
    job = point_job_name(NAME, campaign.point.name)
    assert summary["label"] == f"job {job}, run {b}, 2 report(s)"
    assert all(f"_job{b}_" in name for name in summary["reports"])


def test_analyze_sbatch_picks_its_run(campaign: Campaign, local_cluster: LocalCluster) -> None:
    a, b = campaign.complete
    script = campaign.point / "analyze.sbatch"
    env = {"NSYSGEN_SKIP_RECIPES": "1", "NSYS": _ENV["NSYS"]}
    job_id = local_cluster.submit(script, "--job-id", a, env=env)
    state = local_cluster.wait(job_id, timeout=400)
    log = local_cluster.log(campaign.point, job_id)
    assert state == ("COMPLETED", "0:0"), log
    assert "verify: complete: 2 of 2 reports ok" in log
    out = campaign.reports / f"job{a}" / "analysis"
    assert "analyze.sbatch: outputs in " + str(out) in log
    summary = json.loads((out / "summary.json").read_text())
    assert all(f"_job{a}_" in name for name in summary["reports"]) and len(summary["reports"]) == 2
