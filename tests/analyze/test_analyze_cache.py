"""The analysis cache: a second `nsysgen analyze` of unchanged reports reads each report's
result from `x.nsysgen-reduced.json`, starts no Dask cluster, keeps the plots whose data did not
change, and writes exactly what a fresh analysis writes; whatever changed is computed again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nsysgen.analyze import record as analyze_record
from nsysgen.analyze.read import cache as cache_module
from nsysgen.analyze.read import map as analyze_map
from nsysgen.analyze.read.cache import reduced_file
from nsysgen.analyze.read.map import Task
from nsysgen.analyze.read.report import Reduced
from nsysgen.analyze.reduce import Outcome, reduce
from nsysgen.analyze.render import plot as analyze_plot
from nsysgen.analyze.render import steps_plot as analyze_steps_plot
from tests.analyze.test_analyze import GPU_SQLITE, fake_nsys
from tests.conftest import REPO, RunCli

# Two ranks with steps on one H200, one late on some (issue 17's device reports).
STEPPED = sorted((REPO / "tests" / "data" / "gpu" / "steps17").glob("s17-hiccup_*.sqlite"))


def outputs(folder: Path) -> dict[str, bytes]:
    """What an analysis wrote (its run record names the reports' keys, which differ by copy)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != analyze_record.RECORD
    }


def stepped_reports(tmp_path: Path) -> Path:
    """A folder with copies of the two-rank stepped device exports."""
    reports = tmp_path / "reports"
    reports.mkdir()
    for export in STEPPED:
        shutil.copy(export, reports)
    return reports


def count_tasks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the reports whose task runs (in this process: --serial, where each task's
    export is made ahead and then read)."""
    ran: list[str] = []
    real = analyze_map._reduce

    def counted(task: Task, export: Path, key: dict[str, Any] | None) -> Reduced:
        ran.append(task.export.stem)
        return real(task, export, key)

    monkeypatch.setattr(analyze_map, "_reduce", counted)
    return ran


def reports_from_nsys(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two .nsys-rep reports, a fake nsys that exports them (to the GPU report's export) and
    the log of its calls."""
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("a", "b"):
        (reports / f"job_rank{ord(name) - 97}_{name}.nsys-rep").write_bytes(
            b"report " + name.encode()
        )
    log = tmp_path / "nsys.log"
    return reports, fake_nsys(tmp_path, log), log


@pytest.mark.slow
def test_cached_run_imports_neither_dask_nor_matplotlib_and_writes_the_same(
    tmp_path: Path,
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    # One run: the NCCL exports named as ranks 2 and 3 of the stepped job.
    for rank in range(2):
        shutil.copy(GPU_SQLITE, reports / f"s17-hiccup_job3_rank{rank + 2}.sqlite")
    for export in STEPPED:
        shutil.copy(export, reports)
    probe = (
        "import sys\nfrom nsysgen.cli import main\n"
        "code = main(['analyze', sys.argv[1], '--workers', '2', '--output', sys.argv[2]])\n"
        "print(code, *(m in sys.modules for m in ('distributed', 'matplotlib', 'hydra')))\n"
    )

    def run(out: Path) -> str:
        proc = subprocess.run(
            [sys.executable, "-c", probe, str(reports), str(out)],
            capture_output=True,
            text=True,
            check=True,
        )
        return proc.stdout.splitlines()[-1]

    first = tmp_path / "first"
    assert run(first) == "0 True True False"
    assert len(list(reports.glob("*.nsysgen-reduced.json"))) == 4
    written = {p.name: p.stat().st_mtime_ns for p in first.glob("*.png")}
    assert sorted(written) == [
        "heatmap_lateness.png", "nccl_ncclAllReduce_by_size.png",
        "nccl_ncclAllReduce_durations.png", "rank_breakdown.png",
    ]  # fmt: skip
    # The second run: every result and every plot from the cache, no cluster, no matplotlib.
    assert run(first) == "0 False False False"
    assert {p.name: p.stat().st_mtime_ns for p in first.glob("*.png")} == written
    # And what it wrote is what an analysis from scratch writes.
    fresh = tmp_path / "fresh"
    shutil.copytree(reports, fresh, ignore=shutil.ignore_patterns("*.json"))
    from_scratch = tmp_path / "scratch"
    subprocess.run(
        [sys.executable, "-m", "nsysgen", "analyze", str(fresh), "--serial", "--output",
         str(from_scratch)], check=True, capture_output=True,
    )  # fmt: skip
    assert outputs(first) == outputs(from_scratch)


@pytest.mark.slow
def test_only_a_changed_report_is_computed_again(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports, tool, log = reports_from_nsys(tmp_path)
    ran = count_tasks(monkeypatch)
    out = tmp_path / "out"

    def run() -> dict[str, bytes]:
        result = run_cli("analyze", str(reports), "--nsys", str(tool), "--serial", "--output",
                         str(out))  # fmt: skip
        assert result.code == 0, result.err
        return outputs(out)

    first = run()
    assert sorted(ran) == ["job_rank0_a", "job_rank1_b"]
    assert run() == first and len(ran) == 2
    # Same size, same mtime, other content: the report's key catches it; only b is redone.
    changed = reports / "job_rank1_b.nsys-rep"
    stat = changed.stat()
    changed.write_bytes(b"report c")
    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert run() == first
    exports = [line for line in log.read_text().splitlines() if "--help" not in line]
    assert ran[2:] == ["job_rank1_b"] and len(exports) == 3
    # An export replaced by hand (its report unchanged) is read again too.
    export = reports / "job_rank0_a.sqlite"
    shutil.copy(GPU_SQLITE, export)
    os.utime(export, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert run() == first
    assert ran[3:] == ["job_rank0_a"]


@pytest.mark.slow
def test_a_damaged_cache_or_other_code_is_computed_again(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    for rank in range(2):
        shutil.copy(GPU_SQLITE, reports / f"job_rank{rank}.sqlite")
    ran = count_tasks(monkeypatch)
    out = tmp_path / "out"

    def run() -> dict[str, bytes]:
        result = run_cli("analyze", str(reports), "--serial", "--output", str(out))
        assert result.code == 0, result.err
        return outputs(out)

    first = run()
    assert len(ran) == 2
    cache = reduced_file(reports / "job_rank0.sqlite")
    for damage in ("{not json", json.dumps({"key": json.loads(cache.read_text())["key"]}), "[]"):
        cache.write_text(damage)
        assert run() == first
    assert ran[2:] == ["job_rank0"] * 3
    assert json.loads(cache.read_text())["result"]["name"] == "job_rank0"
    # Other reducing code (another nsysgen): every result is computed again.
    monkeypatch.setattr(cache_module, "code_digest", lambda: "another nsysgen")
    assert run() == first
    assert sorted(ran[5:]) == ["job_rank0", "job_rank1"]


@pytest.mark.slow
def test_a_plot_is_drawn_again_when_edited_removed_or_its_data_changed(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = stepped_reports(tmp_path)
    out = tmp_path / "out"
    drawn: list[str] = []
    real = analyze_plot.save

    def counted(build: Callable[[], Any], target: Path) -> Path:
        drawn.append(target.name)
        return real(build, target)

    monkeypatch.setattr(analyze_steps_plot, "save", counted)

    def run(*extra: str) -> dict[str, bytes]:
        result = run_cli("analyze", str(reports), "--serial", "--output", str(out), *extra)
        assert result.code == 0, result.err
        return outputs(out)

    first = run()
    pictures = sorted(drawn)
    assert {"heatmap_lateness.png", "rank_breakdown.png"} <= set(pictures), pictures
    assert run() == first and len(drawn) == len(pictures)
    edited, removed = pictures[0], pictures[-1]
    (out / edited).write_bytes(b"edited")
    (out / removed).unlink()
    assert run() == first
    assert sorted(drawn[len(pictures) :]) == sorted({edited, removed})
    # Other thresholds: another summary, so every picture is drawn again.
    before = len(drawn)
    run("--straggler-min-ms", "500")
    assert sorted(drawn[before:]) == pictures


@pytest.mark.slow
def test_an_unchanged_analysis_is_replayed_and_anything_changed_runs_again(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every result cached and OUT as the last run left it, the run is replayed from
    OUT/.nsysgen-run.json: the same lines and exit code, nothing computed or written. A changed
    option, baseline, report or output file runs the analysis again."""
    reports = stepped_reports(tmp_path)
    out = tmp_path / "out"
    analysed: list[int] = []
    real = reduce

    def counted(*args: Any) -> Outcome:
        analysed.append(1)
        return real(*args)

    monkeypatch.setattr("nsysgen.analyze.cli.reduce", counted)

    def run(*extra: str) -> tuple[str, dict[str, bytes]]:
        result = run_cli("analyze", str(reports), "--serial", "--output", str(out), *extra)
        assert result.code == 0, result.err
        return result.out, outputs(out)

    first = run()
    assert run() == first and len(analysed) == 1  # replayed
    run("--straggler-min-ms", "500")
    assert len(analysed) == 2
    assert run() == first and len(analysed) == 3  # the options of the first run again
    (out / "summary.json").write_text("{}")
    assert run() == first and len(analysed) == 4
    (out / "steps.csv").unlink()
    assert run() == first and len(analysed) == 5
    baseline = tmp_path / "baseline"
    shutil.copytree(out, baseline)
    run("--baseline", str(baseline))
    assert len(analysed) == 6
    run("--baseline", str(baseline))
    assert len(analysed) == 6
    summary = json.loads((baseline / "summary.json").read_text())
    summary["ranks"] = []
    (baseline / "summary.json").write_text(json.dumps(summary))
    run("--baseline", str(baseline))
    assert len(analysed) == 7
    export = sorted(reports.glob("*.sqlite"))[0]
    os.utime(export, ns=(export.stat().st_atime_ns, export.stat().st_mtime_ns + 10**9))
    assert run() == first and len(analysed) == 8
