"""`nsysgen analyze` over partial and mixed real reports (2 x H200 DDP, rank 1 late every
step: tests/data/gpu/steps17): a rank whose report lacks kernels is named not judged in the
verdict's first words, never cleared as on time; a second report of one rank, and two jobs under
one job id, are refused (exit 2), never merged into one world."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read.ranks import NO_GATE, NO_RANGE
from nsysgen.analyze.render import html_sections, steps_plot
from tests.conftest import REPO, RunCli

STEPS17 = REPO / "tests" / "data" / "gpu" / "steps17"


def slow_run(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for rank in (0, 1):
        shutil.copy(STEPS17 / f"s17-slow_job2_rank{rank}.sqlite", folder)
    return folder


def drop(export: Path, sql: str) -> None:
    with closing(sqlite3.connect(export)) as db:
        db.execute(sql)
        db.commit()


def verdict(run_cli: RunCli, folder: Path, out: Path) -> dict[str, object]:
    result = run_cli("analyze", str(folder), "--output", str(out), "--serial")
    assert result.code == 0, result.err
    summary = json.loads((out / "summary.json").read_text())
    found: dict[str, object] = summary["verdict"]
    return found


def test_the_late_rank_is_named_on_the_whole_reports(tmp_path: Path, run_cli: RunCli) -> None:
    found = verdict(run_cli, slow_run(tmp_path / "r"), tmp_path / "out")
    assert found["late_rank"] == 1 and found["not_judged"] == {}


def test_a_rank_without_kernels_is_not_judged_and_never_on_time(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """Rank 1's kernel table dropped: its lateness cannot be measured, so it is named, and the
    verdict is about the others only. (These runs use gloo: no NCCL kernels anywhere; a rank
    short of the others' NCCL kernels: tests/analyze/read/test_ranks.py.)"""
    folder = slow_run(tmp_path / "r")
    drop(folder / "s17-slow_job2_rank1.sqlite", "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    why = "its report holds no CUDA kernels"
    found = verdict(run_cli, folder, tmp_path / "out")
    assert found["not_judged"] == {"1": why}
    text = str(found["text"])
    assert text.startswith(f"not judged: rank 1 ({why}); "), text
    assert "; no rank late" not in text
    # Nor blamed: its step times (from CPU ranges) are not comparable with rank 0's (the GPU's).
    assert found["late_rank"] is None, text
    assert text.endswith("one rank left to judge: who was late needs two ranks or more"), text
    # Nor drawn: the pictures and the report's breakdown show the judged rank only.
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    figure = steps_plot.breakdown_figure(Summary.from_json(summary))
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == ["0"]
    section = html_sections.breakdown(Summary.from_json(summary))
    assert "rank 0" in section and "rank 1" not in section


def test_a_step_missing_on_one_rank_is_named_and_measures_no_other(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """Rank 1's range for step 11 dropped: step 11 is named not judged on rank 1, and so is step
    12, which no gate opens there (measured from step 10's gate, two steps back, rank 1 read
    86.9 ms late on average instead of 48.3; measured from its own entry, beside rank 0's gate,
    step 12 read nobody late). The other steps read as on the whole reports."""
    whole = verdict(run_cli, slow_run(tmp_path / "whole"), tmp_path / "whole-out")
    folder = slow_run(tmp_path / "r")
    drop(folder / "s17-slow_job2_rank1.sqlite", "DELETE FROM NVTX_EVENTS WHERE text = 'step 11'")
    found = verdict(run_cli, folder, tmp_path / "out")
    assert found["not_judged_steps"] == {"11": {"1": NO_RANGE}, "12": {"1": NO_GATE}}
    assert found["not_judged"] == {}
    text = str(found["text"])
    assert text.startswith(
        f"not judged: step 11 on rank 1 ({NO_RANGE}); step 12 on rank 1 ({NO_GATE}); "
    ), text
    assert found["late_rank"] == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    steps = {row["step"]: row for row in summary["by_step"]}
    assert not steps[11]["judged"] and not steps[12]["judged"]
    # Step 12's path is not walked: its lateness is not measured on any rank (not 0: on time).
    for entry in summary["ranks"]:
        at = {row["step"]: row for row in entry["steps"]}
        assert at[12]["late_ms"] is None, entry["rank"]
        assert isinstance(at[13]["late_ms"], float)
    before = {row["step"]: row for row in json.loads(
        (tmp_path / "whole-out" / "summary.json").read_text())["by_step"]}  # fmt: skip
    # The report's window section counts the same judged steps as the verdict.
    assert "Judged: steps 9, 10, 13, 14 (4 steps)." in html_sections.window(
        Summary.from_json(summary)
    )
    for step in (9, 10, 13, 14):
        assert steps[step]["judged"], step
        assert steps[step]["late_ms"] == before[step]["late_ms"], step
    assert isinstance(found["by_ms"], float) and isinstance(whole["by_ms"], float)
    assert found["by_ms"] < 1.2 * whole["by_ms"]


def test_a_second_report_of_one_rank_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    folder = slow_run(tmp_path / "r")
    shutil.copy(folder / "s17-slow_job2_rank1.sqlite", folder / "s17-slow_job2_rank1_copy.sqlite")
    result = run_cli("analyze", str(folder), "--output", str(tmp_path / "out"), "--serial")
    assert result.code == 2, result.err
    assert "rank 1 is in 2 reports" in result.err and "Traceback" not in result.err
    assert not (tmp_path / "out" / "summary.json").exists()


def test_two_jobs_under_one_id_are_refused(tmp_path: Path, run_cli: RunCli) -> None:
    folder = slow_run(tmp_path / "r")
    shutil.copy(folder / "s17-slow_job2_rank1.sqlite", folder / "other_job2_rank2.sqlite")
    result = run_cli("analyze", str(folder), "--output", str(tmp_path / "out"), "--serial")
    assert result.code == 2, result.err
    assert "reports of 2 jobs named other, s17-slow under one job id (2)" in result.err


NCCL_EXPORT = REPO / "tests" / "data" / "gpu" / "nccl-allreduce.sqlite"  # nsys 2025.3.1


def test_nccl_kernels_without_their_ranges_are_not_called_absent(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """NVTX_EVENTS dropped: the kernels are there; what is missing is named, not the kernels."""
    folder = tmp_path / "r"
    folder.mkdir()
    export = folder / "r_job1_rank0.sqlite"
    shutil.copy(NCCL_EXPORT, export)
    drop(export, "DROP TABLE NVTX_EVENTS")
    result = run_cli("analyze", str(folder), "--output", str(tmp_path / "out"), "--serial")
    assert result.code == 0, result.err
    assert "no NCCL kernels" not in result.out
    assert "NCCL kernels in 1 report(s), but no NCCL call read" in result.out


@pytest.mark.parametrize("job", ["$x^$_{a}", "j" * 200], ids=["mathtext", "200-chars"])
def test_a_hostile_job_name_is_plain_text_in_every_figure(
    tmp_path: Path, run_cli: RunCli, job: str
) -> None:
    folder = tmp_path / "r"
    folder.mkdir()
    for rank in (0, 1):
        shutil.copy(
            STEPS17 / f"s17-slow_job2_rank{rank}.sqlite", folder / f"{job}_job2_rank{rank}.sqlite"
        )
    result = run_cli("analyze", str(folder), "--output", str(tmp_path / "out"), "--serial")
    assert result.code == 0, result.err
    assert list((tmp_path / "out").glob("*.png"))


def test_pipeline_stages_below_one_are_refused(tmp_path: Path, run_cli: RunCli) -> None:
    folder = slow_run(tmp_path / "r")
    result = run_cli("analyze", str(folder), "--pipeline-stages", "0", "--serial")
    assert result.code == 2 and "--pipeline-stages 0: must be at least 1" in result.err
    assert not (folder / "analysis").exists()
