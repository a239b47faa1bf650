"""The one rule for which run of a report folder is read (nsysgen/reports/runs.py), as both `nsysgen
analyze` and the verifier apply it (tests/analyze/read/test_runs.py holds the two to it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysgen.reports.runs import RunError, choose_run, job_of, report_stem

PATTERN = r"t_job(?P<SLURM_JOB_ID>[^/]*?)_rank(?P<SLURM_PROCID>[^/]*?)"


def touch(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("")
    return folder


def test_a_report_is_one_whatever_files_it_has_and_exports_in_progress_are_none() -> None:
    assert report_stem(Path("a_job3_rank0.nsys-rep")) == "a_job3_rank0"
    assert report_stem(Path("a.b_job3_rank0.sqlite")) == "a.b_job3_rank0"
    assert report_stem(Path(".a_job3_rank0.9.partial.sqlite")) is None
    assert report_stem(Path("a_job3_rank0.nsys-rep.xz")) is None


def test_the_job_id_is_read_through_the_setups_pattern_where_known() -> None:
    # A job named like a run folder: only the setup's own pattern tells the id apart.
    assert job_of("my_job2_x_job123_rank0") == "2"
    mine = r"my_job2_x_job(?P<SLURM_JOB_ID>[^/]*?)_rank(?P<SLURM_PROCID>[^/]*?)"
    assert job_of("my_job2_x_job123_rank0", mine) == "123"
    assert job_of("t_pod-0", "") is None


def test_the_newest_run_folder_and_what_was_left_out(tmp_path: Path) -> None:
    for job in (9, 10):
        touch(tmp_path / f"job{job}", f"t_job{job}_rank0.nsys-rep", f"t_job{job}_rank0.sqlite")
    touch(tmp_path / "job10", "t_job8_rank0.nsys-rep")  # copied in by hand
    choice = choose_run(tmp_path, None, PATTERN)
    assert (choice.folder.name, choice.job_id, choice.stems) == ("job10", "10", ("t_job10_rank0",))
    assert (list(choice.others), choice.other_jobs) == (["9"], {"8": ("t_job8_rank0",)})


def test_reports_without_a_job_id_beside_others_are_set_apart(tmp_path: Path) -> None:
    touch(tmp_path, "t_job5_rank0.nsys-rep", "stray.nsys-rep")
    choice = choose_run(tmp_path, None, PATTERN)
    assert (choice.job_id, choice.stems, choice.unknown) == ("5", ("t_job5_rank0",), ("stray",))


@pytest.mark.parametrize(
    ("layout", "job_id", "error"),
    [
        ({"job9": ["t_job9_rank0.nsys-rep"]}, "10", "--job-id 10: no run of it in"),
        ({"run-20261202T030000Z": ["p.nsys-rep"]}, "3", "are fetched runs, named by when"),
        ({".": ["t_job9_rank0.nsys-rep"]}, "x", r"not a Slurm job id \(allowed: digits\)"),
    ],
)
def test_what_cannot_be_chosen_is_refused_by_name(
    tmp_path: Path, layout: dict[str, list[str]], job_id: str, error: str
) -> None:
    for folder, names in layout.items():
        touch(tmp_path / folder, *names)
    with pytest.raises(RunError, match=error):
        choose_run(tmp_path, job_id, PATTERN)
    with pytest.raises(RunError, match="does not exist"):
        choose_run(tmp_path / "nowhere", None)
