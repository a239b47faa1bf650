"""summary.json's verdict (nsysgen/analyze/verdict.py): the sentence for no steps, one rank and
no late rank; who waited for the late rank (only ranks that waited mostly for it, on its late
steps, longest wait first); the other late ranks; and the counts past the ranks it names."""

from __future__ import annotations

from typing import Any, cast

from nsysgen.analyze.stragglers import Lateness, Straggler, Thresholds
from nsysgen.analyze.verdict import build
from nsysgen.analyze.views import ranks_text, steps_text
from nsysgen.analyze.waiting import StepVerdict


def steps(judged: int, edges: int = 2) -> list[StepVerdict]:
    return [cast(StepVerdict, {"step": s, "judged": s >= edges}) for s in range(judged + edges)]


def straggler(rank: int, late: list[int], ms: float, kind: str = "slow rank") -> Straggler:
    return {"rank": rank, "steps": late, "mean_lateness_ms": ms, "kind": kind,
            "late_on_fraction_of_steps": 0.5, "evidence": ["collectives"]}  # fmt: skip


def lateness(wait: dict[tuple[int, int], float], waited_for: dict[tuple[int, int], int]) -> Any:
    return Lateness(wait, {}, {}, 0, [], waited_for=waited_for)


def test_the_sentences_without_a_late_rank() -> None:
    none = lateness({}, {})
    assert build([], [], none, 4, Thresholds())["text"] == (
        "no step ranges ('step N') in the reports: no per-step verdict"
    )
    assert build([], steps(3), none, 1, Thresholds())["text"] == (
        "one rank recorded: who was late needs two ranks or more"
    )
    quiet = build([], steps(6), none, 1024, Thresholds(2.5, 0.1))
    assert quiet["text"] == (
        "no rank late on the 6 judged steps of 1,024 ranks (none held the others up by more "
        "than 2.5 ms and 10 % of the step)"
    )
    assert (quiet["late_rank"], quiet["judged_steps"], quiet["waited"]) == (None, 6, [])


def test_who_waited_is_who_waited_mostly_for_the_late_rank_on_its_steps() -> None:
    wait = {
        (0, 3): 5.0, (0, 4): 5.0,  # rank 0: 10 ms for rank 2
        (1, 3): 12.0,  # rank 1: 12 ms for rank 2, the longest
        (3, 3): 40.0,  # rank 3 waited mostly for rank 5: not for rank 2
        (4, 6): 30.0,  # rank 4 waited on another step
        (2, 3): 1.0,  # the late rank itself
    }  # fmt: skip
    waited_for = {(3, 3): 5, (0, 3): 2, (1, 3): 2}
    found = build([straggler(2, [3, 4], 9.25), straggler(5, [6], 4.0, "hiccup")], steps(6),
                  lateness(wait, waited_for), 6, Thresholds())  # fmt: skip
    assert (found["late_rank"], found["kind"], found["steps"], found["by_ms"]) == (
        2, "slow rank", [3, 4], 9.25
    )  # fmt: skip
    assert (found["waited"], found["waited_count"]) == ([1, 0], 2)
    assert found["also"] == [{"rank": 5, "kind": "hiccup", "steps": [6], "by_ms": 4.0}]
    assert found["text"] == (
        "rank 2 late on 2 of 6 judged steps (3, 4) by 9.2 ms on average; ranks 1 and 0 waited; "
        "also rank 5 (hiccup) on step 6 by 4.0 ms"
    )


def test_many_waiters_are_counted_and_only_two_others_named_in_the_sentence() -> None:
    wait = {(r, 3): float(r) for r in range(1, 10)}
    others = [straggler(r, [3, 4], 1.0, "hiccup") for r in (10, 11, 12)]
    found = build([straggler(0, [3], 50.0), *others], steps(4), lateness(wait, {}), 10,
                  Thresholds())  # fmt: skip
    assert found["waited"] == [9, 8, 7, 6, 5, 4] and found["waited_count"] == 9
    assert [a["rank"] for a in found["also"]] == [10, 11, 12]
    assert found["text"] == (
        "rank 0 late on 1 of 4 judged steps (3) by 50.0 ms on average; ranks 9, 8, 7, 6, 5, 4 "
        "and 3 more waited; also rank 10 (hiccup) on steps 3, 4 by 1.0 ms; also rank 11 "
        "(hiccup) on steps 3, 4 by 1.0 ms"
    )


def test_two_ranks_that_waited_read_as_a_list() -> None:
    """The verdict words ranks as every other view does (nsysgen/analyze/views.py)."""
    assert ranks_text([1, 0]) == "ranks 1 and 0"
    assert ranks_text(list(range(6)), total=2000) == "ranks 0, 1, 2, 3, 4, 5 and 1,994 more"
    assert steps_text(list(range(15))) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 3 more"
