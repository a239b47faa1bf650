"""The map step of `nsysgen analyze` (nsysgen/analyze/read/map.py) without a cluster: the tasks
planned for a folder, the serial map in report order, and the progress line."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from nsysgen.analyze.errors import AnalyzeError
from nsysgen.analyze.read import cache
from nsysgen.analyze.read import map as analyze_map
from nsysgen.analyze.read.map import Progress, Task, Where
from nsysgen.analyze.read.report import read_export
from tests.conftest import REPO

STEPS17 = REPO / "tests" / "data" / "gpu" / "steps17"
EXPORT = STEPS17 / "s17-hiccup_job3_rank0.sqlite"


def test_tasks_of_a_folder_keep_one_job_and_take_cached_results(tmp_path: Path) -> None:
    for name in ("s17-hiccup_job3_rank1", "s17-hiccup_job3_rank0", "s17-other_job4_rank0"):
        shutil.copy(EXPORT, tmp_path / f"{name}.sqlite")
    tasks = analyze_map.plan_tasks(tmp_path, None, only="3")
    assert [t.export.name for t in tasks] == [
        "s17-hiccup_job3_rank0.sqlite", "s17-hiccup_job3_rank1.sqlite"
    ]  # fmt: skip
    assert all(t.report is None and t.nsys is None and t.cached is None for t in tasks)
    first = tasks[0]
    assert analyze_map.result_key(first) == first.result_key is not None
    cache.save_reduced(first.export, first.result_key, read_export(first.export))
    again = analyze_map.plan_tasks(tmp_path, None, only="3")
    assert again[0].cached is not None and again[0].cached.name == "s17-hiccup_job3_rank0"
    assert again[1].cached is None
    assert len(analyze_map.plan_tasks(tmp_path, None)) == 3


def test_no_reports_names_what_the_folder_holds(tmp_path: Path) -> None:
    for name in ("a.txt", "b.log", "c.sqlite.xz", "d.csv"):
        (tmp_path / name).write_text("x")
    with pytest.raises(AnalyzeError) as error:
        analyze_map.plan_tasks(tmp_path, None)
    assert str(error.value) == (
        f"{tmp_path}: no .nsys-rep or .sqlite reports; found and skipped 4 file(s) (a.txt, "
        "b.log, c.sqlite.xz, ...); 1 compressed report file(s), which analyze does not read: "
        f"unpack them first: xz -dk {tmp_path / 'c.sqlite.xz'}"
    )


def test_a_stale_export_without_nsys_is_read_with_a_warning_and_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-nsys"))
    report = tmp_path / "r_rank0.nsys-rep"
    report.write_bytes(b"newer than its export")
    shutil.copy(EXPORT, tmp_path / "r_rank0.sqlite")
    os.utime(tmp_path / "r_rank0.sqlite", (1_000, 1_000))
    (task,) = analyze_map.plan_tasks(tmp_path, None)
    assert task == Task(
        None,
        tmp_path / "r_rank0.sqlite",
        None,
        f"warning: {tmp_path / 'r_rank0.sqlite'} is older than r_rank0.nsys-rep; reading it "
        "anyway (no nsys to export the report again)",
    )
    assert analyze_map.result_key(task) is None


def test_the_serial_map_keeps_report_order_and_counts_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("s17-hiccup_job3_rank1", "s17-hiccup_job3_rank0"):
        shutil.copy(STEPS17 / f"{name}.sqlite", tmp_path / f"{name}.sqlite")
    tasks = analyze_map.plan_tasks(tmp_path, None)
    warned = Task(None, tasks[1].export, None, "warning: read anyway")
    progress = Progress(2, io.StringIO())
    results = analyze_map.map_reports([tasks[0], warned], Where(serial=True), progress)
    assert [r.name for r in results] == ["s17-hiccup_job3_rank0", "s17-hiccup_job3_rank1"]
    assert [t.rank for r in results for t in r.tables] == [0, 1]
    assert progress.done == 2 and not progress.active  # not a terminal: nothing drawn
    assert capsys.readouterr().err == "warning: read anyway\n"
    # Each result is cached beside its export, the next plan takes it from there.
    again = analyze_map.plan_tasks(tmp_path, None)
    assert [t.cached for t in again] == results


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as stderr is under a user's shell."""

    def isatty(self) -> bool:
        return True


def test_progress_is_redrawn_in_place_on_a_terminal_and_ends_its_line() -> None:
    stream = Terminal()
    progress = Progress(2, stream)
    assert progress.active
    progress.step()
    assert stream.getvalue().startswith("\ranalysed 1/2 reports, ")
    assert not stream.getvalue().endswith("\n")
    progress.step()
    last = stream.getvalue().split("\r")[-1]
    assert last.startswith("analysed 2/2 reports, ") and last.endswith(" s left\n")
    assert not Progress(1, Terminal()).active  # one report: no line to redraw
