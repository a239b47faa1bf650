"""summary.json as nsysgen/analyze/judge/summary.py builds it: the limits said for what the reports
cannot show, the window's edges (the job's and a rank's own), the medians without those edges,
the key order the file holds, and a one-rank run of the H200 exports (tests/data/gpu/steps17)
whose collectives have no peer to be told waiting from."""

from __future__ import annotations

import statistics

from nsysgen.analyze.judge.late_ranks import find
from nsysgen.analyze.judge.stragglers import Thresholds, measure
from nsysgen.analyze.judge.summary import all_edges, build, limits, own_edges
from nsysgen.analyze.judge.summary_types import SCHEMA, Summary
from nsysgen.analyze.read.nccl import NcclCall
from nsysgen.analyze.read.report import read_export
from nsysgen.analyze.read.steps import RankTables, StepRow
from tests.conftest import REPO

RANK1 = REPO / "tests" / "data" / "gpu" / "steps17" / "s17-slow_job2_rank1.sqlite"


def call(size: int | None) -> NcclCall:
    return NcclCall("r", "ncclAllReduce", size, "k", 0, 1000)


def test_limits_say_what_the_reports_cannot_show() -> None:
    calls = [call(None), call(1024), call(None)]
    assert limits(calls, 1, 1, False) == [
        "bandwidth of 2 of 3 NCCL call(s) not computed: their message size is unknown (no NCCL "
        "payload in the export, nor a sized NVTX range around them)",
        "bus bandwidth not computed: one rank known (pass --world-size, the job's rank count); "
        "algbw_GBps is per call",
    ]
    assert limits([call(1024)], 4, 4, False) == [
        "bus bandwidth assumes the job had 4 ranks, the ones recorded (pass --world-size if it "
        "had more)"
    ]
    assert limits([], 2, 8, True) == [
        "2 of 8 ranks recorded: stragglers and per-step figures are among those only (a rank "
        "not recorded can be late unseen)"
    ]
    assert limits([call(1024)], 8, 8, True) == []
    assert limits([], 0, 8, True) == []  # no rank with steps: nothing said of the others


def tables(rank: int, steps: list[int]) -> RankTables:
    rows = [StepRow(s, "cpu", 10.0 + s, 10.0 + s, None, None, None, 0.0, None, None, 0)
            for s in steps]  # fmt: skip
    return RankTables(f"r_rank{rank}", 1, rank, None, rows)


def test_the_window_edges_of_the_job_and_of_each_rank() -> None:
    ranks = [tables(0, [3, 4, 5, 6]), tables(1, [4, 5, 6, 7])]
    assert all_edges(ranks) == (3, 7)
    assert [own_edges(t) for t in ranks] == [(3, 6), (4, 7)]
    assert own_edges(tables(2, [4, 5])) == (4, None)  # no step between: the last is judged
    assert all_edges([]) == (None, None)
    lateness = measure(ranks)
    summary = build(ranks, lateness, [], [], Thresholds(), 2, ["a", "b"])
    entries = summary.ranks[1]["steps"]
    assert [e["window_edge"] for e in entries] == ["open", None, None, "close"]
    # Medians over a rank's own judged steps: 5 and 6 for rank 1 (15 and 16 ms).
    assert summary.ranks[1]["medians_without_window_edges"]["step_ms"] == 15.5
    assert (summary.first_step_ignored, summary.last_step_ignored) == (3, 7)


def test_one_rank_of_the_h200_run() -> None:
    reduced = read_export(RANK1)
    ranks = reduced.tables
    lateness = measure(ranks)
    summary: Summary = build(ranks, lateness, find(ranks, lateness, Thresholds()), [],
                             Thresholds(), 1, [reduced.name], label="job s17-slow, run 2",
                             reference=((1024, 14.2, None),))  # fmt: skip
    assert list(summary.as_json()) == [
        "schema", "reports", "world_size", "first_step_ignored", "last_step_ignored",
        "window_edges", "thresholds", "collectives_matched", "collectives_matched_by",
        "steps_with_unequal_collective_counts", "ranks", "stragglers", "nccl_by_size", "limits",
        "by_step", "job_median_step_ms", "verdict", "fabric", "label", "nccl_tests",
    ]  # fmt: skip
    assert (summary.as_json()["schema"], summary.label, summary.nccl_tests) == (
        SCHEMA, "job s17-slow, run 2", [(1024, 14.2, None)]
    )  # fmt: skip
    assert summary.limits == [
        "waiting not told from transfer: one rank recorded, so its collectives have no peer to "
        "compare with (all of their time counts as comm_transfer_ms)"
    ]
    assert summary.verdict["text"] == "one rank recorded: who was late needs two ranks or more"
    (entry,) = summary.ranks
    assert (entry["rank"], entry["report"], entry["totals"]["steps"]) == (1, reduced.name, 8)
    judged = [s["step_ms"] or 0.0 for s in entry["steps"] if s["window_edge"] is None]
    assert [s["step"] for s in entry["steps"] if s["window_edge"]] == [8, 15]
    assert entry["medians_without_window_edges"]["step_ms"] == round(statistics.median(judged), 4)
    assert all(s["wait_ms"] is None and s["waited_for"] is None for s in entry["steps"])
