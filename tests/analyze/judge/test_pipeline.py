"""A pipeline's stages joined at their send/recv pairs (nsysgen/analyze/judge/pipeline.py), proven
on bench/synth_pp.py's exports (GPipe stages of data-parallel peers, sends and receives under one
kernel name as NCCL names them, each node's clock its own), read and analysed as `nsysgen analyze
--pipeline-stages N` does. Each figure is checked against the same job without the plant (the
control): the step time the delay cost, which the what-if must give back."""

from __future__ import annotations

import functools
import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from nsysgen.analyze.judge.late_ranks import ALONE, find, path_limits
from nsysgen.analyze.judge.matching import Comm
from nsysgen.analyze.judge.pipeline import held_by, pairs, partners, without_p2p
from nsysgen.analyze.judge.stragglers import Lateness, Thresholds, measure
from nsysgen.analyze.judge.summary import build
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read.ranks import assign_ranks
from nsysgen.analyze.read.report import read_export
from nsysgen.analyze.read.steps import Collective
from tests.conftest import REPO, RunCli

JUDGED = range(9, 15)
WITHIN = 0.10


@functools.cache
def synth() -> ModuleType:
    """bench/synth_pp.py as a module (it imports bench/synth_ddp.py beside it)."""
    spec = importlib.util.spec_from_file_location("bench_synth_pp", REPO / "bench/synth_pp.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def analysed(
    folder: Path, ranks: int, stages: int, **plant: Any
) -> tuple[Summary, Lateness, dict[int, float]]:
    s = synth()
    truth = s.job(folder, s.Shape(ranks=ranks, stages=stages), s.Plant(**plant))
    reduced = [read_export(p) for p in sorted(folder.glob("*.sqlite"))]
    tables = assign_ranks([r.tables for r in reduced])
    thresholds = Thresholds()
    lateness = measure(tables, thresholds, stages)
    found = find(tables, lateness, thresholds)
    names = [r.name for r in reduced]
    return (
        build(tables, lateness, found, [], thresholds, len(tables), names),
        lateness,
        truth.step_ms,
    )


def step(summary: Summary, number: int) -> Any:
    return next(s for s in summary.by_step if s["step"] == number)


def close(measured: float, truth: float) -> bool:
    return abs(measured - truth) <= WITHIN * truth


def late_on(ranks: list[int], ms: float = 25.0) -> dict[int, dict[int, float]]:
    return {r: dict.fromkeys(JUDGED, ms) for r in ranks}


@pytest.mark.parametrize(("ranks", "stages", "late"), [(4, 2, 2), (4, 2, 0), (8, 2, 5)])
def test_a_late_rank_costs_the_time_the_step_grew_and_no_bubble_is_lateness(
    tmp_path: Path, ranks: int, stages: int, late: int
) -> None:
    """A sleep before the backward on the last stage costs the step all of it; on the first
    stage part of it runs while that rank would have waited for the gradients anyway (the
    bubble): the figure is what it cost, the step's growth over the control."""
    control, _, clean = analysed(tmp_path / "control", ranks, stages)
    assert control.verdict["late_rank"] is None and control.stragglers == []
    assert all(s["late_ms"] == 0.0 for s in control.by_step if s["judged"])
    summary, lateness, made = analysed(tmp_path / "late", ranks, stages, host_ms=late_on([late]))
    verdict = summary.verdict
    assert (verdict["late_rank"], verdict["late_together_count"]) == (late, 1), verdict["text"]
    for number in JUDGED:
        cost = made[number] - clean[number]
        s = step(summary, number)
        assert s["late_rank"] == late and close(s["late_ms"], cost), (s, cost)
        assert abs(s["what_if_step_ms"] - clean[number]) <= WITHIN * cost, s
    assert verdict["what_if_step_ms"] == pytest.approx(
        statistics.median(clean[n] for n in JUDGED), rel=0.05
    )
    # Who waited: its stage's peers at their all-reduce, and the peers of the rank it held
    # through the pipeline (that rank's partner), for it; the others' bubble is no wait for it.
    peers = ranks // stages
    stage = late // peers
    for (rank, number), target in lateness.waited_for.items():
        if number in JUDGED and rank // peers == stage and rank != late:
            assert target == late
    assert set(verdict["waited"]) <= set(range(ranks)) - {late}
    assert 0 < verdict["waited_count"] <= ranks - 1


def test_a_slower_gpu_and_a_hiccup_in_a_stage_cost_what_the_step_grew(tmp_path: Path) -> None:
    """Rank 5 (stage 1 of 2, four peers) with its kernels 1.5x as long; then sleeping 40 ms on
    step 11 only."""
    _, _, clean = analysed(tmp_path / "control", 8, 2)
    summary, _, made = analysed(tmp_path / "gpu", 8, 2, slow={5: 1.5})
    assert summary.verdict["late_rank"] == 5
    for number in JUDGED:
        s = step(summary, number)
        assert s["late_rank"] == 5 and close(s["late_ms"], made[number] - clean[number]), s
    summary, _, made = analysed(tmp_path / "hiccup", 8, 2, host_ms={5: {11: 40.0}})
    verdict = summary.verdict
    assert (verdict["late_rank"], verdict["kind"], verdict["steps"]) == (5, "hiccup", [11])
    assert close(step(summary, 11)["late_ms"], made[11] - clean[11])
    assert all(step(summary, n)["late_ms"] == 0.0 for n in JUDGED if n != 11)


def test_ranks_held_through_the_pipeline_are_traced_to_the_rank_that_held_them(
    tmp_path: Path,
) -> None:
    """The last stage's rank 2 sleeps: its partner on stage 0 (rank 0) gets its gradients late
    and arrives last at stage 0's all-reduce, with no lateness of its own; rank 1 waited
    there for rank 0, that is for rank 2."""
    _, lateness, _ = analysed(tmp_path / "held", 4, 2, host_ms=late_on([2]))
    for number in JUDGED:
        assert lateness.held[number] == {0: 2}
        assert lateness.waited_for[(1, number)] == 2 and lateness.late_ms[(0, number)] == 0.0


def test_the_stages_stay_the_jobs_blocks_when_reports_are_missing(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """8 ranks in 2 stages, rank 5 late; the reports of ranks 2 and 3 are missing. The stages
    are still ranks 0-3 and 4-7 (before, blocks of the 6 reports found made 3 stages of 2), and
    rank 5 is named among its own stage's peers, through `nsysgen analyze` as users run it."""
    s = synth()
    folder = tmp_path / "reports"
    s.job(folder, s.Shape(ranks=8, stages=2), s.Plant(host_ms=late_on([5])))
    for rank in (2, 3):
        next(folder.glob(f"pp_job1_rank{rank}_*.sqlite")).unlink()
    result = run_cli(
        "analyze", str(folder), "--output", str(tmp_path / "out"), "--pipeline-stages", "2",
        "--serial",
    )  # fmt: skip
    assert result.code == 0, result.err
    verdict = next(line for line in result.out.splitlines() if line.startswith("verdict: "))
    assert verdict.startswith("verdict: rank 5 late on 6 of 6 judged steps"), verdict
    assert "judged as 2 groups of ranks" in result.out


@pytest.mark.slow
def test_a_node_of_a_64_rank_pipeline_late_together_is_named_with_its_cost(
    tmp_path: Path,
) -> None:
    """Four stages of 16 (two nodes each, each node's clock its own): node 5 (ranks 40..47,
    stage 2) sleeps before its backward. Every send and receive is paired, the middle stages'
    with both neighbours; the node is found among its stage's peers, priced at what the step
    grew."""
    _, _, clean = analysed(tmp_path / "control", 64, 4)
    summary, lateness, made = analysed(tmp_path / "node", 64, 4, host_ms=late_on([*range(40, 48)]))
    verdict = summary.verdict
    assert verdict["nodes"] == ["node 5"] and verdict["late_together_count"] == 8
    for number in JUDGED:
        s = step(summary, number)
        assert s["late_count"] == 8 and close(s["late_ms"], made[number] - clean[number]), s
    assert lateness.unpaired == []
    assert not any("not paired across stages" in line for line in path_limits(lateness))


@pytest.mark.slow
def test_one_rank_of_a_1024_rank_pipeline_is_named_with_its_cost(tmp_path: Path) -> None:
    """Eight stages of 128: rank 1000 (the last stage) sleeps 40 ms before its backward (the
    eight stages' step is ~92 ms: 25 ms would be under the bar, a quarter of the step)."""
    _, _, clean = analysed(tmp_path / "control", 1024, 8)
    summary, _, made = analysed(tmp_path / "big", 1024, 8, host_ms=late_on([1000], 40.0))
    verdict = summary.verdict
    assert (verdict["late_rank"], verdict["late_together_count"]) == (1000, 1)
    for number in JUDGED:
        s = step(summary, number)
        assert s["late_rank"] == 1000 and close(s["late_ms"], made[number] - clean[number]), s


def test_a_pipeline_without_data_parallel_peers_is_not_judged(tmp_path: Path) -> None:
    """Two stages of one rank each: nothing to measure a rank against, so no step is judged,
    and the verdict says so (never 'no rank late')."""
    summary, lateness, _ = analysed(tmp_path / "pure", 2, 2, host_ms=late_on([1]))
    assert lateness.peerless[10] == [0, 1] and summary.stragglers == []
    text = summary.verdict["text"]
    assert text.startswith("not judged: steps ") and f"on ranks 0 and 1 ({ALONE})" in text
    assert text.endswith("no step judged on 2 ranks") and "no rank late" not in text


def comm(name: str, ms: float, end: float | None = None) -> Comm:
    """A kernel of `ms` ending at `end` ms on its rank's clock (None: no start known)."""
    ns = int(ms * 1_000_000)
    start = None if end is None else int(end * 1_000_000) - ns
    return (None, ns, [0, ns], start, Collective(1, 0, name, ns))


P2P_NAME, REDUCE = "ncclDevKernel_SendRecv", "ncclDevKernel_AllReduce"


def test_two_stages_without_starts_pair_in_order() -> None:
    p2p, reduce = P2P_NAME, REDUCE
    two = [
        {0: [comm(p2p, 1.0), comm(reduce, 2.0)], 1: [comm(p2p, 5.0), comm(reduce, 2.0)]},
        {2: [comm(p2p, 4.0), comm(reduce, 2.0)], 3: [comm(p2p, 2.0), comm(reduce, 2.0)]},
    ]
    assert partners(two) == {0: [2], 1: [3], 2: [0], 3: [1]}
    assert [c[4].name for c in without_p2p(two[0])[0]] == [reduce]
    found, unpaired = pairs(two)
    assert unpaired == 0
    # Each pair shortest first: rank 0's 1 ms send arrived last, rank 2 waited for it.
    assert [[(m[0] // 1_000_000, m[1]) for m in pair] for pair in found] == [
        [(1, 0), (4, 2)], [(2, 3), (5, 1)]
    ]  # fmt: skip
    # A middle stage interleaves both neighbours: without the kernels' ends, nothing pairs.
    three = [*two, {4: [comm(p2p, 1.0)], 5: [comm(p2p, 1.0)]}]
    assert pairs(three) == ([], 6)


def test_a_middle_stage_pairs_with_both_neighbours_by_when_its_kernels_ended() -> None:
    """Ranks 0 -> 1 -> 2, one per stage, each host's clock its own (rank 1's 5 s ahead,
    rank 2's 2 s behind): rank 1 receives from 0 and sends to 2 by turns; each pair's two
    kernels end together."""
    ends = [10.0, 20.0, 30.0, 40.0]  # the pairs' common ends (ms, rank 0's clock)
    stage0 = {0: [comm(P2P_NAME, 1.0, ends[0]), comm(P2P_NAME, 1.0, ends[2])]}
    stage1 = {1: [comm(P2P_NAME, 3.0, e + 5_000.0) for e in ends]}
    stage2 = {2: [comm(P2P_NAME, 6.0, ends[1] - 2_000.0), comm(P2P_NAME, 6.0, ends[3] - 2_000)]}
    found, unpaired = pairs([stage0, stage1, stage2])
    assert unpaired == 0
    assert sorted(tuple(sorted(m[1] for m in pair)) for pair in found) == [
        (0, 1), (0, 1), (1, 2), (1, 2)
    ]  # fmt: skip
    # A kernel no partner ended with stays unpaired, and is counted.
    stray = {1: [*stage1[1], comm(P2P_NAME, 3.0, 99_999.0)]}
    assert pairs([stage0, stray, stage2])[1] == 1


def test_a_held_rank_is_traced_along_its_partners() -> None:
    links = {0: [2], 2: [0, 4], 4: [2], 1: [3], 3: [1, 5], 5: [3]}
    # 0 held by 2 held by 4 (late by its own doing); 1's chain has no cause.
    assert held_by({0: 0.0, 2: 0.0, 4: 9.0, 1: 0.0, 3: 0.0}, links) == {0: 4, 2: 4}


def test_a_periodic_schedule_pairs_at_its_true_offset_not_one_period_off() -> None:
    """A pipeline's kernels come at a steady beat: the clocks set one beat apart would line up
    every kernel but the first; the true offset lines up all, and wins. A long step's first
    VOTERS kernels set it, whatever the step's length."""
    beat = [10.0 + 3.0 * i for i in range(200)]
    mine = [comm(P2P_NAME, 1.0, end) for end in beat]
    theirs = [comm(P2P_NAME, 2.0, end + 7_000.0) for end in beat]  # their clock 7 s ahead
    found, unpaired = pairs([{0: mine}, {1: theirs}])
    assert unpaired == 0 and len(found) == 200
    assert all(pair[0][4] is theirs[i][4] or pair[1][4] is theirs[i][4]
               for i, pair in enumerate(found))  # fmt: skip
