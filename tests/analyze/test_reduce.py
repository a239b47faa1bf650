"""The reduce step of `nsysgen analyze` (nsysgen/analyze/reduce.py): the lines it says and the
files it writes for reports without steps or calls, the baseline gate's lines and exit code on
the two-rank H200 exports (tests/data/gpu/steps17: the clean run as the baseline, the run whose
rank 1 slept 40 ms a step as the new one), and a baseline with nothing in common."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsysgen.analyze.judge.late_ranks import find
from nsysgen.analyze.judge.regress import load
from nsysgen.analyze.judge.stragglers import Thresholds, measure
from nsysgen.analyze.judge.summary import build
from nsysgen.analyze.read.ranks import assign_ranks
from nsysgen.analyze.read.report import Reduced, read_export
from nsysgen.analyze.reduce import Options, _compare, reduce
from nsysgen.analyze.render import summary_files
from nsysgen.errors import EXIT_DRIFT, EXIT_OK
from tests.conftest import REPO

STEPS17 = REPO / "tests" / "data" / "gpu" / "steps17"
FILES = ["nccl_calls.csv", "nccl_by_size.csv", "summary.json", "steps.csv", "ranks.csv",
         "stragglers.csv", "nccl_bandwidth.csv"]  # fmt: skip
NOTHING = [
    "no NCCL kernels in 1 report(s): nothing to plot",
    "verdict: no step ranges ('step N') in the reports: no per-step verdict",
    "not drawn: heatmap_lateness.png: lateness needs two ranks or more",
    "not drawn: heatmap_exposed_comm.png: no step ranges",
    "not drawn: rank_breakdown.png: no step ranges",
    "no step NVTX ranges ('step N') in the reports: no per-step figures",
]


def job(name: str) -> list[Reduced]:
    return [read_export(p) for p in sorted(STEPS17.glob(f"s17-{name}_*.sqlite"))]


def test_reports_without_steps_or_calls_say_so_and_write_every_table(tmp_path: Path) -> None:
    out = tmp_path / "out"
    outcome = reduce([Reduced("r", [], [])], Options(), out)
    assert outcome.code == EXIT_OK
    assert list(outcome.written) == [*(out / f for f in FILES), out / "report.html"]
    assert list(outcome.lines) == [
        *NOTHING,
        f"report: {out / 'report.html'}",
        *(f"wrote {out / f}" for f in [*FILES, "report.html"]),
    ]
    assert all(path.is_file() for path in outcome.written)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["ranks"], summary["stragglers"], summary["reports"]) == ([], [], ["r"])


def test_a_baseline_with_nothing_in_common_warns_and_passes(tmp_path: Path) -> None:
    reduce([Reduced("r", [], [])], Options(), tmp_path / "old")
    out = tmp_path / "new"
    options = Options(baseline=tmp_path / "old", regression_threshold=5.0)
    outcome = reduce([Reduced("r", [], [])], options, out)
    assert outcome.code == EXIT_OK
    assert list(outcome.lines[: len(NOTHING) + 3]) == [
        *NOTHING,
        "regression: nothing in common with the baseline to compare",
        f"baseline {tmp_path / 'old'}: 0 figure(s) compared, 0 regressed beyond 5 %",
        "warning: nothing in common with the baseline to compare",
    ]
    compared = json.loads((out / "summary.json").read_text())["baseline"]
    assert (compared["regressed"], compared["changes"]) == (False, [])


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, tuple[str, ...], int]:
    """The slow run reduced against the clean run's summary.json (written without pictures)."""
    tmp = tmp_path_factory.mktemp("gate")
    clean = job("clean")
    ranks = assign_ranks([r.tables for r in clean])
    lateness = measure(ranks)
    found = find(ranks, lateness, Thresholds())
    names = [r.name for r in clean]
    summary_files.write(build(ranks, lateness, found, [], Thresholds(), 2, names), tmp / "clean")
    outcome = reduce(job("slow"), Options(baseline=tmp / "clean"), tmp / "slow")
    return tmp / "clean", tmp / "slow", outcome.lines, outcome.code


def test_the_slow_run_regresses_against_the_clean_one_and_names_rank_1(
    gated: tuple[Path, Path, tuple[str, ...], int],
) -> None:
    clean, out, lines, code = gated
    assert code == EXIT_DRIFT
    said = [line for line in lines if not line.startswith(("wrote ", "report: "))]
    verdict = (
        "rank 1 late on 4 of 6 judged steps (9, 12, 13, 14) by 48.3 ms on average (the job's "
        "median step 127.4 ms, 84.4 ms had it been on time); rank 0 waited (lost 49.4 ms a "
        "step: exposed wait and compute slowed by waiting); also rank 0 (hiccup) on step 11 by "
        "50.0 ms"
    )
    assert said == [
        "no NCCL kernels in 2 report(s): nothing to plot",
        f"verdict: {verdict}",
        "not drawn: heatmap_exposed_comm.png: every step's exposed communication is 0 ms (or "
        "not measured)",
        "steps 8..15 on 2 rank(s); first and last step not judged (the window's open and close "
        "pause the recorded ranks)",
        "straggler: rank 1 (slow rank) late on steps 9, 12, 13, 14 by 48.3 ms on average",
        "straggler: rank 0 (hiccup) late on step 11 by 50.0 ms on average",
        f"regression: REGRESSED job median step time: 72.7 -> 127.4 ms (+75.4 %): {verdict}",
        f"baseline {clean}: 5 figure(s) compared, 2 regressed beyond 10 %",
        "REGRESSED  job median step time: 72.667 -> 127.441 ms (+75.4 %)",
        "   waited  rank 0 median step time: 69.426 -> 101.734 ms (+46.5 %): waited for rank 1 "
        "(+31.8 ms a step lost waiting)",
        "REGRESSED  rank 1 median step time: 71.286 -> 116.496 ms (+63.4 %): its own work grew: "
        "host gaps +53.1 ms",
    ]
    pictures = sorted(p.name for p in out.glob("*.png"))
    assert pictures == ["heatmap_lateness.png", "rank_breakdown.png"]
    assert f"wrote {out / 'heatmap_lateness.png'}" in lines


def test_a_higher_threshold_lets_the_same_change_pass(
    gated: tuple[Path, Path, tuple[str, ...], int],
) -> None:
    clean, out, _, _ = gated
    lines, code = _compare(load(out), Options(baseline=clean, regression_threshold=100.0))
    assert code == EXIT_OK
    # No change past the threshold: neither the regressed figures nor the waits are listed.
    assert lines == [
        "regression: no regression beyond 100 % (job median step time +75.4 %)",
        f"baseline {clean}: 5 figure(s) compared, 0 regressed beyond 100 %",
    ]
    assert _compare(load(out), Options()) == ([], EXIT_OK)  # no baseline: no gate
