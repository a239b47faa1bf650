"""Which run `nsysgen analyze` and `nsysgen verify` read: one run, never two mixed, the newest
by default, and the others named; one rule (nsysgen/reports/runs.py), so the two choose the same
run on the same folders."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read.runs import select
from nsysgen.reports.contract import Expect
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
    with pytest.raises(AnalyzeError, match="--job-id 12: no run of it in .* job 9, job 10, job 11"):
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


EXPECT = cast(
    Expect,
    {
        "job": "t",
        "run_folders": True,
        "job_in_name": True,
        "reports": [],
        "generic_regex": r"t_job(?P<SLURM_JOB_ID>[^/]*?)_rank(?P<SLURM_PROCID>[^/]*?)",
    },
)


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
    eks = cast(Expect, {**EXPECT, "run_folders": False, "job_in_name": False})
    touch(tmp_path / "eks" / "run-20261202T030000Z", "p.nsys-rep")
    touch(tmp_path / "eks" / "run-20261202T040000Z", "p.nsys-rep")
    fetched = select_run(eks, tmp_path / "eks", None)
    assert fetched.folder.name == "run-20261202T040000Z" and list(fetched.others) == [
        "run-20261202T030000Z"
    ]


# Report folders as runs leave them, and copies of them.
LAYOUTS: dict[str, dict[str, list[str]]] = {
    "slurm-runs": {f"job{j}": [f"t_job{j}_rank0.nsys-rep", f"t_job{j}_rank1.nsys-rep"]
                   for j in (9, 10, 11)},
    "one-run": {".": ["t_job4_rank0.nsys-rep"]},
    "jobs-copied-together": {".": ["t_job5_rank0.nsys-rep", "t_job5_rank1.nsys-rep",
                                   "t_job7_rank0.nsys-rep"]},
    "reports-beside-runs": {".": ["t_job3_rank0.nsys-rep"], "job8": ["t_job8_rank0.nsys-rep"]},
    "fetched-runs": {"run-20261202T030000Z": ["t_pod-0.nsys-rep"],
                     "run-20261202T040000Z": ["t_pod-0.nsys-rep", "t_pod-1.nsys-rep"]},
}  # fmt: skip


def lay_out(root: Path, layout: str) -> Path:
    for folder, names in LAYOUTS[layout].items():
        touch(root / folder, *names)
    return root


@pytest.mark.parametrize("job_id", [None, "5", "9", "12"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_analyze_and_verify_choose_the_same_run(
    tmp_path: Path, layout: str, job_id: str | None
) -> None:
    root = lay_out(tmp_path, layout)
    expect = EXPECT if layout != "fetched-runs" else cast(Expect, {**EXPECT, "job_in_name": False})
    try:
        chosen = select_run(expect, root, job_id)
    except BadInput as refused:
        with pytest.raises(AnalyzeError) as also:
            select(root, job_id)
        assert str(also.value) == str(refused)  # the same words, for the same reason
        return
    run = select(root, job_id)
    assert (run.path, run.job_id) == (chosen.folder, chosen.job_id)
    if run.only is None:  # analyze reads every report there, verify every one of the job
        assert set(run.path.iterdir()) >= {p for p in chosen.folder.iterdir() if p.is_file()}


def test_two_jobs_under_one_job_id_are_refused_not_merged(tmp_path: Path) -> None:
    """Same job id, different job names: not one run, whatever the ids say."""
    touch(tmp_path, "ddp_job4242_rank0.sqlite", "ddp_job4242_rank1.sqlite")
    touch(tmp_path, "other_job4242_rank0.sqlite")
    with pytest.raises(AnalyzeError, match="reports of 2 jobs named ddp, other under one job id"):
        select(tmp_path, None)
