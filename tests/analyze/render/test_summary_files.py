"""summary.json and the CSV tables beside it (nsysgen/analyze/render/summary_files.py), from the
summary of the H200 run whose rank 1 slept 40 ms a step (tests/data/gpu/steps17): one JSON line, a
CSV row per rank x step and per rank, the stragglers' steps in one cell, an absent figure as an
empty cell; and a summary short of median keys written all the same."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from nsysgen.analyze.judge.late_ranks import find
from nsysgen.analyze.judge.stragglers import Thresholds, measure
from nsysgen.analyze.judge.summary import build
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read.ranks import assign_ranks
from nsysgen.analyze.read.report import read_export
from nsysgen.analyze.render.summary_files import write
from tests.conftest import REPO

STEPS17 = REPO / "tests" / "data" / "gpu" / "steps17"


@pytest.fixture(scope="module")
def slow() -> Summary:
    reduced = [read_export(p) for p in sorted(STEPS17.glob("s17-slow_*.sqlite"))]
    ranks = assign_ranks([r.tables for r in reduced])
    lateness = measure(ranks)
    found = find(ranks, lateness, Thresholds())
    return build(ranks, lateness, found, [], Thresholds(), 2, [r.name for r in reduced])


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_files_and_what_each_holds(slow: Summary, tmp_path: Path) -> None:
    out = tmp_path / "deep" / "out"
    written = write(slow, out)
    assert [p.name for p in written] == [
        "summary.json", "steps.csv", "ranks.csv", "stragglers.csv", "nccl_bandwidth.csv"
    ]  # fmt: skip
    text = (out / "summary.json").read_text()
    assert text.count("\n") == 1 and json.loads(text) == json.loads(json.dumps(slow.as_json()))
    assert (out / "stragglers.csv").read_text() == (
        "rank,kind,steps,mean_lateness_ms,late_on_fraction_of_steps\n"
        "1,slow rank,9 12 13 14,48.279,0.667\n"
        "0,hiccup,11,50.024,0.167\n"
    )
    # No NCCL call of known size: the header alone.
    assert (out / "nccl_bandwidth.csv").read_text().count("\n") == 1


def test_a_row_per_rank_and_step_with_absent_figures_empty(slow: Summary, tmp_path: Path) -> None:
    write(slow, tmp_path)
    steps = rows(tmp_path / "steps.csv")
    assert len(steps) == 16 and list(steps[0])[:5] == ["rank", "report", "step", "source", "cpu_ms"]
    nine = {(r["rank"], r["step"]): r for r in steps}[("0", "9")]
    assert (nine["waited_for"], nine["window_edge"], nine["wait_ms"]) == ("1", "", "80.2284")
    late = {(r["rank"], r["step"]): r for r in steps}[("1", "9")]
    assert (late["waited_for"], late["wait_ms"]) == ("", "0.0")  # None: it waited for nobody
    ranks = rows(tmp_path / "ranks.csv")
    assert [(r["rank"], r["report"], r["steps"]) for r in ranks] == [
        ("0", "s17-slow_job2_rank0", "8"), ("1", "s17-slow_job2_rank1", "8")
    ]  # fmt: skip
    medians = slow.ranks[1]["medians_without_window_edges"]
    assert ranks[1]["median_step_ms"] == str(medians["step_ms"]) == "116.4963"


def test_an_older_summary_without_median_keys_is_written_with_empty_cells(tmp_path: Path) -> None:
    older: dict[str, Any] = {
        "ranks": [{"rank": 3, "report": "old_rank3", "pid": 9, "device": None,
                   "medians_without_window_edges": {"step_ms": 12.5},
                   "totals": {"kernel_ms": 1.0, "kernels": 2, "nccl_kernel_ms": 0.5,
                              "nccl_kernels": 1, "steps": 0, "graph_ms": 0.0,
                              "graph_launches": 0},
                   "steps": []}],
        "stragglers": [],
        "nccl_by_size": [],
    }  # fmt: skip
    write(Summary.from_json(older), tmp_path)
    (rank,) = rows(tmp_path / "ranks.csv")
    assert (rank["device"], rank["median_step_ms"], rank["median_gpu_ms"]) == ("", "12.5", "")
    assert (tmp_path / "steps.csv").read_text().count("\n") == 1
