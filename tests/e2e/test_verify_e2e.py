"""`nsysgen verify` on real jobs: the local Slurm cluster, nsys 2023.4.4, a CPU program with NVTX
"step N" ranges. Four jobs run at once (2 nodes x 2 tasks each): a complete capture, a window that
opens after the program's end, a job cancelled during its capture and one that runs into its
time limit; the tests then check what verify says about each."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.realparts import (
    ACTIVE,
    LocalCluster,
    nsys_start_fault,
    python_workload,
)

pytestmark = [pytest.mark.slurm, pytest.mark.nsys]

SHAPE = ["cluster.gpus_per_node=2", "target.exclusive=false", "capture.trace=[nvtx,osrt]"]
JOBS = {
    # name: (program arguments, overrides)
    "vf-complete": (
        ["--steps=8", "--profile-steps=3:5"],
        ["capture=nvtx", "capture.nvtx_range=profile", "capture.ranks=[0,3]"],
    ),
    "vf-late": (
        ["--steps=4"],
        ["capture=window", "capture.delay=25", "capture.duration=5", "capture.ranks=[1]"],
    ),
    "vf-cancel": (
        ["--steps=600", "--step-seconds=0.1", "--idle"],
        ["capture=window", "capture.delay=0", "capture.duration=40", "capture.ranks=[0,2]"],
    ),
    "vf-limit": (
        ["--steps=1200", "--step-seconds=0.1", "--idle"],
        [
            "capture=window",
            "capture.delay=0",
            "capture.duration=0",
            "capture.ranks=[2]",
            "job.time_limit_min=1",
        ],
    ),
}
CANCEL_AFTER_S = 8  # seconds of capture before vf-cancel is cancelled


@dataclass(frozen=True)
class Job:
    folder: Path
    job_id: str
    reports: Path
    cluster: LocalCluster

    def context(self) -> str:
        """What a failed assertion needs to be understood from CI's output alone: the job's
        final state, the files nsys left, and the job log."""
        state = self.cluster.state(self.job_id)
        files = sorted(
            str(p.relative_to(self.reports)) for p in self.reports.rglob("*") if p.is_file()
        )
        marks = {m.name: m.read_text() for m in sorted((self.folder / "markers").glob("*"))}
        log = self.cluster.log(self.folder, self.job_id)
        return (
            f"\n--- job {self.job_id}: {state}; files: {files}\n--- markers: {marks}"
            f"\n--- log:\n{log[-6000:]}"
        )


@pytest.fixture(scope="module")
def jobs(local_cluster: LocalCluster, nsys_2023: Path) -> Iterator[dict[str, Job]]:
    submitted: dict[str, Job] = {}
    for name, (program, overrides) in JOBS.items():
        limit = [] if any(o.startswith("job.time") for o in overrides) else ["job.time_limit_min=5"]
        markers = local_cluster.shared_fs / "jobs" / name / "markers"
        folder = local_cluster.compile(
            *python_workload(local_cluster, *program, f"--marker-dir={markers}"),
            *SHAPE,
            *overrides,
            *limit,
            f"job.name={name}",
        )
        markers.mkdir()
        job_id = local_cluster.submit(folder / "job.sbatch")
        reports = local_cluster.shared_fs / "nsight-reports" / name
        submitted[name] = Job(folder, job_id, reports, local_cluster)
    # vf-cancel is cancelled a while after *both* its recorded tasks began capturing (nsys
    # creates the task's .qdstrm in its temp folder when the capture starts), not after a
    # fixed time from RUNNING: on a loaded machine nsys can take longer than that to start.
    cancel = submitted["vf-cancel"]
    capture_dirs = [
        cancel.reports / f"job{cancel.job_id}" / ".nsysgen" / f"task{t}" for t in (0, 2)
    ]
    capturing_since: float | None = None
    cancelled = False
    states: dict[str, str] = {}
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        states = {name: local_cluster.state(job.job_id)[0] for name, job in submitted.items()}
        if capturing_since is None and all(any(d.glob("*.qdstrm")) for d in capture_dirs):
            capturing_since = time.monotonic()
        capturing = 0.0 if capturing_since is None else time.monotonic() - capturing_since
        if not cancelled and capturing > CANCEL_AFTER_S:
            subprocess.run(["scancel", cancel.job_id], env=local_cluster.env)
            cancelled = True
        if not ACTIVE.intersection(states.values()):
            break
        time.sleep(0.5)
    unfinished = {name: state for name, state in states.items() if state in ACTIVE}
    assert not unfinished and cancelled, (
        f"still running after 600 s: {unfinished}; vf-cancel cancelled: {cancelled}"
        + "".join(job.context() for job in submitted.values())
    )
    for name, job in list(submitted.items()):
        log = local_cluster.log(job.folder, job.job_id)
        if name != "vf-cancel" and nsys_start_fault(log):
            # nsys 2023.4.4's own start-up fault took a task: this job once more, alone (the
            # cancelled one depends on its timing and is judged as it ran).
            local_cluster.clean_run(job.folder, job.job_id)
            _, job_id, _ = local_cluster.sbatch_wait(job.folder)
            submitted[name] = Job(job.folder, job_id, job.reports, local_cluster)
    yield submitted


def verify(job: Job, *extra: str) -> subprocess.CompletedProcess[str]:
    """The standalone nsysgen-verify.py (one copy above the folders), as recipes.sh runs it."""
    return subprocess.run(
        [sys.executable, str(job.folder.parent / "nsysgen-verify.py"), str(job.folder), *extra],
        capture_output=True,
        text=True,
    )


def copy_reports(job: Job, tmp_path: Path) -> Path:
    """A copy of the job's run folder (job<ID>/), as a user copies one run elsewhere."""
    copy = tmp_path / "reports" / f"job{job.job_id}"
    shutil.copytree(job.reports / f"job{job.job_id}", copy)
    return copy


def test_complete_job_verifies(jobs: dict[str, Job], run_cli) -> None:  # type: ignore[no-untyped-def]
    job = jobs["vf-complete"]
    result = run_cli("verify", str(job.folder), "--json")
    assert result.code == 0, result.out + result.err + job.context()
    data = json.loads(result.out)
    assert data["job_id"] == job.job_id and data["complete"] is True
    assert [(r["label"], r["node"], r["status"]) for r in data["reports"]] == [
        ("rank 0", "node1 (0)", "ok"),
        ("rank 3", "node2 (1)", "ok"),
    ]
    assert data["extras"] == []


def test_deleted_rank_is_named_with_its_node(jobs: dict[str, Job], tmp_path: Path) -> None:
    job = jobs["vf-complete"]
    reports = copy_reports(job, tmp_path)
    for path in reports.glob(f"vf-complete_job{job.job_id}_rank3_*"):
        path.unlink()
    proc = verify(job, "--reports", str(reports))
    print(proc.stdout)
    assert proc.returncode == 1, proc.stdout + proc.stderr + job.context()
    assert "rank 3  node2 (1)  MISSING" in proc.stdout
    assert "rank 0  node1 (0)  OK" in proc.stdout, proc.stdout + job.context()
    assert "verify: INCOMPLETE: 1 of 2 reports missing or wrong, 0 unexpected" in proc.stdout


def test_stray_reports_are_flagged(jobs: dict[str, Job], tmp_path: Path) -> None:
    job = jobs["vf-complete"]
    reports = copy_reports(job, tmp_path)
    rank0 = next(reports.glob(f"vf-complete_job{job.job_id}_rank0_*.nsys-rep"))
    shutil.copy(rank0, reports / f"vf-complete_job{job.job_id}_rank1_node0_node1.nsys-rep")
    shutil.copy(rank0, reports / "vf-complete_job999999_rank0_node0_node1.nsys-rep")
    shutil.copy(rank0, reports / "notes.nsys-rep")
    proc = verify(job, "--reports", str(reports), "--job-id", job.job_id)
    print(proc.stdout)
    assert proc.returncode == 1, proc.stdout + proc.stderr + job.context()
    assert "problem: task 1 recorded but should not" in proc.stdout
    # Another job's report is that job's, not this run's: named, never read or counted.
    assert "1 report file(s) of other jobs" in proc.stdout and "(999999), not read" in proc.stdout
    assert "problem: not a report name of this setup" in proc.stdout
    assert "verify: INCOMPLETE: 0 of 2 reports missing or wrong, 2 unexpected" in proc.stdout, (
        proc.stdout + job.context()
    )


def test_window_after_the_last_step_was_never_reached(jobs: dict[str, Job]) -> None:
    job = jobs["vf-late"]
    proc = verify(job)
    print(proc.stdout)
    assert proc.returncode == 1, proc.stdout + proc.stderr + job.context()
    assert "rank 1  node1 (0)  MISSING" in proc.stdout
    assert (
        "likely cause: window never reached: the program ended before the window opened "
        "(25 s after launch)" in proc.stdout
    )


def test_cancelled_mid_capture_keeps_its_reports_and_says_what_is_lost(
    jobs: dict[str, Job],
) -> None:
    job = jobs["vf-cancel"]
    proc = verify(job)
    print(proc.stdout)
    # Both reports survive the cancel (nsys writes them on SIGTERM); the capture is shorter
    # than asked, and verify says so, with the cause from the job's log.
    assert proc.returncode == 1, proc.stdout + proc.stderr + job.context()
    assert proc.stdout.count(" WRONG ") == 2, proc.stdout + job.context()
    assert "asked 40 s" in proc.stdout
    assert "likely cause: the job was cancelled" in proc.stdout
    assert "likely cause: the program ended (or the job was stopped) before the window" in (
        proc.stdout
    )
    assert len(list((job.reports / f"job{job.job_id}").glob("*.nsys-rep"))) == 2


def test_time_limit_signal_lets_nsys_write_the_report(jobs: dict[str, Job]) -> None:
    """The report survives the time limit (SIGTERM from --signal, before the limit), or verify
    says exactly what was lost: the capture nsys left in the task's temp dir, unconvertible, or
    a report written before the program's first range. (Slurm may send the signal up to 60 s
    early, on a 1-minute job even during nsys's or the program's start.)"""
    job = jobs["vf-limit"]
    assert "#SBATCH --signal=TERM@30" in (job.folder / "job.sbatch").read_text()
    proc = verify(job)
    print(proc.stdout)
    if proc.returncode == 0:
        assert "rank 2  node2 (1)  OK" in proc.stdout, proc.stdout + job.context()
    else:
        assert proc.returncode == 1, proc.stdout + proc.stderr + job.context()
        if "rank 2  node2 (1)  WRONG" in proc.stdout:
            # The signal came before the program's first step: nsys wrote a report, empty.
            assert "problem: no NVTX ranges although nvtx is traced" in proc.stdout
            assert "likely cause: the job was cancelled" in proc.stdout
            return
        assert "rank 2  node2 (1)  UNREADABLE" in proc.stdout, proc.stdout + job.context()
        assert "problem: only a .qdstrm, which does not convert" in proc.stdout
        assert "likely cause: nsys was killed while capturing or writing" in proc.stdout
