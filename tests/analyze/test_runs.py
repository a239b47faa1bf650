"""Which run `nsysgen analyze` and `nsysgen verify` read: one run, never two mixed, the newest
by default, and the others named."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.analyze.nccl import AnalyzeError
from nsysgen.analyze.runs import select
from nsysgen.shipped.verify import BadInput, select_run


def touch(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("")
    return folder


def test_a_report_folder_of_runs_reads_the_newest_and_says_so(tmp_path: Path) -> None:
    for job in (9, 10, 11):
        touch(tmp_path / f"job{job}", f"t_job{job}_rank0.sqlite", f"t_job{job}_rank1.sqlite")
    run = select(tmp_path, None)
    assert run.path == tmp_path / "job11" and run.reports == 2
    assert run.label() == "job t, run 11, 2 report(s)"
    assert run.notes == (
        f"3 runs in {tmp_path}: analysing job11 (the newest); not read: job9, job10 "
        "(--job-id ID for another)",
    )
    assert select(tmp_path, "9").path == tmp_path / "job9"
    with pytest.raises(AnalyzeError, match="--job-id 12: no run of it in .* job9, job10, job11"):
        select(tmp_path, "12")


def test_reports_of_several_jobs_in_one_folder_are_told_apart(tmp_path: Path) -> None:
    touch(tmp_path, "t_job5_rank0.sqlite", "t_job5_rank1.sqlite", "t_job7_rank0.sqlite")
    run = select(tmp_path, None)
    assert (run.only, run.reports) == ("7", 1)
    assert "reports of 2 jobs in" in run.notes[0] and "job 5 (2)" in run.notes[0]
    assert select(tmp_path, "5").only == "5"
    touch(tmp_path, "unnamed.sqlite")
    with pytest.raises(AnalyzeError, match="some without a job id"):
        select(tmp_path, None)


def test_one_run_alone_is_read_whole(tmp_path: Path) -> None:
    run = select(touch(tmp_path / "job3", "t_job3_rank0.sqlite", "t_job3_rank1.sqlite"), None)
    assert (run.only, run.job_id, run.reports, run.notes) == (None, "3", 2, ())


def test_fetched_eks_runs_read_the_newest(tmp_path: Path) -> None:
    touch(tmp_path / "run-20261202T030000Z", "j_pod-0.sqlite")
    touch(tmp_path / "run-20261202T040000Z", "j_pod-0.sqlite", "j_pod-1.sqlite")
    run = select(tmp_path, None)
    assert run.path.name == "run-20261202T040000Z" and run.reports == 2
    assert "not read: run-20261202T030000Z" in run.notes[0]


EXPECT = {
    "job": "t",
    "run_folders": True,
    "job_in_name": True,
    "reports": [],
    "generic_regex": r"t_job(?P<SLURM_JOB_ID>[^/]*?)_rank(?P<SLURM_PROCID>[^/]*?)",
}


def test_verify_picks_one_run_the_same_way(tmp_path: Path) -> None:
    for job in (9, 10):
        touch(tmp_path / f"job{job}", f"t_job{job}_rank0.nsys-rep")
    run = select_run(EXPECT, tmp_path, None)
    assert (run.folder, run.job_id, sorted(run.others)) == (tmp_path / "job10", "10", ["9"])
    assert select_run(EXPECT, tmp_path / "job9", None).job_id == "9"
    with pytest.raises(BadInput, match="is the folder of job 9"):
        select_run(EXPECT, tmp_path / "job9", "10")
    with pytest.raises(BadInput, match="not a Slurm job id"):
        select_run(EXPECT, tmp_path, "../x")
    eks = {**EXPECT, "run_folders": False, "job_in_name": False}
    touch(tmp_path / "eks" / "run-20261202T030000Z", "p.nsys-rep")
    touch(tmp_path / "eks" / "run-20261202T040000Z", "p.nsys-rep")
    fetched = select_run(eks, tmp_path / "eks", None)
    assert fetched.folder.name == "run-20261202T040000Z" and list(fetched.others) == [
        "run-20261202T030000Z"
    ]
