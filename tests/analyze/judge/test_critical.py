"""The time each rank cost the job (nsysgen/analyze/judge/critical.py), proven on planted delays of
known size: bench/synth_ddp.py's data-parallel exports (bucket all-reduces overlapping the
backward, SM contention slowing the waiting ranks' compute, each node's clock off by its own
amount), read and analysed as `nsysgen analyze` does. Each figure is checked against what was
planted: the host delay, the slow GPU's extra kernel time, and the same job without the plant
(the control), whose step time the what-if must give back. The sum over the step's collectives
(what lateness was before) is shown to overcount on the same reports."""

from __future__ import annotations

import functools
import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from nsysgen.analyze.judge.critical import Arrival, walk
from nsysgen.analyze.judge.late_ranks import find, path_limits
from nsysgen.analyze.judge.stragglers import Lateness, Thresholds, measure
from nsysgen.analyze.judge.summary import build
from nsysgen.analyze.judge.summary_types import Summary
from nsysgen.analyze.read.ranks import assign_ranks
from nsysgen.analyze.read.report import read_export
from nsysgen.analyze.read.steps import Collective, RankTables, StepRow
from tests.conftest import REPO

JUDGED = range(9, 15)  # steps 8..15 recorded; the window's edges are not judged
WITHIN = 0.10  # the figure within 10 % of the planted delay


@functools.cache
def synth() -> ModuleType:
    """bench/synth_ddp.py as a module (bench/ is scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("bench_synth_ddp", REPO / "bench/synth_ddp.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def analysed(folder: Path, ranks: int, **plant: Any) -> tuple[Summary, Lateness, Any]:
    """A job's exports written, read and analysed; (summary, lateness, what was made)."""
    s = synth()
    truth = s.job(folder, s.Shape(ranks=ranks), s.Plant(**plant))
    reduced = [read_export(p) for p in sorted(folder.glob("*.sqlite"))]
    tables = assign_ranks([r.tables for r in reduced])
    thresholds = Thresholds()
    lateness = measure(tables, thresholds)
    stragglers = find(tables, lateness, thresholds)
    names = [r.name for r in reduced]
    summary = build(tables, lateness, stragglers, [], thresholds, len(tables), names)
    return summary, lateness, truth


def step(summary: Summary, number: int) -> Any:
    return next(s for s in summary.by_step if s["step"] == number)


def close(measured: float, planted: float) -> bool:
    return abs(measured - planted) <= WITHIN * planted


def assert_control(summary: Summary) -> None:
    """Nothing late, and nothing above the floor on any step or rank."""
    assert summary.verdict["late_rank"] is None and summary.stragglers == []
    assert all(s["late_rank"] is None and s["late_ms"] == 0.0 for s in summary.by_step)
    assert all(e["late_ms"] == 0.0 for r in summary.ranks for e in r["steps"])


def test_a_host_delay_every_step_is_the_time_it_cost_and_the_sum_overcounts(
    tmp_path: Path,
) -> None:
    control, _, clean = analysed(tmp_path / "control", 2)
    assert_control(control)
    summary, lateness, made = analysed(
        tmp_path / "late", 2, host_ms={1: dict.fromkeys(JUDGED, 25.0)}
    )
    verdict = summary.verdict
    assert (verdict["late_rank"], verdict["kind"], verdict["steps"]) == (1, "slow rank", [*JUDGED])
    for number in JUDGED:
        s = step(summary, number)
        assert s["late_rank"] == 1 and close(s["late_ms"], 25.0), s
        # The step grew by the delay, and the what-if gives the control's step back.
        assert close(made.step_ms[number] - clean.step_ms[number], 25.0)
        assert abs(s["what_if_step_ms"] - (s["job_step_ms"] - 25.0)) <= WITHIN * 25.0, s
        # The sum over the step's six bucket all-reduces counts the same wait again and again.
        assert lateness.summed_late_ms[(1, number)] > 1.2 * 25.0
    # The rank that waited lost time to it: its exposed wait and its slowed compute.
    rank0 = next(r for r in summary.ranks if r["rank"] == 0)
    judged = [e for e in rank0["steps"] if e["step"] in JUDGED]
    assert all(e["late_ms"] == 0.0 and (e["wait_ms"] or 0.0) > 15.0 for e in judged)
    assert verdict["what_if_step_ms"] == pytest.approx(
        statistics.median(clean.step_ms[n] for n in JUDGED), rel=0.05
    )


def test_a_hiccup_is_late_on_its_steps_only(tmp_path: Path) -> None:
    summary, _, _ = analysed(tmp_path / "hiccup", 2, host_ms={0: {11: 40.0, 14: 40.0}})
    verdict = summary.verdict
    assert (verdict["late_rank"], verdict["kind"], verdict["steps"]) == (0, "hiccup", [11, 14])
    for number in JUDGED:
        s = step(summary, number)
        if number in (11, 14):
            assert s["late_rank"] == 0 and close(s["late_ms"], 40.0), s
        else:  # the noise on the other steps is shown as nothing
            assert s["late_rank"] is None and s["late_ms"] == 0.0, s


@pytest.mark.parametrize("ranks", [2, 8])
def test_a_slower_gpu_costs_its_extra_kernel_time(tmp_path: Path, ranks: int) -> None:
    """Its kernels 1.5x as long; the ranks waiting for it run theirs 1.25x as long under their
    spinning NCCL kernels: compared with those, the slow GPU would look far less late."""
    slow = ranks - 1
    summary, _, made = analysed(tmp_path / "gpu", ranks, slow={slow: 1.5})
    assert summary.verdict["late_rank"] == slow
    for number in JUDGED:
        s = step(summary, number)
        assert s["late_rank"] == slow and close(s["late_ms"], made.extra_ms[(slow, number)]), s


def test_a_node_late_as_a_whole_is_named_and_priced(tmp_path: Path) -> None:
    control, _, clean = analysed(tmp_path / "control", 16)
    assert_control(control)
    late = {r: dict.fromkeys(JUDGED, 25.0) for r in range(8, 16)}
    summary, _, _ = analysed(tmp_path / "node", 16, host_ms=late)
    verdict = summary.verdict
    assert verdict["nodes"] == ["node 1"] and verdict["late_together_count"] == 8
    assert verdict["text"].startswith("node 1 (ranks ")
    assert close(verdict["by_ms"] or 0.0, 25.0) and verdict["waited_count"] == 8
    for number in JUDGED:
        s = step(summary, number)
        assert s["late_count"] == 8 and close(s["late_ms"], 25.0), s
    assert verdict["what_if_step_ms"] == pytest.approx(
        statistics.median(clean.step_ms[n] for n in JUDGED), rel=0.05
    )


@pytest.mark.slow
def test_half_of_64_ranks_late_together_is_a_late_group_not_all_clear(tmp_path: Path) -> None:
    late = {r: dict.fromkeys(JUDGED, 25.0) for r in range(32, 64)}
    summary, _, _ = analysed(tmp_path / "half", 64, host_ms=late)
    verdict = summary.verdict
    assert verdict["late_together_count"] == 32 and len(verdict["nodes"]) == 4
    assert verdict["text"].startswith("4 nodes (ranks ") and close(verdict["by_ms"] or 0, 25.0)


@pytest.mark.slow
def test_one_rank_of_1024_late_is_named_with_its_cost(tmp_path: Path) -> None:
    summary, _, _ = analysed(tmp_path / "big", 1024, host_ms={700: dict.fromkeys(JUDGED, 25.0)})
    verdict = summary.verdict
    assert (verdict["late_rank"], verdict["late_together_count"]) == (700, 1)
    assert close(verdict["by_ms"] or 0.0, 25.0) and verdict["waited_count"] == 1023


def arrival(rank: int, duration: float, ready: float, busy: float, held: float = 0.0) -> Arrival:
    ms = 1_000_000
    start = int((ready + held) * ms)
    return Arrival(rank, int(duration * ms), start, int(ready * ms), int(busy * ms),
                   int((ready - busy) * ms))  # fmt: skip


def test_the_walk_goes_back_past_held_collectives_to_where_a_rank_was_late() -> None:
    """Collective 1 started on every rank as soon as collective 0 ended (held by its stream):
    the path goes back to collective 0, where rank 1 was ready 9 ms after rank 0."""
    groups = [
        [arrival(0, 11.0, 5.0, 5.0), arrival(1, 2.0, 14.0, 5.0)],
        [arrival(0, 2.0, 6.0, 6.0, held=10.0), arrival(1, 1.9, 15.0, 6.0, held=1.1)],
    ]
    path = walk(groups, floor_ns=1_000_000)
    assert path.collective == 0 and path.late == {1: 9.0} and path.saving_ms == 9.0
    # Under the floor: nobody.
    assert walk(groups, floor_ns=10_000_000).late == {}


def stage_rank(rank: int, names: list[str], ready_ms: list[float], idle_ms: float) -> RankTables:
    """A rank of one step (3) whose collectives all end 30 ms after its gate."""
    ms = 1_000_000
    gate = 3 * 100 * ms + rank * 7_777 * ms  # each rank's clock its own
    comms = [
        Collective(3, i, name, int((30.0 - ready) * ms), None, [], gate + int(ready * ms),
                   ready_ns=int(ready * ms), busy_ns=int((ready - idle_ms) * ms),
                   idle_ns=int(idle_ms * ms))
        for i, (name, ready) in enumerate(zip(names, ready_ms, strict=True))
    ]  # fmt: skip
    row = StepRow(3, "gpu", 30.0, 30.0, 10.0, 2.0, 10.0, 0.0, 0.0, 0.0, 2, 30.0, gate_ns=gate)
    return RankTables(f"pp_job1_rank{rank}", 100 + rank, rank, 0, [row], comms)


def test_pipeline_stages_are_judged_apart_and_a_bubble_is_no_ones_lateness() -> None:
    """Stage 0 (ranks 0, 1) sends then all-reduces; stage 1 (ranks 2, 3) receives then
    all-reduces. Rank 1 idled 9 ms more than its data-parallel peer; stage 1 waited 20 ms for
    stage 0's send (the bubble), both its ranks alike."""
    send, recv, reduce = "ncclDevKernel_SendRecv", "ncclDevKernel_SendRecv_Recv", "ncclAllReduce"
    ranks = [
        stage_rank(0, [send, reduce], [5.0, 12.0], 1.0),
        stage_rank(1, [send, reduce], [14.0, 21.0], 10.0),
        stage_rank(2, [recv, reduce], [1.0, 24.0], 21.0),
        stage_rank(3, [recv, reduce], [1.0, 24.0], 21.0),
    ]
    lateness = measure(ranks, Thresholds(min_ms=1.0, min_fraction=0.05))
    assert lateness.stages == {3: 2} and lateness.evidence == {3: "collectives"}
    assert lateness.late_ms[(1, 3)] == pytest.approx(9.0)
    assert lateness.late_ms[(2, 3)] == 0.0 and lateness.late_ms[(3, 3)] == 0.0
    assert lateness.late_ms[(0, 3)] == 0.0


def test_stages_of_one_kernel_name_are_judged_apart_given_the_layout() -> None:
    """The same step as above, where sends and receives are both ncclDevKernel_SendRecv (as
    NCCL names them): the names do not tell the stages apart, so nobody is judged late by the
    collectives (never the bubble as lateness) and the limit says so; given the job's 2
    pipeline stages, rank 1 is late by its 9 ms among its own stage."""
    p2p, reduce = "ncclDevKernel_SendRecv", "ncclAllReduce"
    ranks = [
        stage_rank(0, [p2p, reduce], [5.0, 12.0], 1.0),
        stage_rank(1, [p2p, reduce], [14.0, 21.0], 10.0),
        stage_rank(2, [p2p, reduce], [1.0, 24.0], 21.0),
        stage_rank(3, [p2p, reduce], [1.0, 24.0], 21.0),
    ]
    thresholds = Thresholds(min_ms=1.0, min_fraction=0.05)
    unknown = measure(ranks, thresholds)
    assert unknown.unsplit == [3] and unknown.evidence == {3: "step-time"}
    assert all(value == 0.0 for value in unknown.late_ms.values())
    assert "pass --pipeline-stages N" in " ".join(path_limits(unknown))
    given = measure(ranks, thresholds, pipeline=2)
    assert given.unsplit == [] and given.stages == {3: 2}
    assert given.late_ms[(1, 3)] == pytest.approx(9.0)
    assert given.late_ms[(2, 3)] == 0.0 and given.late_ms[(3, 3)] == 0.0
