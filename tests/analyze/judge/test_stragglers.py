"""Who the other ranks waited for (nsysgen/analyze/judge/stragglers.py), on per-rank tables built
here: the shortest kernel of a collective arrived last, the next-shortest waited for it; each rank's
wait and whom it waited for; collectives matched by their order when counts differ; step times where
no collective matched; and which late ranks count as stragglers, the window's edges (the job's and a
rank's own) never judged."""

from __future__ import annotations

import pytest

from nsysgen.analyze.judge.late_ranks import find
from nsysgen.analyze.judge.stragglers import Thresholds, late_bar, measure, scale_ms
from nsysgen.analyze.read.steps import Collective, RankTables, StepRow

MS = 1_000_000


GATE, END, BUSY = 100 * MS, 20 * MS, 5 * MS  # a step's opening gate, its collectives' end


def row(step: int, step_ms: float = 20.0, gpu_ms: float | None = None) -> StepRow:
    return StepRow(
        step, "gpu", step_ms, step_ms, 10.0, 2.0, 10.0, 0.0, 0.0, 0.0, 2, gpu_ms,
        gate_ns=step * GATE,
    )  # fmt: skip


def rank(
    number: int,
    collectives: dict[int, list[float]],
    steps: range = range(6),
    step_ms: dict[int, float] | None = None,
    gpu_ms: float | None = None,
) -> RankTables:
    """A rank's steps and, per step, its collectives' kernel durations (ms), fully exposed.
    Every collective ends END after the step's gate, so a kernel of d ms started (and its rank
    was ready) END - d after it, having computed BUSY and idled the rest."""
    times = step_ms or {}
    comms = [
        Collective(
            step,
            i,
            "ncclAllReduce",
            round(ms * MS),
            None,
            [0, round(ms * MS)],
            step * GATE + END - round(ms * MS),
            ready_ns=END - round(ms * MS),
            busy_ns=BUSY,
            idle_ns=END - round(ms * MS) - BUSY,
        )  # fmt: skip
        for step, durations in collectives.items()
        for i, ms in enumerate(durations)
    ]
    rows = [row(s, times.get(s, 20.0), gpu_ms) for s in steps]
    return RankTables(f"job_rank{number}", 100 + number, number, 0, rows, comms)


def late_rank_2(late: dict[int, float], gpu_ms: float | None = None) -> list[RankTables]:
    """Three ranks, one all-reduce a step of 2 ms transfer: rank 2 arrives `late[step]` ms
    after rank 1 and rank 1 a ms after rank 0, so rank 0 waits a ms longer than rank 1."""

    def durations(r: int) -> dict[int, list[float]]:
        early = {0: 1.0, 1: 0.0}
        return {
            step: [2.0 if r == 2 else 2.0 + late.get(step, 0.0) + early[r]] for step in range(6)
        }

    return [rank(r, durations(r), gpu_ms=gpu_ms) for r in range(3)]


def test_the_shortest_kernel_arrived_last_and_the_others_waited_for_it() -> None:
    lateness = measure(late_rank_2({1: 7.0, 2: 7.0, 3: 7.0, 5: 7.0}))
    # Rank 2 held rank 1 up 7 ms (the next-shortest's wait): the sum's lateness.
    assert lateness.summed_late_ms[(2, 1)] == 7.0 and lateness.summed_late_ms[(0, 1)] == 0.0
    assert [lateness.summed_wait_ms[(r, 1)] for r in range(3)] == [8.0, 7.0, 0.0]
    # On the critical path: its idle beyond the ranks on time (7 and 8 ms less idle: 7.5 over
    # their median), but no more than it arrived after the latest of them: 7.
    assert lateness.late_ms[(2, 1)] == pytest.approx(7.0) and lateness.late_ms[(0, 1)] == 0.0
    assert lateness.paths[1].saving_ms == pytest.approx(7.0)  # the slack to rank 1
    assert lateness.waited_for[(0, 1)] == 2 and (2, 1) not in lateness.waited_for
    # The whole kernel is exposed here, so all of its wait is exposed too.
    assert lateness.exposed_wait_ns[(0, 1)] == 8 * MS and lateness.exposed_ns[(0, 1)] == 10 * MS
    # Each call's wait, by (report, start, duration), for the bandwidth's transfer time.
    assert lateness.call_wait_ns[("job_rank0", GATE + END - 10 * MS, 10 * MS)] == 8 * MS
    assert lateness.call_wait_ns[("job_rank2", GATE + END - 2 * MS, 2 * MS)] == 0
    # Step 0: no late rank, but rank 0 still waited 1 ms for rank 1 (and rank 2 with it).
    assert lateness.late_ms[(1, 0)] == 0.0 and lateness.late_ms[(2, 0)] == 0.0
    assert lateness.summed_wait_ms[(0, 0)] == 1.0
    assert (lateness.matched, lateness.matched_by, lateness.mismatched_steps) == (
        6, {"order in step"}, []
    )  # fmt: skip
    assert lateness.evidence == dict.fromkeys(range(6), "collectives")


def test_uneven_counts_match_the_common_ones_and_no_collective_falls_back_to_step_time() -> None:
    ranks = [
        rank(0, {1: [5.0, 3.0], 2: []}, step_ms={2: 20.0}),
        rank(1, {1: [2.0]}, step_ms={2: 30.0}),
        rank(2, {1: [4.0]}, step_ms={2: 22.0}),
    ]
    lateness = measure(ranks)
    assert lateness.mismatched_steps == [1] and lateness.matched == 1
    assert [lateness.summed_wait_ms[(r, 1)] for r in range(3)] == [3.0, 0.0, 2.0]  # first only
    # Step 2: nothing matched, each rank against the median of the others' step times.
    assert lateness.evidence[2] == "step-time"
    assert [lateness.late_ms[(r, 2)] for r in range(3)] == [0.0, 9.0, 0.0]
    assert (0, 2) not in lateness.wait_ms


def test_stragglers_slow_ranks_and_hiccups_with_the_edges_left_out() -> None:
    # Rank 2 arrives last on steps 1, 2, 3 and 5 (the window's close), rank 0 on step 4.
    ranks = [
        rank(0, {s: [2.0 if s == 4 else 10.0] for s in range(6)}),
        rank(1, {s: [8.0 if s == 4 else 9.0] for s in range(6)}),
        rank(2, {s: [11.0 if s in (0, 4) else 2.0] for s in range(6)}),
    ]
    lateness = measure(ranks)
    found = find(ranks, lateness, Thresholds())
    assert found == [
        {"rank": 2, "steps": [1, 2, 3], "mean_lateness_ms": 7.0, "kind": "slow rank",
         "late_on_fraction_of_steps": 0.75, "evidence": ["collectives"]},
        {"rank": 0, "steps": [4], "mean_lateness_ms": 6.0, "kind": "hiccup",
         "late_on_fraction_of_steps": 0.25, "evidence": ["collectives"]},
    ]  # fmt: skip
    # Each no later than it arrived after the latest rank on time (rank 1): 7 and 6 ms. A
    # higher bar: not late once the floor is 10 ms.
    assert find(ranks, lateness, Thresholds(min_ms=10.0)) == []


def test_the_bar_is_a_share_of_the_steps_gpu_work() -> None:
    assert late_bar(Thresholds(), [20.0, 24.0, 40.0]) == 6.0
    assert late_bar(Thresholds(min_ms=8.0), [20.0]) == 8.0
    assert scale_ms(row(1, 20.0, gpu_ms=40.0)) == 40.0 and scale_ms(row(1, 20.0)) == 20.0
    # Steps of 40 ms of GPU work: a 7 ms wait is under its 10 ms bar.
    ranks = late_rank_2({1: 7.0, 2: 7.0, 3: 7.0}, gpu_ms=40.0)
    assert find(ranks, measure(ranks), Thresholds()) == []


def test_a_ranks_own_first_step_is_not_judged_for_it() -> None:
    """Rank 2's window opened a step after the others': its first step (1) holds its own
    pause, so it is not late there, while the same lateness on step 2 counts."""
    durations = {0: 10.0, 1: 9.0}
    ranks = [rank(r, {s: [durations[r]] for s in range(6)}) for r in (0, 1)]
    ranks.append(rank(2, {s: [2.0] for s in range(1, 6)}, steps=range(1, 6)))
    found = find(ranks, measure(ranks), Thresholds())
    assert [(s["rank"], s["steps"]) for s in found] == [(2, [2, 3, 4])]


@pytest.mark.parametrize("fraction", [0.25, 0.75])
def test_thresholds_as_summary_json_names_them(fraction: float) -> None:
    assert Thresholds(2.0, fraction).as_dict() == {
        "late_min_ms": 2.0,
        "late_min_fraction_of_step": fraction,
        "slow_rank_min_fraction_of_steps": 0.5,
    }
