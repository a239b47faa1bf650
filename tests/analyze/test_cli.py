"""`nsysgen analyze`'s own face (nsysgen/analyze/cli.py), on exports of no steps and no calls
(fast: nothing to draw): what it prints and in which order, a run replayed from its record
whatever the placement options say and run again when an option of the analysis changes, one
job read of a folder of two, and its refusals before anything is written."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from nsysgen.analyze import record
from nsysgen.analyze.cli import _parser, run_analyze, unknown_flag
from nsysgen.analyze.errors import AnalyzeError


def export(path: Path) -> Path:
    """An SQLite export with a table and no rows: a report of no steps and no NCCL calls."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
        db.commit()
    return path


def printed(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[str]:
    assert run_analyze(argv) == 0
    return capsys.readouterr().out.splitlines()


def test_a_run_is_replayed_across_placements_and_redone_for_other_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports, out = tmp_path / "reports", tmp_path / "out"
    export(reports / "quiet_job12_rank0.sqlite")
    first = printed(capsys, [str(reports), "--output", str(out), "--serial"])
    assert first[0] == "verdict: no step ranges ('step N') in the reports: no per-step verdict"
    assert first[-1] == f"wrote {out / 'report.html'}"
    assert (out / record.RECORD).is_file()
    summary = out / "summary.json"
    os.utime(summary, ns=(1_000, 1_000))  # its bytes unchanged: still the recorded output
    # Where the work runs is no part of the key: replayed, nothing written.
    assert printed(capsys, [str(reports), "--output", str(out), "--workers", "1"]) == first
    assert summary.stat().st_mtime_ns == 1_000
    # A threshold of the analysis is: run again, summary.json written anew.
    argv = [str(reports), "--output", str(out), "--serial", "--straggler-min-ms", "5"]
    assert printed(capsys, argv) == first
    assert summary.stat().st_mtime_ns != 1_000


def test_of_two_jobs_in_a_folder_the_newest_is_read_and_the_other_named_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    export(reports / "quiet_job12_rank0.sqlite")
    export(reports / "quiet_job13_rank0.sqlite")
    lines = printed(capsys, [str(reports), "--serial"])
    assert lines[0] == (
        f"reports of 2 jobs in {reports}: analysing job 13's (1); not read: job 12 (1) "
        "(--job-id ID for another)"
    )
    assert lines[1].startswith("verdict: ")
    assert (reports / "analysis" / "summary.json").is_file()
    assert sorted(p.name for p in reports.glob("*.nsysgen-reduced.json")) == [
        "quiet_job13_rank0.nsysgen-reduced.json"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--job-idd", "3"], "analyze does not take --job-idd (did you mean --job-id?)"),
        (["--outptu=x"], "analyze does not take --outptu (did you mean --output?)"),
        (
            ["--straggler_min_ms", "2"],
            "analyze does not take --straggler_min_ms (did you mean --straggler-min-ms?)",
        ),
    ],  # fmt: skip
)
def test_a_misspelt_flag_is_refused_with_the_one_meant(argv: list[str], message: str) -> None:
    with pytest.raises(AnalyzeError) as error:
        unknown_flag(_parser(), ["reports", *argv])
    assert str(error.value) == message


def test_prefixes_and_words_after_a_double_dash_are_left_to_argparse() -> None:
    unknown_flag(_parser(), ["reports", "--job", "12", "--ser"])
    unknown_flag(_parser(), ["reports", "--", "--serail"])
    unknown_flag(_parser(), ["reports", "--frobnicate"])  # nothing close: argparse says it


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--output", "{tmp}/afile"], "--output {tmp}/afile: exists and is not a folder"),
        (["--workers", "-1"], "--workers -1: must be at least 0 (0: one per core)"),
        (["--cluster", "nowhere"], "--cluster nowhere: no such cluster (allowed: "),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    reports = tmp_path / "reports"
    export(reports / "quiet_job12_rank0.sqlite")
    (tmp_path / "afile").write_text("x")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    with pytest.raises(AnalyzeError) as error:
        run_analyze([str(reports), *argv])
    assert str(error.value).startswith(message.replace("{tmp}", str(tmp_path)))
    assert sorted(p.name for p in reports.iterdir()) == ["quiet_job12_rank0.sqlite"]
