"""The map step of `nsysgen analyze` (nsysgen/analyze/map.py) without a cluster: a report's
cache key, the export cache's states, the cached result's round trip and its key, the tasks
planned for a folder, the serial map in report order, and the progress line."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest

from nsysgen.analyze import map as analyze_map
from nsysgen.analyze.map import Progress, Task, Where
from nsysgen.analyze.nccl import AnalyzeError
from nsysgen.analyze.report import read_export
from tests.conftest import REPO

STEPS17 = REPO / "tests" / "data" / "gpu" / "steps17"
EXPORT = STEPS17 / "s17-hiccup_job3_rank0.sqlite"
MIB = 1 << 20


def test_the_report_key_reads_only_the_first_and_last_mib(tmp_path: Path) -> None:
    report = tmp_path / "r.nsys-rep"
    data = bytearray(3 * MIB)
    report.write_bytes(bytes(data))
    key = analyze_map.report_key(report)
    assert sorted(key) == ["mtime_ns", "sha256_ends", "size"] and key["size"] == 3 * MIB
    stat = report.stat()

    def rewritten(offset: int) -> dict[str, object]:
        changed = bytearray(data)
        changed[offset] = 1
        report.write_bytes(bytes(changed))
        os.utime(report, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return analyze_map.report_key(report)

    assert rewritten(0) != key  # the first MiB
    assert rewritten(3 * MIB - 1) != key  # the last
    assert rewritten(MIB + 5) == key  # the middle: a cheap key, by design (size and mtime hold)


def test_cache_states_of_an_export(tmp_path: Path) -> None:
    report, export = tmp_path / "r.nsys-rep", tmp_path / "r.sqlite"
    report.write_bytes(b"report")
    assert analyze_map.cache_state(report, export) == "missing"
    assert analyze_map.cache_state(report, None) == "missing"
    export.write_bytes(b"export")
    # No key file: the export is current while it is no older than its report.
    os.utime(report, (1_000, 1_000))
    os.utime(export, (2_000, 2_000))
    assert analyze_map.cache_state(report, export) == "valid"
    os.utime(export, (500, 500))
    assert analyze_map.cache_state(report, export) == "stale"
    # With a key file, the key alone decides, whatever the times say.
    key_file = analyze_map.key_file(report)
    assert key_file.name == "r.nsysgen-export.json"
    key_file.write_text(json.dumps(analyze_map.report_key(report)))
    assert analyze_map.cache_state(report, export) == "valid"
    report.write_bytes(b"changed")
    assert analyze_map.cache_state(report, export) == "stale"
    key_file.write_text("{damaged")
    assert analyze_map.cache_state(report, export) == "stale"


def test_a_cached_result_round_trips_under_its_key_only(tmp_path: Path) -> None:
    export = tmp_path / EXPORT.name
    shutil.copy(EXPORT, export)
    reduced = read_export(export)
    key = analyze_map.reduced_key(None, export, None)
    assert sorted(key) == ["code", "export"]
    analyze_map.save_reduced(export, key, reduced)
    assert analyze_map.reduced_file(export).name == "s17-hiccup_job3_rank0.nsysgen-reduced.json"
    assert analyze_map.load_reduced(export, key) == reduced  # every table and row as read
    assert analyze_map.load_reduced(export, {**key, "code": "other"}) is None
    assert not list(tmp_path.glob(".*.partial"))


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
    analyze_map.save_reduced(first.export, first.result_key, read_export(first.export))
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
