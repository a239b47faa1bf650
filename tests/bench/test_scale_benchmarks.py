"""CPU dry runs of issue 39's benchmarks, so that a change in `nsysgen analyze`'s output or the
scripts' plumbing breaks a test here and not the next benchmark run or GPU session:

- bench/bench_analyze_scale.py (a thousand reports on a local Dask cluster) at a few reports;
- bench/gpu/recipes39.sh (nsysgen against nsys's recipes, on the GPU machine) with a stand-in
  nsys (tests/bench/standin_recipes/nsys: export and recipe write real nsys exports and CSVs,
  not computed ones) and the committed .nsys-rep repeated six times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # a Dask cluster per analysis: about 30 s (scale), 60 s (recipes)

STANDIN = REPO / "tests" / "bench" / "standin_recipes" / "nsys"
EXPORT = REPO / "tests" / "data" / "gpu" / "steps17" / "s17-slow_job2_rank1.sqlite"
RECIPES = ("nccl_sum", "nvtx_gpu_proj_sum", "cuda_gpu_kern_sum")


def test_scale_benchmark_dry_run(tmp_path: Path) -> None:
    result = tmp_path / "scale.json"
    proc = subprocess.run(
        [sys.executable, "bench/bench_analyze_scale.py", "--counts", "6", "--no-browser",
         "--json", str(result)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows: list[dict[str, Any]] = json.loads(result.read_text())
    assert [(r["kind"], r["reports"]) for r in rows] == [("synthetic", 6), ("real", 6)]
    for row in rows:
        assert row["floor_s"] > 0 and row["analyze"]["seconds"] > 0
        assert row["analyze"]["exit"] == 0 and row["analyze_cached"]["exit"] == 0
        assert len(row["analyze"]["peak_rss_mb"]["worker"]) == 2  # the two Dask workers
        assert row["html_bytes"] and row["browser_open_s"] is None
    synthetic = rows[0]
    assert synthetic["stragglers"] == [4]  # planted: rank 2/3 of the way up
    # The Markdown table: a header, its rule, one row per measurement.
    table = [line for line in proc.stdout.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(rows)


def test_recipes39_dry_run(tmp_path: Path) -> None:
    out, work = tmp_path / "out", tmp_path / "work"
    log = tmp_path / "nsys.log"
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "NSYS": str(STANDIN),
        "NSYS_STANDIN_EXPORT": str(EXPORT),
        "NSYS_STANDIN_LOG": str(log),
        "OUT": str(out),
        "WORK": str(work),
        "MAX_N": "6",  # the automatic choice of N, capped
        "BASELINE_CODE": str(REPO),  # timed beside itself here: an older checkout on the device
    }
    proc = subprocess.run(
        ["bash", "bench/gpu/recipes39.sh"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=500, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result: dict[str, Any] = json.loads((out / "recipes39.json").read_text())
    assert result["reports"] == 6 and result["sources"] == ["steps-launch-window-40-44.nsys-rep"]
    assert result["floor_export_in_turn_s"]["per_report"] > 0
    runs = result["runs"]
    assert sorted(runs) == sorted(
        ["nsysgen analyze", "nsysgen analyze, cached rerun", "nsysgen analyze, after the recipes"]
        + [f"nsys recipe {r}" for r in RECIPES]
    )
    for name, run in runs.items():
        assert run["exit"] == 0, (name, run)
        assert run["seconds"] > 0 and run["max_rss_mb"] > 0
    for recipe in RECIPES:
        assert runs[f"nsys recipe {recipe}"]["wrote"][f"{recipe}.csv"]["rows"] == 6
    assert set(result["answers"]) == {"nsysgen", *RECIPES}
    assert result["nsysgen_answer"]["ranks"] == 6 and result["nsysgen_answer"]["report_html_bytes"]
    assert result["recipes_total_s"] > 0 and result["nsysgen_over_recipes"] > 0
    # Each tool read its own copy: nsysgen exported its own (one export per report), the floor
    # its sample (six), the calibration one report twice (timed, and for the export's size); the
    # recipes exported theirs (the stand-in, without `nsys export`), which nsysgen read after.
    exports = [line for line in log.read_text().splitlines() if line.startswith("export --type")]
    assert len(exports) == 6 + 6 + 2
    # The baseline code and this one in turn, twice each, every report reduced again each time.
    against = result["against_baseline_code"]
    assert [len(against["runs"][k]) for k in ("baseline", "this")] == [2, 2]
    assert all(r["exit"] == 0 for runs in against["runs"].values() for r in runs)
    assert against["this_over_baseline_best"] > 0
    assert not work.exists()  # cleaned up: the device's disk is the next run's
