"""summary.json's verdict (nsysgen/analyze/judge/verdict.py): the sentence for no steps, one rank
and no late rank; the late rank with the job's step had it been on time; ranks late together (a node
named as the node); who waited (the ranks not late, by the time they lost); the other late ranks;
and the counts past the ranks it names."""

from __future__ import annotations

from typing import Any, cast

from nsysgen.analyze.judge.late_ranks import Straggler
from nsysgen.analyze.judge.naming import ranks_text, steps_text
from nsysgen.analyze.judge.stragglers import Lateness, Thresholds
from nsysgen.analyze.judge.verdict import build
from nsysgen.analyze.judge.waiting import StepVerdict


def steps(judged: int, edges: int = 2, what_if: float | None = None) -> list[StepVerdict]:
    return [
        cast(StepVerdict, {"step": s, "judged": s >= edges, "job_step_ms": 50.0,
                           "what_if_step_ms": what_if})
        for s in range(judged + edges)
    ]  # fmt: skip


def straggler(rank: int, late: list[int], ms: float, kind: str = "slow rank") -> Straggler:
    return {"rank": rank, "steps": late, "mean_lateness_ms": ms, "kind": kind,
            "late_on_fraction_of_steps": 0.5, "evidence": ["collectives"]}  # fmt: skip


def lateness(wait: dict[tuple[int, int], float]) -> Any:
    return Lateness(wait, {}, {}, 0, [])


def test_the_sentences_without_a_late_rank() -> None:
    none = lateness({})
    assert build([], [], none, 4, Thresholds())["text"] == (
        "no step ranges ('step N') in the reports: no per-step verdict"
    )
    assert build([], steps(3), none, 1, Thresholds())["text"] == (
        "one rank recorded: who was late needs two ranks or more"
    )
    quiet = build([], steps(6), none, 1024, Thresholds(2.5, 0.1))
    assert quiet["text"] == (
        "no rank late on the 6 judged steps of 1,024 ranks (no rank's share of a step's "
        "critical path beyond the ranks on time above 2.5 ms and 10 % of the step)"
    )
    assert (quiet["late_rank"], quiet["judged_steps"], quiet["waited"]) == (None, 6, [])
    assert (quiet["job_step_ms"], quiet["what_if_step_ms"]) == (50.0, None)


def test_the_late_rank_the_step_without_it_and_who_lost_time_waiting() -> None:
    wait = {
        (0, 3): 5.0, (0, 4): 5.0,  # rank 0: 10 ms lost on rank 2's steps
        (1, 3): 12.0,  # rank 1: 12 ms, the longest
        (4, 6): 30.0,  # rank 4 waited on another step
    }  # fmt: skip
    found = build([straggler(2, [3, 4], 9.25), straggler(5, [6], 4.0, "hiccup")],
                  steps(6, what_if=41.0), lateness(wait), 6, Thresholds())  # fmt: skip
    assert (found["late_rank"], found["kind"], found["steps"], found["by_ms"]) == (
        2, "slow rank", [3, 4], 9.25
    )  # fmt: skip
    assert (found["waited"], found["waited_count"]) == ([1, 0], 2)
    assert (found["late_together"], found["nodes"], found["what_if_step_ms"]) == ([2], [], 41.0)
    assert found["also"] == [{"rank": 5, "kind": "hiccup", "steps": [6], "by_ms": 4.0}]
    assert found["text"] == (
        "rank 2 late on 2 of 6 judged steps (3, 4) by 9.2 ms on average (the job's median step "
        "50.0 ms, 41.0 ms had it been on time); ranks 1 and 0 waited (lost 5.5 ms a step: "
        "exposed wait and compute slowed by waiting); also rank 5 (hiccup) on step 6 by 4.0 ms"
    )


def test_a_node_late_as_a_whole_is_named_as_the_node() -> None:
    late = [straggler(r, [3, 4], 25.0 + r / 100) for r in range(8, 16)]
    nodes = {r: f"node {r // 8}" for r in range(16)}
    wait = {(r, 3): 20.0 for r in range(8)}
    found = build(late, steps(4, what_if=25.0), lateness(wait), 16, Thresholds(), nodes)
    assert found["nodes"] == ["node 1"] and found["late_together_count"] == 8
    assert found["late_rank"] == 8  # the first straggler given (they come latest first)
    assert found["text"].startswith(
        "node 1 (ranks 15, 14, 13, 12, 11, 10 and 2 more) together late on 2 of 4 judged steps "
        "(3, 4) by 25.1 ms on average (the job's median step 50.0 ms, 25.0 ms had they been on "
        "time); ranks 0, 1, 2, 3, 4, 5 and 2 more waited"
    )
    # Half of one node late is a group of ranks, not the node.
    half = build(late[:4], steps(4), lateness(wait), 16, Thresholds(), nodes)
    assert half["nodes"] == [] and half["text"].startswith("ranks 11, 10, 9 and 8 together late")


def test_many_waiters_are_counted_and_only_two_others_named_in_the_sentence() -> None:
    wait = {(r, 3): float(r) for r in range(1, 10)}
    others = [straggler(r, [3, 4], 1.0, "hiccup") for r in (10, 11, 12)]
    found = build([straggler(0, [3], 50.0), *others], steps(4), lateness(wait), 10,
                  Thresholds())  # fmt: skip
    assert found["waited"] == [9, 8, 7, 6, 5, 4] and found["waited_count"] == 9
    assert [a["rank"] for a in found["also"]] == [10, 11, 12]
    assert found["text"].startswith("rank 0 late on 1 of 4 judged steps (3) by 50.0 ms")
    assert found["text"].endswith(
        "ranks 9, 8, 7, 6, 5, 4 and 3 more waited (lost 5.0 ms a step: exposed wait and "
        "compute slowed by waiting); also rank 10 (hiccup) on steps 3, 4 by 1.0 ms; also rank 11 "
        "(hiccup) on steps 3, 4 by 1.0 ms"
    )


def test_two_ranks_that_waited_read_as_a_list() -> None:
    """The verdict words ranks as every other view does (nsysgen/analyze/render/views.py)."""
    assert ranks_text([1, 0]) == "ranks 1 and 0"
    assert ranks_text(list(range(6)), total=2000) == "ranks 0, 1, 2, 3, 4, 5 and 1,994 more"
    assert steps_text(list(range(15))) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 3 more"
